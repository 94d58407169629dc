"""Reference of lesson 04: the causal mask, a masked softmax and causal self-attention."""
import numpy as np

from .lesson01_context_vectors import _as_float, softmax
from .lesson02_queries_keys_values import project
from .lesson03_scaling import scaled_dot_product_attention


def causal_mask(T):
    """Boolean (T, T): True on and below the diagonal (position i may read j <= i)."""
    return np.tril(np.ones((T, T), dtype=bool))


def masked_softmax(scores, mask):
    """Softmax over the last axis where only positions with ``mask`` True compete.

    Masked positions get exactly 0; a row with nothing visible is all zeros.
    """
    scores = _as_float(scores)
    mask = np.asarray(mask, dtype=bool)
    mask = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, scores.shape))
    scores = np.broadcast_to(scores, mask.shape)
    return softmax(np.where(mask, scores, -np.inf), axis=-1)


def causal_self_attention(X, W_Q, W_K, W_V):
    """Self-attention where position i reads only positions j <= i."""
    Q, K, V = project(X, W_Q, W_K, W_V)
    T = Q.shape[-2]
    return scaled_dot_product_attention(Q, K, V, mask=causal_mask(T))
