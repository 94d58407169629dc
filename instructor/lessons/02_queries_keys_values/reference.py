"""Reference of lesson 02: queries, keys and values, and self-attention over one sequence."""
import numpy as np

from .lesson01_context_vectors import _as_float, softmax


def project(X, W_Q, W_K, W_V):
    """Row form of the three projections: ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V``."""
    X = _as_float(X)                  # (..., T, d_model)
    Q = X @ _as_float(W_Q)            # (..., T, d_k)
    K = X @ _as_float(W_K)            # (..., T, d_k)
    V = X @ _as_float(W_V)            # (..., T, d_v)
    return Q, K, V


def self_attention(X, W_Q, W_K, W_V):
    """Project one sequence into Q, K, V and let every position read every position:
    ``A = softmax(Q Kᵀ / √d_k)``, ``O = A V`` (the same operations, in the same order, as lesson
    03's ``scaled_dot_product_attention`` without a mask, written here so that a lesson's
    reference builds only on earlier lessons')."""
    Q, K, V = project(X, W_Q, W_K, W_V)
    d_k = K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)   # (..., T, T)
    A = softmax(scores, axis=-1)                          # (..., T, T)
    O = A @ V                                             # (..., T, d_v)
    return O, A
