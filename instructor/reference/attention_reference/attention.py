"""Queries, keys and values; scaled dot-product attention; causal self-attention."""
import numpy as np

from .core import _as_float, softmax, masked_softmax, causal_mask


def project(X, W_Q, W_K, W_V):
    """Row form of the three projections: ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V``."""
    X = _as_float(X)                  # (..., T, d_model)
    Q = X @ _as_float(W_Q)            # (..., T, d_k)
    K = X @ _as_float(W_K)            # (..., T, d_k)
    V = X @ _as_float(W_V)            # (..., T, d_v)
    return Q, K, V


def scaled_dot_product_attention(Q, K, V, mask=None):
    """``A = softmax(Q Kᵀ / √d_k)`` (masked before the softmax), ``O = A V``."""
    Q, K, V = _as_float(Q), _as_float(K), _as_float(V)
    d_k = K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)   # (..., T_q, T_k)
    if mask is None:
        A = softmax(scores, axis=-1)                      # (..., T_q, T_k)
    else:
        A = masked_softmax(scores, mask)                  # (..., T_q, T_k)
    O = A @ V                                             # (..., T_q, d_v)
    return O, A


def self_attention(X, W_Q, W_K, W_V):
    """Project one sequence into Q, K, V and let every position read every position."""
    Q, K, V = project(X, W_Q, W_K, W_V)
    return scaled_dot_product_attention(Q, K, V)


def causal_self_attention(X, W_Q, W_K, W_V):
    """Self-attention where position i reads only positions j <= i."""
    Q, K, V = project(X, W_Q, W_K, W_V)
    T = Q.shape[-2]
    return scaled_dot_product_attention(Q, K, V, mask=causal_mask(T))


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
