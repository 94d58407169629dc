"""Learner answers for lesson 09 (positional_encoding, layer_norm, layer_norm_backward,
transformer_block, sample_next, generate).

Entries may use ``np`` and what the notebook defines before them: the earlier lessons' functions
pasted in section 4 (``numerical_gradient``, ``split_heads``, ``merge_heads``,
``multi_head_attention``) and this lesson's earlier exercises.

``REQUIREMENTS`` lists the requirements each exercise states, with the hidden case that tests
each one and an entry that breaks it (tests/test_requirements.py).
"""


def _cached_generate(embed_pe=True, pe_after=False, temperature="temperature", next_position="len(tokens) - 1",
                     scale="np.sqrt(q.shape[-1])"):
    """A generate with a KV cache, one token at a time, with one step done as a learner might."""
    return f'''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    rng = np.random.default_rng() if rng is None else rng
    wte = params["wte"]
    d = wte.shape[1]
    caches = [([], []) for _ in params["blocks"]]
    def step(token, position):
        x = wte[token]{" + positional_encoding(position + 1, d)[position]" if embed_pe else ""}
        for block, (Ks, Vs) in zip(params["blocks"], caches):
            n = block["n_heads"]
            h = layer_norm(x, block["ln1_gamma"], block["ln1_beta"])
            q, k, v = (split_heads((h @ block[w])[None], n) for w in ("W_Q", "W_K", "W_V"))
            Ks.append(k)
            Vs.append(v)
            K, V = np.concatenate(Ks, axis=-2), np.concatenate(Vs, axis=-2)
            s = q @ np.swapaxes(K, -1, -2) / {scale}
            w = np.exp(s - s.max(axis=-1, keepdims=True))
            x = x + merge_heads((w / w.sum(axis=-1, keepdims=True)) @ V)[0] @ block["W_O"]
            h2 = layer_norm(x, block["ln2_gamma"], block["ln2_beta"])
            x = x + np.maximum(h2 @ block["W_1"] + block["b_1"], 0.0) @ block["W_2"] + block["b_2"]
        {"x = x + positional_encoding(position + 1, d)[position]" if pe_after else "pass"}
        return layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"]
    tokens = [int(t) for t in prompt]
    for position, token in enumerate(tokens):
        last = step(token, position)
    rows = []
    for i in range(n_new):
        rows.append(last)
        tokens.append(sample_next(last, {temperature}, top_k, rng))
        last = step(tokens[-1], {next_position})
    return np.array(tokens), np.array(rows).reshape(n_new, wte.shape[0])
'''


WRONG = {
    "positional_encoding": {
        "sin_cos_swapped": '''
def positional_encoding(T, d):
    t = np.arange(T, dtype=float)[:, None]
    j = np.arange(d)
    angles = t * 10000.0 ** (-2.0 * (j // 2) / d)
    return np.where(j % 2 == 0, np.cos(angles), np.sin(angles))
''',
        "frequency_per_column": '''
def positional_encoding(T, d):
    t = np.arange(T, dtype=float)[:, None]
    j = np.arange(d)
    angles = t / 10000.0 ** (j / d)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
''',
        "sines_then_cosines": '''
def positional_encoding(T, d):
    half = (d + 1) // 2
    t = np.arange(T, dtype=float)[:, None]
    i = np.arange(half)
    angles = t * 10000.0 ** (-2.0 * i / d)
    return np.concatenate([np.sin(angles), np.cos(angles)[:, : d - half]], axis=1)
''',
        "positions_from_one": '''
def positional_encoding(T, d):
    t = np.arange(1, T + 1, dtype=float)[:, None]
    j = np.arange(d)
    angles = t * 10000.0 ** (-2.0 * (j // 2) / d)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
''',
        "pairs_lose_the_odd_column": '''
def positional_encoding(T, d):
    t = np.arange(T, dtype=float)[:, None]
    omega = 10000.0 ** (-2.0 * np.arange(d // 2) / d)
    pairs = np.stack([np.sin(t * omega), np.cos(t * omega)], axis=-1)
    return pairs.reshape(T, 2 * (d // 2))
''',
        "exponent_without_minus": '''
def positional_encoding(T, d):
    t = np.arange(T, dtype=float)[:, None]
    j = np.arange(d)
    angles = t * 10000.0 ** (2.0 * (j // 2) / d)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
''',
    },
    "layer_norm": {
        "normalises_columns": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=0, keepdims=True)
    var = x.var(axis=0, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
''',
        "eps_outside_sqrt": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mu) / (np.sqrt(var) + eps) + beta
''',
        "no_eps": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / x.std(axis=-1, keepdims=True) + beta
''',
        "unbiased_variance": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True, ddof=1)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
''',
        "variance_from_mean_of_squares": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = (x ** 2).mean(axis=-1, keepdims=True) - mu ** 2
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
''',
        "gamma_beta_swapped": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return beta * (x - mu) / np.sqrt(var + eps) + gamma
''',
        "ignores_eps_argument": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + 1e-5) + beta
''',
        # Statistics over axis 1: right for a matrix, wrong for a batch, an error for one row.
        "axis_one_not_last": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
''',
        # Rows of a matrix always: one vector x of shape (d,) comes back as a (1, d) matrix.
        "one_row_made_a_matrix": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.atleast_2d(np.asarray(x, dtype=float))
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta
''',
        # Written for a matrix of rows (one vector made a row first): with one batch axis more, the
        # statistics run down the tokens of each sequence.
        "written_for_rows_of_a_matrix": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=float)
    rows = np.atleast_2d(x)
    mu = rows.mean(axis=1, keepdims=True)
    var = ((rows - mu) ** 2).mean(axis=1, keepdims=True)
    return (gamma * (rows - mu) / np.sqrt(var + eps) + beta).reshape(x.shape)
''',
    },
    "layer_norm_backward": {
        "no_path_through_variance": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mu) / s
    dx_hat = dy * gamma
    dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True)) / s
    rows = tuple(range(dy.ndim - 1))
    return dx, (dy * x_hat).sum(axis=rows), dy.sum(axis=rows)
