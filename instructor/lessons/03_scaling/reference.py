"""Reference of lesson 03: why scores are scaled, the softmax's Jacobian, scaled dot-product attention."""
import numpy as np

from .lesson01_context_vectors import _as_float, softmax


def dot_product_variance(d_k, n_samples=100_000, seed=0):
    """Sample variance of ``qᵀk`` for independent standard-normal q, k in ``d_k`` dimensions.

    Uses ``np.random.default_rng(seed)``, drawing q then k, each ``(n_samples, d_k)``;
    the population variance (ddof=0) of the ``n_samples`` dot products.
    """
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_samples, d_k))
    k = rng.standard_normal((n_samples, d_k))
    dots = np.einsum("nd,nd->n", q, k)
    return float(np.var(dots))


def softmax_jacobian(p):
    """Jacobian of softmax at output ``p`` (1-D): ``diag(p) − p pᵀ``."""
    p = _as_float(p)
    if p.ndim != 1:
        raise ValueError(f"softmax_jacobian expects a 1-D probability vector, got shape {p.shape}")
    return np.diag(p) - np.outer(p, p)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """``A = softmax(Q Kᵀ / √d_k)`` (masked before the softmax), ``O = A V``.

    Masked scores become ``-inf`` before the softmax, which gives them weight exactly 0 and a row
    with nothing visible all zeros: lesson 04's ``masked_softmax``, written here so that a lesson's
    reference builds only on earlier lessons'.
    """
    Q, K, V = _as_float(Q), _as_float(K), _as_float(V)
    d_k = K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)   # (..., T_q, T_k)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    A = softmax(scores, axis=-1)                          # (..., T_q, T_k)
    O = A @ V                                             # (..., T_q, d_v)
    return O, A
