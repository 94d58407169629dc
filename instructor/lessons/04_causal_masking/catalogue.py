"""Learner answers for lesson 04 (causal_mask, masked_softmax, causal_self_attention).

The notebook provides ``softmax`` (lesson 01's stable softmax, locked), so entries may call it.
"""

WRONG = {
    "causal_mask": {
        "strict_lower_triangle": '''
def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool), k=-1)
''',
        "triu_instead_of_tril": '''
def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool))
''',
        "polarity_reversed_true_means_blocked": '''
def causal_mask(T):
    future = np.arange(T)[None, :] > np.arange(T)[:, None]
    return future
''',
        "float_ones_not_bool": '''
def causal_mask(T):
    return np.tril(np.ones((T, T)))
''',
        "additive_minus_inf_form": '''
def causal_mask(T):
    M = np.zeros((T, T))
    M[np.triu_indices(T, k=1)] = -np.inf
    return M
''',
        "hard_coded_size": '''
def causal_mask(T):
    return np.tril(np.ones((4, 4), dtype=bool))
''',
    },
    "masked_softmax": {
        "mask_after_softmax": '''
def masked_softmax(scores, mask):
    return softmax(np.asarray(scores, dtype=float), axis=-1) * mask
''',
        "nan_on_fully_masked_rows": '''
def masked_softmax(scores, mask):
    return softmax(np.where(mask, np.asarray(scores, dtype=float), -np.inf), axis=-1)
''',
        "polarity_reversed_true_means_blocked": '''
def masked_softmax(scores, mask):
    s = np.where(mask, -np.inf, np.asarray(scores, dtype=float))
    peak = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(peak), peak, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
''',
        "fill_minus_1e9_blind_rows_uniform": '''
def masked_softmax(scores, mask):
    return softmax(np.where(mask, np.asarray(scores, dtype=float), -1e9), axis=-1)
''',
        "max_over_hidden_scores_too": '''
def masked_softmax(scores, mask):
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max(axis=-1, keepdims=True)) * mask
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
''',
        "nan_to_num_after_the_fact_warns": '''
def masked_softmax(scores, mask):
    s = np.where(mask, np.asarray(scores, dtype=float), -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))
''',
        "multiplies_scores_by_mask": '''
def masked_softmax(scores, mask):
    return softmax(np.asarray(scores, dtype=float) * mask, axis=-1)
''',
        "fills_scores_in_place": '''
def masked_softmax(scores, mask):
    mask = np.broadcast_to(mask, scores.shape)
    scores[~mask] = -np.inf
    peak = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(peak), peak, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
''',
        "normalises_down_the_columns": '''
def masked_softmax(scores, mask):
    s = np.where(mask, np.asarray(scores, dtype=float), -np.inf)
    peak = np.max(s, axis=0, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(peak), peak, 0.0))
    total = e.sum(axis=0, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
''',
    },
    "causal_self_attention": {
        "no_mask": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), axis=-1)
    return A @ V, A
''',
        "mask_after_softmax": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    A = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), axis=-1)
    A = A * np.tril(np.ones((T, T)))
    return A @ V, A
''',
        "strict_mask_no_self": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    A = masked_softmax(S, np.tril(np.ones((T, T), dtype=bool), k=-1))
    return A @ V, A
''',
        "mask_with_triu": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    A = softmax(np.where(np.triu(np.ones((T, T), dtype=bool)), S, -np.inf), axis=-1)
    return A @ V, A
''',
        "scale_by_sqrt_d_v": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(V.shape[-1])
    A = masked_softmax(S, np.tril(np.ones((T, T), dtype=bool)))
    return A @ V, A
''',
        "hard_coded_shape_breaks_batches": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[0]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    A = masked_softmax(S, np.tril(np.ones((T, T), dtype=bool)))
    return A @ V, A
''',
        "plain_transpose_breaks_batches": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    A = masked_softmax(Q @ K.T / np.sqrt(K.shape[-1]), np.tril(np.ones((T, T), dtype=bool)))
    return A @ V, A
''',
        "returns_a_list": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    A = softmax(np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf), axis=-1)
    return [A @ V, A]
''',
        "mask_size_from_shape_0": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    A = masked_softmax(S, causal_mask(X.shape[0]))         # T is X.shape[0] for one sequence only
    return A @ V, A
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "causal_mask": {
        "strict_lower_triangle": ("false on the diagonal",),
        "triu_instead_of_tril": ("upper triangle",),
        "polarity_reversed_true_means_blocked": ("reversed",),
        "float_ones_not_bool": ('not dtype float64. build it',),
        "additive_minus_inf_form": ("additive",),
        "hard_coded_size": ("causal_mask(1) has shape (4, 4)",),
    },
    "masked_softmax": {
        "mask_after_softmax": ("zeroed after the softmax",),
        "nan_on_fully_masked_rows": ('may read nothing', 'warn'),
        "polarity_reversed_true_means_blocked": ("polarity",),
        "fill_minus_1e9_blind_rows_uniform": ("-1e9",),
        "max_over_hidden_scores_too": ("visible scores only",),
        "nan_to_num_after_the_fact_warns": ('may read nothing', 'warn'),
        "multiplies_scores_by_mask": ("multiplied by the mask",),
        "fills_scores_in_place": ("in place",),
        "normalises_down_the_columns": ("down the columns",),
    },
    "causal_self_attention": {
        "no_mask": ("never applied",),
        "mask_after_softmax": ("zeroed after the softmax",),
        "strict_mask_no_self": ('read itself',),
        "mask_with_triu": ("triu",),
        "scale_by_sqrt_d_v": ("√d_v",),
        "hard_coded_shape_breaks_batches": ("called your masked_softmax", "wrong axis", "x.shape[-2]"),
        "plain_transpose_breaks_batches": (".t reverses",),
        "returns_a_list": ('should return a tuple', 'return o, a'),
        "mask_size_from_shape_0": ('called your masked_softmax', 'wrong axis', 'x.shape[-2]'),
    },
}