''',
        "no_path_through_mean": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mu) / s
    dx_hat = dy * gamma
    dx = (dx_hat - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) / s
    rows = tuple(range(dy.ndim - 1))
    return dx, (dy * x_hat).sum(axis=rows), dy.sum(axis=rows)
''',
        "statistics_as_constants": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    rows = tuple(range(dy.ndim - 1))
    return dy * gamma / s, (dy * (x - mu) / s).sum(axis=rows), dy.sum(axis=rows)
''',
        "gamma_not_summed_over_rows": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mu) / s
    dx_hat = dy * gamma
    dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True) - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) / s
    return dx, dy * x_hat, dy
''',
        "forgets_gamma_in_dx": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mu) / s
    dx = (dy - dy.mean(axis=-1, keepdims=True) - x_hat * (dy * x_hat).mean(axis=-1, keepdims=True)) / s
    rows = tuple(range(dy.ndim - 1))
    return dx, (dy * x_hat).sum(axis=rows), dy.sum(axis=rows)
''',
        "dgamma_times_raw_x": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mu) / s
    dx_hat = dy * gamma
    dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True) - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) / s
    rows = tuple(range(dy.ndim - 1))
    return dx, (dy * x).sum(axis=rows), dy.sum(axis=rows)
''',
        "eps_fixed_at_default": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    x_hat = (x - mu) / s
    dx_hat = dy * gamma
    dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True) - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) / s
    rows = tuple(range(dy.ndim - 1))
    return dx, (dy * x_hat).sum(axis=rows), dy.sum(axis=rows)
''',
        # Written for a (T, d) matrix: dgamma and dbeta summed over the first axis only, right for one
        # batch axis, not for one row or for two batch axes.
        "sums_over_the_first_axis_only": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x = np.asarray(dy, dtype=float), np.asarray(x, dtype=float)
    mu = x.mean(axis=-1, keepdims=True)
    s = np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    x_hat = (x - mu) / s
    dx_hat = dy * gamma
    dx = (dx_hat - dx_hat.mean(axis=-1, keepdims=True) - x_hat * (dx_hat * x_hat).mean(axis=-1, keepdims=True)) / s
    return dx, (dy * x_hat).sum(axis=0), dy.sum(axis=0)
''',
    },
    "transformer_block": {
        "post_norm": '''
def transformer_block(x, params, mask):
    p = params
    a, A = multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = layer_norm(x + a, p["ln1_gamma"], p["ln1_beta"])
    m = np.maximum(x1 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"]
    return layer_norm(x1 + m, p["ln2_gamma"], p["ln2_beta"]), A
''',
        "residual_from_normalised_input": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = h + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        "no_residual_around_mlp": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = x + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        "no_residual_around_attention": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    x1, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        "no_relu": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = x + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + (h2 @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"], A
''',
        "relu_after_second_layer": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = x + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + np.maximum((h2 @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"], 0.0), A
''',
        "second_norm_reuses_first_parameters": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = x + a
    h2 = layer_norm(x1, p["ln1_gamma"], p["ln1_beta"])
    return x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        "mlp_reads_unnormalised_stream": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = x + a
    return x1 + np.maximum(x1 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        # Right values, but layer norm written inline: the exercise asks for its own layer_norm.
        "layer_norm_inlined": '''
def transformer_block(x, params, mask):
    p = params
    def norm(v, gamma, beta):
        mu = v.mean(axis=-1, keepdims=True)
        return gamma * (v - mu) / np.sqrt(((v - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5) + beta
    x = np.asarray(x, dtype=float)
    a, A = multi_head_attention(norm(x, p["ln1_gamma"], p["ln1_beta"]), p["W_Q"], p["W_K"], p["W_V"], p["W_O"],
                                p["n_heads"], mask)
    x1 = x + a
    h2 = norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        "mask_not_passed": '''
def transformer_block(x, params, mask):
    p = params
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"])
    x1 = x + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    return x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], A
''',
        # Written for one sequence, with a loop for a batch of them: one batch axis works, two do not.
        "loops_over_one_batch_axis": '''
def transformer_block(x, params, mask):
    p = params
    x = np.asarray(x, dtype=float)
    if x.ndim == 3:
        pairs = [transformer_block(seq, p, mask if mask is None or np.ndim(mask) == 2 else mask[b])
                 for b, seq in enumerate(x)]
        return np.stack([y for y, _ in pairs]), np.stack([A for _, A in pairs])
    T, d = x.shape
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = x + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    y = x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"]
    return y.reshape(T, d), A
''',
    },
    "sample_next": {
        "temperature_after_softmax": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float)
    if top_k is not None and top_k < z.size:
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z - z.max())
    p = p / p.sum() / temperature
    return int(rng.choice(z.size, p=p / p.sum()))
''',
        "top_k_keeps_exactly_k": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None and top_k < z.size:
        keep = np.argsort(z)[-top_k:]
        z = np.where(np.isin(np.arange(z.size), keep), z, -np.inf)
    p = np.exp(z - z.max())
    return int(rng.choice(z.size, p=p / p.sum()))
''',
        "global_random_state": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None and top_k < z.size:
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z - z.max())
    return int(np.random.choice(z.size, p=p / p.sum()))
''',
        "temperature_multiplies": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) * temperature
    if top_k is not None and top_k < z.size:
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z - z.max())
    return int(rng.choice(z.size, p=p / p.sum()))
