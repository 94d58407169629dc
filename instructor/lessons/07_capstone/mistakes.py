"""Lesson 07's known mistakes: the capstone model, its backward pass and Adam, each written once
more with one learner mistake built in (``mistake`` names it), so that the hidden tests can say
which one a wrong answer made. The right versions are the reference's
(``attention_reference.lesson07_capstone``, this folder's ``reference.py``); ``R`` is the
reference package, as the judge passes it.

Every mistake here must change the result on some case: ``tests/test_reference_capstone.py``
checks that against the reference.
"""
import importlib

import numpy as np

PARAM_NAMES = ("E_name", "E_attr", "W_Q", "W_K", "W_V", "W_out")
FORWARD = ("no_scale", "scale_by_d", "scale_by_d_model", "softmax_over_columns", "mask_after_softmax",
           "ignores_mask", "upper_mask", "always_causal", "names_only", "transposed_weights",
           "top1_ignores_mask")
BACKWARD = ("sum_not_mean", "no_scale_backward", "dK_transpose", "dQ_transpose", "dV_transpose",
            "embedding_assign", "softmax_backward_no_centre", "no_embedding_grad")
ADAM = ("ascent", "no_bias_correction", "no_sqrt", "eps_inside_sqrt", "v_of_g", "betas_swapped")


def _check(mistake, known):
    if mistake not in known:
        raise ValueError(f"unknown mistake {mistake!r}; known: {', '.join(known)}")


def _scale(mistake, scale, d_k, d_model):
    if mistake == "no_scale" or not scale:
        return 1.0
    if mistake == "scale_by_d":
        return 1.0 / d_k
    if mistake == "scale_by_d_model":
        return 1.0 / np.sqrt(d_model)
    return 1.0 / np.sqrt(d_k)


def _mask(R, mistake, causal, T):
    everything = np.ones((T, T), dtype=bool)
    if mistake == "ignores_mask":
        return everything
    if mistake == "always_causal":
        return R.causal_mask(T)
    if mistake == "upper_mask" and causal:
        return np.triu(everything)
    return R.causal_mask(T) if causal else everything


def _weights(R, mistake, weighting, S, mask):
    T = S.shape[-1]
    if weighting == "raw":
        return np.where(mask, S, 0.0)
    if weighting == "top1":
        chosen = S if mistake == "top1_ignores_mask" else np.where(mask, S, -np.inf)
        return (np.arange(T) == np.argmax(chosen, axis=-1)[..., None]).astype(np.float64)
    if mistake == "softmax_over_columns":
        return np.swapaxes(R.masked_softmax(np.swapaxes(S, -1, -2), mask.T), -1, -2)
    if mistake == "mask_after_softmax":
        return R.masked_softmax(S, True) * mask
    return R.masked_softmax(S, mask)


def _run_forward(R, mistake, params, batch, causal, scale, weighting):
    p = {k: np.asarray(params[k], dtype=np.float64) for k in PARAM_NAMES}
    names, attrs = np.asarray(batch["names"]), np.asarray(batch["attrs"])
    X = p["E_name"][names]                                          # (B, T, d_model)
    if mistake != "names_only":
        X = X + p["E_attr"][attrs]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]              # (B, T, d_k|d_v)
    c = _scale(mistake, scale, K.shape[-1], X.shape[-1])
    S = (Q @ np.swapaxes(K, -1, -2)) * c                            # (B, T, T)
    mask = _mask(R, mistake, causal, names.shape[-1])
    A = _weights(R, mistake, weighting, S, mask)                    # (B, T, T)
    O = (np.swapaxes(A, -1, -2) if mistake == "transposed_weights" else A) @ V   # (B, T, d_v)
    return O @ p["W_out"], A, dict(p=p, names=names, attrs=attrs, X=X, Q=Q, K=K, V=V, A=A, O=O, c=c,
                                   mask=mask)


