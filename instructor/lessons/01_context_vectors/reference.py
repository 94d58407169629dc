"""Reference of lesson 01: a stable softmax and the identity-projection context vectors.

Every later lesson's reference builds on ``_as_float`` and ``softmax`` from here.
"""
import numpy as np


def _as_float(x):
    """A float64 copy-free view when possible; integers and lists are promoted."""
    return np.asarray(x, dtype=np.float64)


def softmax(x, axis=-1):
    """Stable softmax along ``axis``: subtract the slice max, exponentiate, normalise.

    ``-inf`` entries get weight 0; a slice that is entirely ``-inf`` gets all zeros.
    """
    x = _as_float(x)
    peak = np.max(x, axis=axis, keepdims=True)
    # An all -inf slice has peak -inf; shifting by it would give nan (-inf - -inf).
    peak = np.where(np.isfinite(peak), peak, 0.0)
    e = np.exp(x - peak)
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def contextualize(X):
    """Identity projections: ``A = softmax(X Xᵀ / √d)`` row-wise and ``Y = A X``."""
    X = _as_float(X)                                  # (..., T, d)
    d = X.shape[-1]
    scores = X @ np.swapaxes(X, -1, -2) / np.sqrt(d)  # (..., T, T)
    A = softmax(scores, axis=-1)                      # (..., T, T)
    Y = A @ X                                         # (..., T, d)
    return Y, A