''',
        "softmax_without_max": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None and top_k < z.size:
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z)
    return int(rng.choice(z.size, p=p / p.sum()))
''',
        "returns_an_array": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None and top_k < z.size:
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z - z.max())
    return rng.choice(z.size, size=1, p=p / p.sum())
''',
        "top_k_off_by_one": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None and top_k < z.size:
        order = np.argsort(z)
        z = np.where(np.isin(np.arange(z.size), order[-(top_k + 1):]), z, -np.inf)
    p = np.exp(z - z.max())
    return int(rng.choice(z.size, p=p / p.sum()))
''',
    },
    "generate": {
        # The new token's position is counted after it was appended: one too far.
        "position_off_by_one": _cached_generate(next_position="len(tokens)"),
        # The prompt goes through the blocks in one pass, but without the causal mask.
        "prompt_without_causal_mask": '''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    rng = np.random.default_rng() if rng is None else rng
    wte = params["wte"]
    d = wte.shape[1]
    prompt = np.asarray(prompt)
    P = len(prompt)
    caches = []
    x = wte[prompt] + positional_encoding(P, d)
    for block in params["blocks"]:
        n = block["n_heads"]
        h = layer_norm(x, block["ln1_gamma"], block["ln1_beta"])
        Q, K, V = (split_heads(h @ block[w], n) for w in ("W_Q", "W_K", "W_V"))
        caches.append([K, V])
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        x = x + merge_heads((w / w.sum(axis=-1, keepdims=True)) @ V) @ block["W_O"]
        h2 = layer_norm(x, block["ln2_gamma"], block["ln2_beta"])
        x = x + np.maximum(h2 @ block["W_1"] + block["b_1"], 0.0) @ block["W_2"] + block["b_2"]
    last = (layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"])[-1]
    tokens, rows = [int(t) for t in prompt], []
    for i in range(n_new):
        rows.append(last)
        tokens.append(sample_next(last, temperature, top_k, rng))
        x = wte[tokens[-1]] + positional_encoding(len(tokens), d)[-1]
        for block, cache in zip(params["blocks"], caches):
            n = block["n_heads"]
            h = layer_norm(x, block["ln1_gamma"], block["ln1_beta"])
            q, k, v = (split_heads((h @ block[w])[None], n) for w in ("W_Q", "W_K", "W_V"))
            cache[0] = np.concatenate([cache[0], k], axis=-2)
            cache[1] = np.concatenate([cache[1], v], axis=-2)
            s = q @ np.swapaxes(cache[0], -1, -2) / np.sqrt(q.shape[-1])
            w = np.exp(s - s.max(axis=-1, keepdims=True))
            x = x + merge_heads((w / w.sum(axis=-1, keepdims=True)) @ cache[1])[0] @ block["W_O"]
            h2 = layer_norm(x, block["ln2_gamma"], block["ln2_beta"])
            x = x + np.maximum(h2 @ block["W_1"] + block["b_1"], 0.0) @ block["W_2"] + block["b_2"]
        last = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"]
    return np.array(tokens), np.array(rows).reshape(n_new, wte.shape[0])
''',
        "positions_added_after_the_blocks": _cached_generate(embed_pe=False, pe_after=True),
        # Right logits, but the whole sequence is rerun at every step: no cache at all.
        "reruns_everything_each_step": '''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    rng = np.random.default_rng() if rng is None else rng
    wte = params["wte"]
    d = wte.shape[1]
    tokens, rows = [int(t) for t in prompt], []
    for i in range(n_new):
        T = len(tokens)
        x = wte[np.array(tokens)] + positional_encoding(T, d)
        for block in params["blocks"]:
            x, _ = transformer_block(x, block, np.tril(np.ones((T, T), dtype=bool)))
        rows.append((layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"])[-1])
        tokens.append(sample_next(rows[-1], temperature, top_k, rng))
    return np.array(tokens), np.array(rows).reshape(n_new, wte.shape[0])
''',
        # No cache and no (T, T) array either: every step pushes every token through the blocks again,
        # one query at a time, each reading the keys and values of its prefix, recomputed.
        "recomputes_every_token_without_cache": '''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    rng = np.random.default_rng() if rng is None else rng
    wte = params["wte"]
    d = wte.shape[1]
    tokens, rows = [int(t) for t in prompt], []
    for _ in range(n_new):
        pe = positional_encoding(len(tokens), d)
        xs = [wte[token] + pe[t] for t, token in enumerate(tokens)]
        for block in params["blocks"]:
            n = block["n_heads"]
            hs = [layer_norm(x, block["ln1_gamma"], block["ln1_beta"]) for x in xs]
            keys = [split_heads((h @ block["W_K"])[None], n) for h in hs]
            values = [split_heads((h @ block["W_V"])[None], n) for h in hs]
            new_xs = []
            for t, (x, h) in enumerate(zip(xs, hs)):
                q = split_heads((h @ block["W_Q"])[None], n)
                K, V = np.concatenate(keys[:t + 1], axis=-2), np.concatenate(values[:t + 1], axis=-2)
                s = q @ np.swapaxes(K, -1, -2) / np.sqrt(q.shape[-1])
                w = np.exp(s - s.max(axis=-1, keepdims=True))
                x = x + merge_heads((w / w.sum(axis=-1, keepdims=True)) @ V)[0] @ block["W_O"]
                h2 = layer_norm(x, block["ln2_gamma"], block["ln2_beta"])
                new_xs.append(x + np.maximum(h2 @ block["W_1"] + block["b_1"], 0.0) @ block["W_2"] + block["b_2"])
            xs = new_xs
        rows.append(layer_norm(xs[-1], params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"])
        tokens.append(sample_next(rows[-1], temperature, top_k, rng))
    return np.array(tokens), np.array(rows).reshape(n_new, wte.shape[0])
''',
        # The temperature given is not passed on to sample_next.
        "temperature_not_passed_on": _cached_generate(temperature="1.0"),
        # The head width taken as d // n_heads, which holds only when W_Q has d columns.
        "head_width_from_d_model": _cached_generate(scale="np.sqrt(d // n)"),
    },
}