def forward(R, mistake, params, batch, causal=True, scale=True, weighting="softmax"):
    """``model_forward`` with ``mistake``: ``(logits, A)``."""
    _check(mistake, FORWARD)
    logits, A, _ = _run_forward(R, mistake, params, batch, causal, scale, weighting)
    return logits, A


def backward(R, mistake, params, batch, causal=True, scale=True, weighting="softmax"):
    """``model_backward`` with ``mistake`` (its forward pass is right): ``(loss, grads)``."""
    _check(mistake, BACKWARD)
    logits, A, cache = _run_forward(R, None, params, batch, causal, scale, weighting)
    p, X, Q, K, V, O = (cache[k] for k in ("p", "X", "Q", "K", "V", "O"))
    capstone = importlib.import_module(R.__name__ + ".lesson07_capstone")
    loss, dlogits = capstone.cross_entropy(logits, batch["targets"])     # (B, T, C)
    if mistake == "sum_not_mean":
        dlogits = dlogits * max(int((np.asarray(batch["targets"]) >= 0).sum()), 1)
    d_model, d_v = X.shape[-1], V.shape[-1]
    dO = dlogits @ p["W_out"].T                                     # (B, T, d_v)
    dV = (A if mistake == "dV_transpose" else np.swapaxes(A, -1, -2)) @ dO
    dA = dO @ np.swapaxes(V, -1, -2)                                # (B, T, T)
    if weighting == "softmax":
        centre = 0.0 if mistake == "softmax_backward_no_centre" else np.sum(dA * A, axis=-1, keepdims=True)
        dS = A * (dA - centre)
    elif weighting == "raw":
        dS = np.where(cache["mask"], dA, 0.0)
    else:
        dS = np.zeros_like(dA)                                      # argmax: no gradient
    if mistake != "no_scale_backward":
        dS = dS * cache["c"]
    dQ = (np.swapaxes(dS, -1, -2) if mistake == "dQ_transpose" else dS) @ K     # (B, T, d_k)
    dK = (dS if mistake == "dK_transpose" else np.swapaxes(dS, -1, -2)) @ Q     # (B, T, d_k)
    flat = X.reshape(-1, d_model)
    grads = {"W_Q": flat.T @ dQ.reshape(-1, dQ.shape[-1]), "W_K": flat.T @ dK.reshape(-1, dK.shape[-1]),
             "W_V": flat.T @ dV.reshape(-1, d_v),
             "W_out": O.reshape(-1, d_v).T @ dlogits.reshape(-1, dlogits.shape[-1])}
    dX = (dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T).reshape(-1, d_model)
    grads["E_name"], grads["E_attr"] = np.zeros_like(p["E_name"]), np.zeros_like(p["E_attr"])
    for table, ids in (("E_name", cache["names"]), ("E_attr", cache["attrs"])):
        if mistake == "embedding_assign":
            grads[table][ids.reshape(-1)] += dX                     # repeated ids keep one row
        elif mistake != "no_embedding_grad":
            np.add.at(grads[table], ids.reshape(-1), dX)
    return loss, {k: grads[k] for k in PARAM_NAMES}


def adam(R, mistake, p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    """``adam_step`` with ``mistake``: ``(p_new, m_new, v_new)``."""
    _check(mistake, ADAM)
    p, g = np.asarray(p, dtype=np.float64), np.asarray(g, dtype=np.float64)
    if mistake == "betas_swapped":
        beta1, beta2 = beta2, beta1
    m = beta1 * np.asarray(m, dtype=np.float64) + (1 - beta1) * g
    v = beta2 * np.asarray(v, dtype=np.float64) + (1 - beta2) * (g if mistake == "v_of_g" else g * g)
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    if mistake == "no_bias_correction":
        m_hat, v_hat = m, v
    if mistake == "no_sqrt":
        return p - lr * m_hat / (v_hat + eps), m, v
    if mistake == "eps_inside_sqrt":
        return p - lr * m_hat / np.sqrt(v_hat + eps), m, v
    step = lr * m_hat / (np.sqrt(v_hat) + eps)
    return (p + step if mistake == "ascent" else p - step), m, v
