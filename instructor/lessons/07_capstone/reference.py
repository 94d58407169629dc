"""Reference of lesson 07 (capstone): a one-layer attention model, its backward pass and Adam.

The model (shapes for a batch of B sequences of T tokens):

    X       = E_name[names] + E_attr[attrs]              (B, T, d_model)
    Q, K, V = X W_Q, X W_K, X W_V                         (B, T, d_k), (B, T, d_k), (B, T, d_v)
    S       = Q Kᵀ / √d_k   (no division if scale=False)   (B, T, T)
    A       = softmax of S over the visible keys          (B, T, T)
              "raw":  S itself, 0 where masked
              "top1": 1 on the visible key with the largest score, 0 elsewhere
    O       = A V                                         (B, T, d_v)
    logits  = O W_out                                     (B, T, n_classes)

The causal mask (``causal=True``) lets position i read positions j <= i. The loss is the
mean cross-entropy over the positions whose target is >= 0. ``top1`` has no gradient
through the choice itself: its scores get exactly zero gradient.

The mistakes learners make live with the hidden tests (``attention_grading.hidden.specs.lesson07_mistakes``).
"""
import numpy as np

from .lesson04_causal_masking import causal_mask, masked_softmax

PARAM_NAMES = ("E_name", "E_attr", "W_Q", "W_K", "W_V", "W_out")
WEIGHTINGS = ("softmax", "raw", "top1")


def _forward(params, batch, causal=True, scale=True, weighting="softmax"):
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, not {weighting!r}")
    p = {k: np.asarray(params[k], dtype=np.float64) for k in PARAM_NAMES}
    names, attrs = np.asarray(batch["names"]), np.asarray(batch["attrs"])
    X = p["E_name"][names] + p["E_attr"][attrs]                    # (B, T, d_model)
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]             # (B, T, d_k|d_v)
    T, d_k = names.shape[-1], K.shape[-1]
    c = 1.0 / np.sqrt(d_k) if scale else 1.0
    S = (Q @ np.swapaxes(K, -1, -2)) * c                           # (B, T, T)
    mask = causal_mask(T) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = masked_softmax(S, mask)
    elif weighting == "raw":
        A = np.where(mask, S, 0.0)
    else:
        best = np.argmax(np.where(mask, S, -np.inf), axis=-1)      # (B, T)
        A = (np.arange(T) == best[..., None]).astype(np.float64)   # (B, T, T) one-hot rows
    O = A @ V                                                      # (B, T, d_v)
    logits = O @ p["W_out"]                                        # (B, T, n_classes)
    cache = dict(p=p, names=names, attrs=attrs, X=X, Q=Q, K=K, V=V, A=A, O=O, c=c, mask=mask)
    return logits, A, cache


def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    """``(logits, A)``: logits ``(B, T, n_classes)`` and attention weights ``(B, T, T)``."""
    logits, A, _ = _forward(params, batch, causal, scale, weighting)
    return logits, A


def cross_entropy(logits, targets):
    """Mean cross-entropy over positions with a target >= 0, and its gradient wrt the logits."""
    targets = np.asarray(targets)
    graded = targets >= 0                                          # (B, T)
    n = max(int(graded.sum()), 1)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))   # (B, T, C)
    safe = np.where(graded, targets, 0)[..., None]                 # (B, T, 1)
    picked = np.take_along_axis(log_p, safe, axis=-1)[..., 0]      # (B, T)
    loss = -np.sum(np.where(graded, picked, 0.0)) / n
    dlogits = np.exp(log_p)                                        # softmax probabilities
    np.put_along_axis(dlogits, safe, np.take_along_axis(dlogits, safe, axis=-1) - 1.0, axis=-1)
    dlogits = np.where(graded[..., None], dlogits, 0.0) / n        # (B, T, C)
    return float(loss), dlogits


def _backward(params, batch, causal=True, scale=True, weighting="softmax"):
    logits, A, cache = _forward(params, batch, causal, scale, weighting)
    p, X, Q, K, V, O = (cache[k] for k in ("p", "X", "Q", "K", "V", "O"))
    loss, dlogits = cross_entropy(logits, batch["targets"])        # (B, T, C)
    d_model, d_v = X.shape[-1], V.shape[-1]
    dW_out = O.reshape(-1, d_v).T @ dlogits.reshape(-1, dlogits.shape[-1])   # (d_v, C)
    dO = dlogits @ p["W_out"].T                                    # (B, T, d_v)
    dV = np.swapaxes(A, -1, -2) @ dO                               # (B, T, d_v)
    dA = dO @ np.swapaxes(V, -1, -2)                               # (B, T, T)
    if weighting == "softmax":
        centre = np.sum(dA * A, axis=-1, keepdims=True)            # (B, T, 1)
        dS = A * (dA - centre)
    elif weighting == "raw":
        dS = np.where(cache["mask"], dA, 0.0)
    else:
        dS = np.zeros_like(dA)                                     # argmax: no gradient
    dS = dS * cache["c"]                                           # gradient of Q Kᵀ
    dQ = dS @ K                                                    # (B, T, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q                               # (B, T, d_k)
    flat = X.reshape(-1, d_model)
    grads = {
        "W_Q": flat.T @ dQ.reshape(-1, dQ.shape[-1]),
        "W_K": flat.T @ dK.reshape(-1, dK.shape[-1]),
        "W_V": flat.T @ dV.reshape(-1, d_v),
        "W_out": dW_out,
    }
    dX = dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T      # (B, T, d_model)
    dE_name, dE_attr = np.zeros_like(p["E_name"]), np.zeros_like(p["E_attr"])
    np.add.at(dE_name, cache["names"].reshape(-1), dX.reshape(-1, d_model))   # repeated ids add up
    np.add.at(dE_attr, cache["attrs"].reshape(-1), dX.reshape(-1, d_model))
    grads["E_name"], grads["E_attr"] = dE_name, dE_attr
    return loss, {k: grads[k] for k in PARAM_NAMES}


def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    """``(loss, grads)``: the mean cross-entropy and a dict of gradients shaped like ``params``."""
    return _backward(params, batch, causal, scale, weighting)


def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam update of one parameter array at step ``t`` (counting from 1).

    Returns ``(p_new, m_new, v_new)``; the inputs are left unchanged.
    """
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    m = beta1 * np.asarray(m, dtype=np.float64) + (1 - beta1) * g
    v = beta2 * np.asarray(v, dtype=np.float64) + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def trained_model(seed=11, steps=300):
    """The reference's own parameters after the grader's training recipe (see ``attention_course.capstone.fit``)."""
    from attention_course import capstone as task

    params = task.fit(model_backward, adam_step, task.init_params(seed),
                      task.make_data(4096, seed + 1), steps, lr=0.01, batch_size=64, seed=seed)
    return tuple(params[k] for k in PARAM_NAMES)