# rng handed on as it came: None when the caller gave none.
WRONG["generate"]["rng_none_handed_on"] = _cached_generate().replace(
    "    rng = np.random.default_rng() if rng is None else rng\n", "", 1)
# The tokens returned as the Python list they were collected in.
WRONG["generate"]["tokens_returned_as_a_list"] = _cached_generate().replace(
    "return np.array(tokens), np.array(rows)", "return tokens, np.array(rows)")
# A cache, but the layer norms written out inline instead of calling layer_norm.
WRONG["generate"]["layer_norm_inlined_in_generate"] = _cached_generate().replace(
    "def generate(", """def _normalise(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps) + beta


def generate(""", 1).replace("h = layer_norm(", "h = _normalise(").replace("h2 = layer_norm(", "h2 = _normalise(")


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "positional_encoding": {
        "sin_cos_swapped": ("sine and cosine are swapped",),
        "frequency_per_column": ("j / d instead of 2⌊j/2⌋ / d",),
        "sines_then_cosines": ("first half",),
        "positions_from_one": ("positions start at 1",),
        "pairs_lose_the_odd_column": ("odd width",),
        "exponent_without_minus": ("minus sign",),
    },
    "layer_norm": {
        "normalises_columns": ("down the columns",),
        "eps_outside_sqrt": ("outside the square root",),
        "no_eps": ("eps is left out",),
        "unbiased_variance": ("d − 1",),
        "variance_from_mean_of_squares": ("mean(x²) − mean(x)²",),
        "gamma_beta_swapped": ("swapped",),
        "ignores_eps_argument": ("eps passed in is not used",),
        "axis_one_not_last": ("so any leading axes work",),
        "one_row_made_a_matrix": ("one row x of shape (4,) has shape (1, 4)",),
        "written_for_rows_of_a_matrix": ("so any leading axes work",),
    },
    "layer_norm_backward": {
        "no_path_through_variance": ("path through the variance",),
        "no_path_through_mean": ("path through the mean",),
        "statistics_as_constants": ("as constants",),
        "gamma_not_summed_over_rows": ("summed over the batch",),
        "forgets_gamma_in_dx": ("dx̂ = γ ⊙ dy",),
        "dgamma_times_raw_x": ("by x instead",),
        "eps_fixed_at_default": ("use the eps you are given",),
        "sums_over_the_first_axis_only": ("summed over the batch",),
    },
    "transformer_block": {
        "post_norm": ("post-norm",),
        "residual_from_normalised_input": ("adds the normalised h",),
        "no_residual_around_mlp": ("no residual around the mlp",),
        "no_residual_around_attention": ("no residual around attention",),
        "no_relu": ("no relu",),
        "relu_after_second_layer": ("after the mlp's second layer",),
        "second_norm_reuses_first_parameters": ("ln1_gamma",),
        "mlp_reads_unnormalised_stream": ("reads x1",),
        "mask_not_passed": ("mask on to multi_head_attention",),
        "layer_norm_inlined": ("should call your layer_norm",),
        "loops_over_one_batch_axis": ("with two batch dimensions", "*batch, t, d = x.shape"),
    },
    "sample_next": {
        "temperature_after_softmax": ("after the softmax",),
        "top_k_keeps_exactly_k": ("exactly k",),
        "global_random_state": ("the rng you are given",),
        "temperature_multiplies": ("multiplies the logits",),
        "softmax_without_max": ("nan",),
        "returns_an_array": ("an int",),
        "top_k_off_by_one": ("k + 1",),
    },
    "generate": {
        "position_off_by_one": ("off by one",),
        "prompt_without_causal_mask": ("without the causal mask",),
        "positions_added_after_the_blocks": ("after the blocks",),
        "reruns_everything_each_step": ("reruns the tokens already processed",),
        "temperature_not_passed_on": ("another temperature",),
        "head_width_from_d_model": ("√(d / n_heads)",),
        "recomputes_every_token_without_cache": ("reruns the tokens already processed",),
        "layer_norm_inlined_in_generate": ("use your layer_norm for every layer norm",),
        "rng_none_handed_on": ("handed none on to sample_next",),
        "tokens_returned_as_a_list": ("tokens should be an integer array",),
    },
}

