"""Reference of lesson 08: tiled attention with an online softmax, which never builds the T_q × T_k matrix."""
import numpy as np

from .lesson01_context_vectors import _as_float


def tiled_attention(Q, K, V, block_size=64, causal=False):
    """Same output as ``scaled_dot_product_attention`` (O only), one key block at a time.

    Keeps, per query row, a running max ``m``, a running sum ``l`` of ``exp(s − m)`` and
    a running weighted sum ``acc`` of values; when a new block raises the max, the old
    sum and accumulator are rescaled by ``exp(m_old − m_new)``. With ``causal=True``
    (``T_q == T_k``) position i reads keys j <= i, masked per position, not per block.
    """
    Q, K, V = _as_float(Q), _as_float(K), _as_float(V)
    if block_size < 1:
        raise ValueError("block_size must be a positive integer")
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if causal and T_q != T_k:
        raise ValueError("causal tiled attention needs T_q == T_k")
    scale = 1.0 / np.sqrt(K.shape[-1])
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(batch + (T_q, 1), -np.inf)               # running max   (..., T_q, 1)
    l = np.zeros(batch + (T_q, 1))                       # running sum   (..., T_q, 1)
    acc = np.zeros(batch + (T_q, V.shape[-1]))           # running read  (..., T_q, d_v)
    rows = np.arange(T_q)[:, None]                       # (T_q, 1)
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        K_b, V_b = K[..., start:stop, :], V[..., start:stop, :]
        s = Q @ np.swapaxes(K_b, -1, -2) * scale         # (..., T_q, B)
        if causal:
            visible = np.arange(start, stop)[None, :] <= rows   # (T_q, B)
            s = np.where(visible, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))    # (..., T_q, 1)
        # Rows with nothing visible yet keep m = -inf; shift by 0 there to avoid nan.
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        p = np.exp(s - shift)                                    # (..., T_q, B)
        rescale = np.exp(np.where(np.isfinite(m), m, shift) - shift)
        l = l * rescale + p.sum(axis=-1, keepdims=True)
        acc = acc * rescale + p @ V_b
        m = m_new
    return np.divide(acc, l, out=np.zeros_like(acc), where=l > 0)
