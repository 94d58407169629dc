"""Reference of lesson 06: multi-head attention, heads on slices of the width, mixed by W_O."""
import numpy as np

from .lesson01_context_vectors import _as_float
from .lesson03_scaling import scaled_dot_product_attention


def split_heads(X, n_heads):
    """``(..., T, h·d_h)`` → ``(..., h, T, d_h)``; head i takes columns ``i*d_h:(i+1)*d_h``."""
    X = _as_float(X)
    *batch, T, width = X.shape
    if width % n_heads:
        raise ValueError(f"width {width} is not divisible by n_heads={n_heads}")
    d_h = width // n_heads
    H = X.reshape(*batch, T, n_heads, d_h)     # (..., T, h, d_h)
    return np.swapaxes(H, -2, -3).copy()       # (..., h, T, d_h)


def merge_heads(H):
    """Inverse of ``split_heads``: ``(..., h, T, d_h)`` → ``(..., T, h·d_h)``."""
    H = _as_float(H)
    *batch, h, T, d_h = H.shape
    X = np.swapaxes(H, -2, -3)                 # (..., T, h, d_h)
    return X.reshape(*batch, T, h * d_h)       # (..., T, h·d_h)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    """Project, split into heads, attend per head with scale 1/√d_h, merge, mix with W_O.

    ``mask`` (``(..., T, T)`` or anything broadcastable to it) is shared by every head.
    Returns ``O (..., T, d_model)`` and the per-head weights ``A (..., h, T, T)``.
    """
    X = _as_float(X)                                   # (..., T, d_model)
    Q = split_heads(X @ _as_float(W_Q), n_heads)       # (..., h, T, d_h)
    K = split_heads(X @ _as_float(W_K), n_heads)       # (..., h, T, d_h)
    V = split_heads(X @ _as_float(W_V), n_heads)       # (..., h, T, d_hv)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim >= 2:
            # Insert the head axis before (T, T); a (T,) key mask already broadcasts over heads.
            mask = np.expand_dims(mask, axis=-3)                       # (..., 1, T, T)
    heads, A = scaled_dot_product_attention(Q, K, V, mask)             # (..., h, T, d_hv), (..., h, T, T)
    O = merge_heads(heads) @ _as_float(W_O)                            # (..., T, d_model)
    return O, A