_PE_EVEN, _PE_ODD = "an even width d (4 to 8) and T from 4 to 8", "an odd width d (5 to 11)"
_LN_FIRST = "x of shape (5, d)"
_LNB_FIRST = "x and dy of shape (5, d)"
_BLOCK_FIRST = "x of shape (6, d), 2 heads of width 3, d_hidden = 10, a causal mask"
_GEN_FIRST = "2 layers, 2 heads, d = 8: a prompt of 4 tokens, 6 new tokens, temperature 1"

REQUIREMENTS = {
    "positional_encoding": [
        ("for positions $t = 0, \\dots, T-1$", _PE_EVEN, "positions_from_one"),
        ("$\\omega = 10000^{-2\\lfloor j/2 \\rfloor / d}$", _PE_EVEN, "exponent_without_minus"),
        ("a sine when $j$ is even and a\ncosine when $j$ is odd", _PE_EVEN, "sin_cos_swapped"),
        ("so a sine and the cosine beside it share one frequency", _PE_EVEN, "frequency_per_column"),
        ("An odd $d$ ends\nwith a lone sine column", _PE_ODD, "pairs_lose_the_odd_column"),
    ],
    "layer_norm": [
        ("$\\mu$ and $\\sigma^2$ are taken over the last axis", _LN_FIRST, "normalises_columns"),
        ("it goes **inside** the square root", _LN_FIRST, "eps_outside_sqrt"),
        ("keeps a\nconstant row from dividing 0 by 0", _LN_FIRST, "no_eps"),
        ("The variance divides\nby $d$ (not $d - 1$)", _LN_FIRST, "unbiased_variance"),
        ("it is computed from the deviations $x_j - \\mu$", "rows of x (3, d) with a common offset of 1e6 and spread 1 "
         "(subtract the mean before squaring)", "variance_from_mean_of_squares"),
        ("`layer_norm(x, gamma, beta, eps=1e-5)`", "x of shape (4, d) with eps = 0.1 (the place of eps matters)",
         "ignores_eps_argument"),
        ("`x` has shape `(..., d)` (any number of leading axes)", "one row x of shape (d,)", "axis_one_not_last"),
        ("`x` has shape `(..., d)` (any number of leading axes)", "one row x of shape (d,)", "one_row_made_a_matrix"),
        ("`x` has shape `(..., d)` (any number of leading axes)", "a batch x of shape (2, 3, d)",
         "written_for_rows_of_a_matrix"),
    ],
    "layer_norm_backward": [
        ("summed over every leading axis", _LNB_FIRST, "gamma_not_summed_over_rows"),
        ("start from $d\\hat x = \\gamma \\odot dy$", _LNB_FIRST, "forgets_gamma_in_dx"),
        ("d\\gamma = \\sum_{\\text{rows}} dy \\odot \\hat x", _LNB_FIRST, "dgamma_times_raw_x"),
        ("through the mean $\\mu$ (every entry of the row moves it) and through $s$", _LNB_FIRST,
         "statistics_as_constants"),
        ("`layer_norm_backward(dy, x, gamma, eps=1e-5)`", "x of shape (4, d) with eps = 0.5", "eps_fixed_at_default"),
        ("`dgamma` and `dbeta` of shape `(d,)`,\nsummed over every leading axis", "one row of d entries",
         "sums_over_the_first_axis_only"),
    ],
    "transformer_block": [
        ("The layer norms sit **before** each sub-layer", _BLOCK_FIRST, "post_norm"),
        ("The sums $x + \\dots$ are the **residual connections**", _BLOCK_FIRST, "no_residual_around_attention"),
        ("two layers with a ReLU between them", _BLOCK_FIRST, "no_relu"),
        ("a sub-layer reads a normalised copy of the stream", _BLOCK_FIRST, "mlp_reads_unnormalised_stream"),
        ("`mask` a boolean mask for the attention", _BLOCK_FIRST, "mask_not_passed"),
        ("Call your `layer_norm` for both layer norms", _BLOCK_FIRST, "layer_norm_inlined"),
        ("`x` is `(..., T, d)` (any number of leading batch axes, or none)", "two batch dimensions, x of shape "
         "(2, 3, 4, d), 2 heads of width 3, one causal (4, 4) mask for all", "loops_over_one_batch_axis"),
    ],
    "sample_next": [
        ("Divide the logits by the temperature", "temperature 0.5 (sharper)", "temperature_multiplies"),
        ("It divides the *logits*", "temperature 0.5 (sharper)", "temperature_after_softmax"),
        ("keep only the $k$ characters with the largest logits", "top_k = 2, temperature 1.5", "top_k_off_by_one"),
        ("cut to the\ntop $k$ (ties kept)",
         "logits whose 3rd and 4th largest tie, top_k = 3 (every token tied with the 3rd is kept)",
         "top_k_keeps_exactly_k"),
        ("draw **one** index with\nthe generator you are given", "temperature 1, no top-k", "global_random_state"),
        ("Return it as a Python `int`", "temperature 1, no top-k", "returns_an_array"),
        ("Logits of size $10^4$ must work",
         "logits of size ±1e4, temperature 1.5 (exp of them overflows unless the max is subtracted)",
         "softmax_without_max"),
    ],
    "generate": [
        ("never rerun the tokens already processed", _GEN_FIRST, "recomputes_every_token_without_cache"),
        ("Use your `layer_norm` for every layer norm", _GEN_FIRST, "layer_norm_inlined_in_generate"),
        ("make `rng = np.random.default_rng()` when it is `None`", "2 layers: a prompt of 3 tokens, 4 new tokens, "
         "top_k = 1 and rng = None (greedy: generate makes its own generator)", "rng_none_handed_on"),
        ("`tokens` the prompt followed by `n_new` new token ids (an integer\narray)", _GEN_FIRST,
         "tokens_returned_as_a_list"),
        ("Positions count from 0 at the first prompt\ntoken", _GEN_FIRST, "position_off_by_one"),
        ("The prompt is fed in the same way, one\ntoken at a time, to fill the caches", _GEN_FIRST,
         "prompt_without_causal_mask"),
        ("the\ntoken at position $t$ adds `positional_encoding(...)[t]`", _GEN_FIRST, "positions_added_after_the_blocks"),
        ("Draw each new token with **one** call of your `sample_next(logits, temperature, top_k,\nrng)`",
         "3 layers, 3 heads, d = 6: a prompt of 5 tokens, 5 new tokens, temperature 0.7, top_k = 3",
         "temperature_not_passed_on"),
        ("the heads' total width is `W_Q.shape[1]`, which need not be $d$",
         "1 layer, 1 head of width 5 (not d = 7): a prompt of 3 tokens, 7 new tokens, temperature 1.8",
         "head_width_from_d_model"),
    ],
}