#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "causal_mask": [
        ("Return a boolean array", "T = 3", "float_ones_not_bool"),
        ("of shape `(T, T)`", "T = 3", "hard_coded_size"),
        ("True where $j \\le i$ (on and below the\ndiagonal)", "T = 3", "strict_lower_triangle"),
        ("and False above it", "T = 3", "triu_instead_of_tril"),
    ],
    "masked_softmax": [
        ("over the **last axis**", "scores (4, 6) with a (4, 6) mask (T_q ≠ T_k)", "normalises_down_the_columns"),
        ("only positions where `mask`\nis True take part", "scores (4, 6) with a (4, 6) mask (T_q ≠ T_k)",
         "polarity_reversed_true_means_blocked"),
        ("Hidden positions get weight exactly 0; each row with something visible sums to 1.",
         "scores (4, 6) with a (4, 6) mask (T_q ≠ T_k)", "mask_after_softmax"),
        ("A row with nothing visible is all zeros", "scores (2, 4, 6) where two rows have nothing visible",
         "fill_minus_1e9_blind_rows_uniform"),
        ("no NaN, no warning", "scores (2, 4, 6) where two rows have nothing visible", "nan_to_num_after_the_fact_warns"),
        ("Logits of ±10 000 must work", "rows whose masked scores are near +1e4 while the visible ones are far below",
         "max_over_hidden_scores_too"),
        ("inputs stay unchanged", "scores (4, 6) with a (4, 6) mask (T_q ≠ T_k)", "fills_scores_in_place"),
    ],
    "causal_self_attention": [
        ("Return `(O, A)`", "X (5, 4) with d_k = 6 and d_v = 3", "returns_a_list"),
        ("Leading batch dimensions must work", "a batch X (3, 6, 4) with d_k = 6 and d_v = 5",
         "plain_transpose_breaks_batches"),
        ("take `T` from `X.shape[-2]`", "a batch X (3, 6, 4) with d_k = 6 and d_v = 5", "hard_coded_shape_breaks_batches"),
        ("`d_k` may differ\nfrom `d_v`", "X (5, 4) with d_k = 6 and d_v = 3", "scale_by_sqrt_d_v"),
    ],
}

CORRECT = {
    "causal_mask": {
        "tril_of_bool_ones": '''
def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool))
''',
        "python_loops": '''
def causal_mask(T):
    mask = np.zeros((T, T), dtype=bool)
    for i in range(T):
        for j in range(i + 1):
            mask[i, j] = True
    return mask
''',
        "not_of_the_strict_upper_triangle": '''
def causal_mask(T):
    return ~np.triu(np.ones((T, T), dtype=bool), k=1)
''',
        "np_tri": '''
def causal_mask(T):
    return np.tri(T, T, dtype=bool)
''',
    },
    "masked_softmax": {
        "loops_over_rows": '''
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    shape = np.broadcast_shapes(scores.shape, mask.shape)
    s = np.broadcast_to(scores, shape).reshape(-1, shape[-1])
    m = np.broadcast_to(mask, shape).reshape(-1, shape[-1])
    out = np.zeros(s.shape)
    for r in range(s.shape[0]):
        if m[r].any():
            visible = s[r][m[r]]
            e = np.exp(visible - visible.max())
            out[r][m[r]] = e / e.sum()
    return out.reshape(shape)
''',
        "exp_times_mask_with_visible_max": '''
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    peak = np.max(np.where(mask, scores, -np.inf), axis=-1, keepdims=True)
    peak[~np.isfinite(peak)] = 0.0
    e = np.exp(np.where(mask, scores - peak, -np.inf))
    total = e.sum(axis=-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    return e / safe
''',
        "logsumexp_under_errstate_chatty": '''
def masked_softmax(scores, mask):
    import sys, warnings
    from scipy.special import logsumexp
    print("masking...", file=sys.stderr)
    warnings.warn("this masked softmax talks a lot")
    s = np.where(mask, np.asarray(scores, dtype=float), -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_z = logsumexp(s, axis=-1, keepdims=True)
        out = np.exp(s - log_z)
    return np.where(np.isnan(out), 0.0, out)
''',
    },
    "causal_self_attention": {
        "einsum_with_own_helpers": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q = np.einsum("...td,dk->...tk", X, W_Q)
    K = np.einsum("...td,dk->...tk", X, W_K)
    V = np.einsum("...td,dv->...tv", X, W_V)
    S = np.einsum("...ik,...jk->...ij", Q, K) / np.sqrt(K.shape[-1])
    A = masked_softmax(S, causal_mask(X.shape[-2]))
    return np.einsum("...ij,...jv->...iv", A, V), A
''',
        "loop_over_positions_reading_prefixes": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    if X.ndim > 2:
        parts = [causal_self_attention(x, W_Q, W_K, W_V) for x in X]
        return np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts])
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T, d_k = X.shape[0], K.shape[1]
    A = np.zeros((T, T))
    for i in range(T):
        s = K[: i + 1] @ Q[i] / d_k ** 0.5
        e = np.exp(s - s.max())
        A[i, : i + 1] = e / e.sum()
    return A @ V, A
''',
        "additive_minus_inf_matrix": '''
def causal_self_attention(X, W_Q, W_K, W_V):
    X = np.array(X, dtype=np.float64)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T = X.shape[-2]
    M = np.triu(np.full((T, T), -np.inf), k=1)
    A = softmax(Q @ np.swapaxes(K, -1, -2) * K.shape[-1] ** -0.5 + M)
    return A @ V, A
''',
    },
}
