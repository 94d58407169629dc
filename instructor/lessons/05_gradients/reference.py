"""Reference of lesson 05: backward passes through softmax and attention, and the finite-difference check."""
import numpy as np

from .lesson01_context_vectors import _as_float
from .lesson02_queries_keys_values import project
from .lesson03_scaling import scaled_dot_product_attention


def softmax_backward(dA, A):
    """Gradient with respect to the logits of a row softmax (last axis).

    With ``A = softmax(S)`` and upstream ``dA = ∂L/∂A``, each row obeys
    ``dS = (diag(a) − a aᵀ) dA = a ⊙ (dA − ⟨a, dA⟩)``, computed without the Jacobian.
    Rows that are all zero (fully masked) get zero gradient.
    """
    dA, A = _as_float(dA), _as_float(A)
    inner = np.sum(dA * A, axis=-1, keepdims=True)   # (..., T_q, 1)
    return A * (dA - inner)                           # (..., T_q, T_k)


def attention_backward(dO, Q, K, V, mask=None):
    """Gradients of scaled dot-product attention with respect to Q, K and V.

    Masked positions have weight exactly 0, so ``softmax_backward`` gives their
    scores exactly 0 gradient and nothing flows to the keys they would have read.
    """
    dO, Q, K, V = _as_float(dO), _as_float(Q), _as_float(K), _as_float(V)
    scale = 1.0 / np.sqrt(K.shape[-1])
    _, A = scaled_dot_product_attention(Q, K, V, mask)   # (..., T_q, T_k)
    dV = np.swapaxes(A, -1, -2) @ dO                     # (..., T_k, d_v)
    dA = dO @ np.swapaxes(V, -1, -2)                     # (..., T_q, T_k)
    dS = softmax_backward(dA, A) * scale                 # (..., T_q, T_k), gradient of QKᵀ
    dQ = dS @ K                                          # (..., T_q, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q                     # (..., T_k, d_k)
    # Broadcast inputs (e.g. K shared across a batch) get gradients summed back to their shape.
    return _unbroadcast(dQ, Q.shape), _unbroadcast(dK, K.shape), _unbroadcast(dV, V.shape)


def _unbroadcast(grad, shape):
    """Sum ``grad`` over the axes that broadcasting added or stretched to reach it."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad


def numerical_gradient(f, x, h=1e-5):
    """Central differences ``(f(x + h e_i) − f(x − h e_i)) / 2h`` for every entry of ``x``.

    ``f`` maps an array shaped like ``x`` to a scalar. ``x`` is not modified: each
    probe perturbs a private float64 copy and restores it.
    """
    # A private C-ordered copy, so that reshape(-1) below is a view that writes through
    # (a transposed or Fortran-ordered x would otherwise give a copy and a zero gradient).
    probe = np.array(x, dtype=np.float64, order="C")
    grad = np.zeros_like(probe)
    flat_probe, flat_grad = probe.reshape(-1), grad.reshape(-1)
    for i in range(flat_probe.size):
        original = flat_probe[i]
        flat_probe[i] = original + h
        f_plus = float(f(probe.copy()))
        flat_probe[i] = original - h
        f_minus = float(f(probe.copy()))
        flat_probe[i] = original
        flat_grad[i] = (f_plus - f_minus) / (2 * h)
    return grad


def self_attention_backward(dO, X, W_Q, W_K, W_V, mask=None):
    """Gradients of ``O = attention(X W_Q, X W_K, X W_V, mask)`` with respect to X and the weights.

    Parameter gradients are summed over leading batch dimensions.
    """
    dO, X = _as_float(dO), _as_float(X)
    W_Q, W_K, W_V = _as_float(W_Q), _as_float(W_K), _as_float(W_V)
    Q, K, V = project(X, W_Q, W_K, W_V)                    # (..., T, d_k|d_v)
    dQ, dK, dV = attention_backward(dO, Q, K, V, mask)
    Xt = np.swapaxes(X, -1, -2)                            # (..., d_model, T)
    dW_Q = (Xt @ dQ).reshape(-1, *W_Q.shape).sum(axis=0)   # (d_model, d_k)
    dW_K = (Xt @ dK).reshape(-1, *W_K.shape).sum(axis=0)   # (d_model, d_k)
    dW_V = (Xt @ dV).reshape(-1, *W_V.shape).sum(axis=0)   # (d_model, d_v)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T              # (..., T, d_model)
    return dX, dW_Q, dW_K, dW_V