CORRECT = {
    "positional_encoding": {
        "loop_over_entries": '''
def positional_encoding(T, d):
    import math
    out = np.zeros((T, d))
    for t in range(T):
        for j in range(d):
            angle = t / 10000 ** (2 * (j // 2) / d)
            out[t, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return out
''',
        "interleaved_pairs_chatty": '''
def positional_encoding(T, d):
    import sys, warnings
    print(f"encoding {T} positions in {d} columns", file=sys.stderr)
    warnings.warn("this answer is chatty")
    pairs = (d + 1) // 2
    t = np.arange(T)[:, None].astype(np.float64)
    omega = np.power(10000.0, -2.0 * np.arange(pairs) / d)
    out = np.empty((T, 2 * pairs))
    out[:, 0::2] = np.sin(t * omega)
    out[:, 1::2] = np.cos(t * omega)
    return out[:, :d]
''',
    },
    "layer_norm": {
        "std_with_eps_einsum": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.array(x, dtype=np.float64)
    centred = x - np.einsum("...d->...", x)[..., None] / x.shape[-1]
    var = np.einsum("...d,...d->...", centred, centred)[..., None] / x.shape[-1]
    return np.asarray(gamma, float) * centred / np.sqrt(var + eps) + np.asarray(beta, float)
''',
        "row_loop_noisy": '''
def layer_norm(x, gamma, beta, eps=1e-5):
    import warnings
    warnings.warn("looping over rows")
    x = np.asarray(x, dtype=float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for i, row in enumerate(flat):
        mu = row.mean()
        out[i] = (row - mu) / np.sqrt(np.mean((row - mu) ** 2) + eps)
    return out.reshape(x.shape) * gamma + beta
''',
    },
    "layer_norm_backward": {
        "staged_through_mean_and_variance": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    dy, x, gamma = (np.asarray(a, dtype=float) for a in (dy, x, gamma))
    d = x.shape[-1]
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc ** 2).mean(axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    dxhat = dy * gamma
    dvar = np.sum(dxhat * xc, axis=-1, keepdims=True) * -0.5 * inv ** 3
    dmu = np.sum(-dxhat * inv, axis=-1, keepdims=True) + dvar * np.mean(-2.0 * xc, axis=-1, keepdims=True)
    dx = dxhat * inv + dvar * 2.0 * xc / d + dmu / d
    lead = tuple(range(x.ndim - 1))
    return dx, np.sum(dy * xc * inv, axis=lead), np.sum(dy, axis=lead)
''',
        "jacobian_per_row_chatty": '''
def layer_norm_backward(dy, x, gamma, eps=1e-5):
    import sys
    print("building one Jacobian per row", file=sys.stderr)
    dy, x, gamma = (np.asarray(a, dtype=float) for a in (dy, x, gamma))
    d = x.shape[-1]
    rows_x, rows_dy = x.reshape(-1, d), dy.reshape(-1, d)
    dx = np.empty_like(rows_x)
    dgamma, dbeta = np.zeros(d), np.zeros(d)
    for i, (row, g) in enumerate(zip(rows_x, rows_dy)):
        s = np.sqrt(row.var() + eps)
        xhat = (row - row.mean()) / s
        J = (np.eye(d) - 1.0 / d - np.outer(xhat, xhat) / d) / s
        dx[i] = J.T @ (gamma * g)
        dgamma += g * xhat
        dbeta += g
    return dx.reshape(x.shape), dgamma, dbeta
''',
    },
    "transformer_block": {
        "helpers_and_where_relu": '''
def transformer_block(x, params, mask):
    x = np.asarray(x, dtype=np.float64)
    def sub_attention(stream):
        normed = layer_norm(stream, params["ln1_gamma"], params["ln1_beta"])
        return multi_head_attention(normed, params["W_Q"], params["W_K"], params["W_V"], params["W_O"],
                                    params["n_heads"], mask=mask)
    def sub_mlp(stream):
        normed = layer_norm(stream, params["ln2_gamma"], params["ln2_beta"])
        hidden = normed @ params["W_1"] + params["b_1"]
        return np.where(hidden > 0, hidden, 0.0) @ params["W_2"] + params["b_2"]
    out, weights = sub_attention(x)
    x = x + out
    return x + sub_mlp(x), weights
''',
        "einsum_chatty": '''
def transformer_block(x, params, mask):
    import warnings
    warnings.warn("a chatty block")
    print("running one block")
    p = {k: (np.asarray(v, dtype=float) if k != "n_heads" else v) for k, v in params.items()}
    h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A = multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], p["n_heads"], mask)
    x1 = np.asarray(x, dtype=float) + a
    h2 = layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
    u = np.einsum("...td,dh->...th", h2, p["W_1"]) + p["b_1"]
    return x1 + np.einsum("...th,hd->...td", np.clip(u, 0, None), p["W_2"]) + p["b_2"], A
''',
    },
    "sample_next": {
        "inverse_cdf": '''
def sample_next(logits, temperature, top_k, rng):
    z = np.asarray(logits, dtype=float) / temperature
    if top_k is not None and top_k < len(z):
        threshold = np.partition(z, len(z) - top_k)[len(z) - top_k]
        z[z < threshold] = -np.inf
    p = np.exp(z - np.max(z))
    cdf = np.cumsum(p / p.sum())
    return int(min(np.searchsorted(cdf, rng.random(), side="right"), len(z) - 1))
''',
        "multinomial_chatty": '''
def sample_next(logits, temperature, top_k, rng):
    import sys, warnings
    print("sampling", file=sys.stderr)
    warnings.warn("chatty sampler")
    z = np.array(logits, dtype=float) / float(temperature)
    if top_k:
        kth = sorted(z, reverse=True)[min(top_k, len(z)) - 1]
        z = np.where(z < kth, -np.inf, z)
    z = z - z.max()
    p = np.exp(z) / np.exp(z).sum()
    return int(np.argmax(rng.multinomial(1, p)))
''',
    },
    "generate": {
        "preallocated_cache": '''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    rng = rng if rng is not None else np.random.default_rng()
    prompt = np.asarray(prompt).reshape(-1)
    total = len(prompt) + n_new
    wte = np.asarray(params["wte"], dtype=float)
    d = wte.shape[1]
    pe = positional_encoding(total, d)
    K = [np.zeros((b["n_heads"], total, np.shape(b["W_K"])[1] // b["n_heads"])) for b in params["blocks"]]
    V = [np.zeros_like(k) for k in K]
    tokens = np.zeros(total, dtype=np.int64)
    tokens[: len(prompt)] = prompt
    logits = np.zeros((n_new, wte.shape[0]))
    for t in range(total - 1):
        x = wte[tokens[t]] + pe[t]
        for layer, b in enumerate(params["blocks"]):
            n = b["n_heads"]
            h = layer_norm(x, b["ln1_gamma"], b["ln1_beta"])
            q = split_heads((h @ b["W_Q"])[None], n)
            K[layer][:, t:t + 1] = split_heads((h @ b["W_K"])[None], n)
            V[layer][:, t:t + 1] = split_heads((h @ b["W_V"])[None], n)
            s = q @ np.swapaxes(K[layer][:, : t + 1], -1, -2) / np.sqrt(q.shape[-1])
            w = np.exp(s - s.max(axis=-1, keepdims=True))
            w /= w.sum(axis=-1, keepdims=True)
            x = x + merge_heads(w @ V[layer][:, : t + 1])[0] @ b["W_O"]
            h2 = layer_norm(x, b["ln2_gamma"], b["ln2_beta"])
            x = x + np.maximum(h2 @ b["W_1"] + b["b_1"], 0) @ b["W_2"] + b["b_2"]
        if t >= len(prompt) - 1:
            row = layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"]
            logits[t - len(prompt) + 1] = row
            tokens[t + 1] = sample_next(row, temperature, top_k, rng)
    return tokens, logits
''',
        "dict_cache_chatty": '''
def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
    import sys, warnings
    warnings.warn("generating chattily")
    print(f"generating {n_new} tokens", file=sys.stderr)
    if rng is None:
        rng = np.random.default_rng()
    cache = {}
    d = params["wte"].shape[1]
    def forward_one(token, position):
        x = params["wte"][token] + positional_encoding(position + 1, d)[-1]
        for i, b in enumerate(params["blocks"]):
            h = layer_norm(x, b["ln1_gamma"], b["ln1_beta"])
            k = (h @ b["W_K"]).reshape(b["n_heads"], 1, -1)
            v = (h @ b["W_V"]).reshape(b["n_heads"], 1, -1)
            q = (h @ b["W_Q"]).reshape(b["n_heads"], 1, -1)
            if i in cache:
                k = np.concatenate([cache[i][0], k], axis=1)
                v = np.concatenate([cache[i][1], v], axis=1)
            cache[i] = (k, v)
            s = np.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1])
            w = np.exp(s - s.max(-1, keepdims=True))
            w = w / w.sum(-1, keepdims=True)
            x = x + np.einsum("hqk,hkd->qhd", w, v).reshape(-1) @ b["W_O"]
            h2 = layer_norm(x, b["ln2_gamma"], b["ln2_beta"])
            x = x + np.maximum(0, h2 @ b["W_1"] + b["b_1"]) @ b["W_2"] + b["b_2"]
        return layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ params["W_out"]
    out = [int(t) for t in np.ravel(prompt)]
    for position, token in enumerate(out):
        last = forward_one(token, position)
    rows = []
    for _ in range(n_new):
        rows.append(last)
        out.append(sample_next(last, temperature, top_k, rng))
        if len(rows) < n_new:
            last = forward_one(out[-1], len(out) - 1)
    return np.array(out), np.array(rows).reshape(n_new, -1)
''',
    },
}
