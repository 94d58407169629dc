"""Reference of lesson 09: a small GPT, its pieces, sampling and generation with a KV cache.

Shapes for one sequence of T tokens (leading batch axes allowed wherever an x appears):

    x        = wte[ids] + positional_encoding(T, d)                       (T, d)
    block:     h  = layer_norm(x,  ln1_gamma, ln1_beta)                     pre-norm
               a, A = multi_head_attention(h, W_Q, W_K, W_V, W_O, n_heads, mask)
               x1 = x + a                                                  residual around attention
               h2 = layer_norm(x1, ln2_gamma, ln2_beta)
               y  = x1 + relu(h2 W_1 + b_1) W_2 + b_2                       residual around the MLP
    logits   = layer_norm(x_L, ln_f_gamma, ln_f_beta) W_out                 (T, V)

``generate`` runs the same model one new token at a time, keeping every layer's keys and
values (the KV cache) so that a step costs one row of work per layer; its logits equal those
of the full causal pass over the tokens so far.
"""
import numpy as np

from .lesson01_context_vectors import _as_float, softmax
from .lesson04_causal_masking import causal_mask
from .lesson06_multi_head import merge_heads, multi_head_attention, split_heads

BLOCK_KEYS = ("ln1_gamma", "ln1_beta", "W_Q", "W_K", "W_V", "W_O", "ln2_gamma", "ln2_beta",
              "W_1", "b_1", "W_2", "b_2")


def positional_encoding(T, d):
    """Sinusoidal positions, ``(T, d)``: column ``j`` of row ``t`` is ``sin(t ω_j)`` for even ``j`` and
    ``cos(t ω_j)`` for odd ``j``, with ``ω_j = 10000^(−2⌊j/2⌋/d)`` (so an odd ``d`` ends with a sine)."""
    T, d = int(T), int(d)
    t = np.arange(T, dtype=np.float64)[:, None]                 # (T, 1)
    j = np.arange(d)                                             # (d,)
    omega = 10000.0 ** (-2.0 * (j // 2) / d)                     # (d,)
    angles = t * omega                                           # (T, d)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


def layer_norm(x, gamma, beta, eps=1e-5):
    """Normalise each row (last axis) to mean 0 and variance 1 (the biased variance), then
    scale by ``gamma`` and shift by ``beta``: ``γ (x − μ) / √(σ² + eps) + β``."""
    x = _as_float(x)
    mu = x.mean(axis=-1, keepdims=True)                          # (..., 1)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)           # (..., 1)
    return _as_float(gamma) * (x - mu) / np.sqrt(var + eps) + _as_float(beta)


def layer_norm_backward(dy, x, gamma, eps=1e-5):
    """Gradients of ``layer_norm`` with respect to ``x``, ``gamma`` and ``beta``, given ``dy``.

    ``dgamma`` and ``dbeta`` are summed over every leading axis (shape ``(d,)``)."""
    dy, x, gamma = _as_float(dy), _as_float(x), _as_float(gamma)
    mu = x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)   # (..., 1)
    xhat = (x - mu) * rstd                                        # (..., d)
    dxhat = dy * gamma                                            # (..., d)
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    lead = tuple(range(dy.ndim - 1))
    return dx, (dy * xhat).sum(axis=lead), dy.sum(axis=lead)


def _relu(u):
    return np.maximum(u, 0.0)


def transformer_block(x, params, mask=None):
    """One pre-norm block: ``(y, A)`` with ``y`` shaped like ``x`` and the heads' weights
    ``A (..., n_heads, T, T)``."""
    p = params
    x = _as_float(x)
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], int(p["n_heads"]), mask)
    x1 = x + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    y = x1 + _relu(h2 @ _as_float(p["W_1"]) + _as_float(p["b_1"])) @ _as_float(p["W_2"]) + _as_float(p["b_2"])
    return y, A


def model_logits(params, ids):
    """The full causal pass: logits ``(T, V)`` for a sequence of token ids ``(T,)``."""
    ids = np.asarray(ids)
    wte = _as_float(params["wte"])
    T, d = ids.shape[-1], wte.shape[1]
    x = wte[ids] + positional_encoding(T, d)
    mask = causal_mask(T)
    for block in params["blocks"]:
        x, _ = transformer_block(x, block, mask)
    return layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ _as_float(params["W_out"])


def next_token_probabilities(logits, temperature=1.0, top_k=None):
    """The distribution ``sample_next`` draws from: ``softmax(logits / temperature)`` over the
    tokens whose logit is at least the ``top_k``-th largest (every token tied with it is kept)."""
    z = _as_float(logits) / float(temperature)
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.sort(z, axis=-1)[..., -int(top_k)][..., None]
        z = np.where(z >= kth, z, -np.inf)
    return softmax(z, axis=-1)


def sample_next(logits, temperature, top_k, rng):
    """One token id (an int) drawn from ``next_token_probabilities(logits, temperature, top_k)``
    with the numpy Generator ``rng``."""
    p = next_token_probabilities(logits, temperature, top_k)
    return int(rng.choice(p.shape[-1], p=p))


def _block_step(x, p, cache):
    """One new row ``x (d,)`` through a block, reading and extending its ``cache`` (lists of
    per-head keys and values)."""
    n_heads = int(p["n_heads"])
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])                           # (d,)
    q, k, v = (split_heads((h @ _as_float(p[w]))[None, :], n_heads)            # (h, 1, d_h) each
               for w in ("W_Q", "W_K", "W_V"))
    cache["K"] = k if cache["K"] is None else np.concatenate([cache["K"], k], axis=-2)   # (h, t, d_h)
    cache["V"] = v if cache["V"] is None else np.concatenate([cache["V"], v], axis=-2)
    scores = q @ np.swapaxes(cache["K"], -1, -2) / np.sqrt(q.shape[-1])      # (h, 1, t)
    read = softmax(scores, axis=-1) @ cache["V"]                               # (h, 1, d_h)
    x1 = x + (merge_heads(read) @ _as_float(p["W_O"]))[0]                     # (d,)
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + _relu(h2 @ _as_float(p["W_1"]) + _as_float(p["b_1"])) @ _as_float(p["W_2"]) + _as_float(p["b_2"])


def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    """``(tokens, logits)``: the prompt followed by ``n_new`` sampled tokens (an int array) and
    the logits ``(n_new, V)`` each new token was drawn from, one token at a time with a KV cache."""
    rng = np.random.default_rng() if rng is None else rng
    tokens = [int(t) for t in np.asarray(prompt).reshape(-1)]
    wte = _as_float(params["wte"])
    d = wte.shape[1]
    caches = [{"K": None, "V": None} for _ in params["blocks"]]
    logits = []

    def step(token, position):
        x = wte[token] + positional_encoding(position + 1, d)[position]
        for block, cache in zip(params["blocks"], caches):
            x = _block_step(x, block, cache)
        return layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ _as_float(params["W_out"])

    for position, token in enumerate(tokens):          # the prompt fills the cache
        last = step(token, position)
    for i in range(int(n_new)):
        logits.append(last)
        tokens.append(sample_next(last, temperature, top_k, rng))
        if i + 1 < n_new:
            last = step(tokens[-1], len(tokens) - 1)
    V = wte.shape[0]
    return np.array(tokens, dtype=np.int64), (np.array(logits) if logits else np.zeros((0, V)))
