"""Learner answers for lesson 06 (split_heads, merge_heads, multi_head_attention).

Entries may use ``np`` and what the notebook defines before them: the provided
``attention(Q, K, V, mask=None)`` and, for ``multi_head_attention``, ``split_heads`` and
``merge_heads``.
"""

WRONG = {
    "split_heads": {
        "reshape_without_transpose": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    *batch, T, width = X.shape
    return X.reshape(*batch, n_heads, T, width // n_heads)
''',
        "interleaved_columns": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    *batch, T, width = X.shape
    H = X.reshape(*batch, T, width // n_heads, n_heads)
    return np.moveaxis(H, -1, -3)
''',
        "only_works_without_batch": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    T, width = X.shape[-2:]
    return X.reshape(T, n_heads, width // n_heads).transpose(1, 0, 2)
''',
        "hard_coded_two_heads": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    *batch, T, width = X.shape
    return np.swapaxes(X.reshape(*batch, T, 2, width // 2), -3, -2)
''',
        "transpose_ignores_batch": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    width = X.shape[-1]
    return X.reshape(*X.shape[:-1], n_heads, width // n_heads).transpose(1, 0, 2)
''',
        "keeps_integer_dtype": '''
def split_heads(X, n_heads):
    X = np.asarray(X)                                   # an integer X stays integer
    *batch, T, width = X.shape
    return np.swapaxes(X.reshape(*batch, T, n_heads, width // n_heads), -3, -2)
''',
    },
    "merge_heads": {
        "reshape_without_transpose": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    return H.reshape(*batch, T, h * d_h)
''',
        "interleaves_heads": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    return np.moveaxis(H, -3, -1).reshape(*batch, T, h * d_h)
''',
        "concatenates_the_first_axis": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    return np.concatenate([H[i] for i in range(H.shape[0])], axis=-1)
''',
        "stacks_heads_as_rows": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    return H.reshape(*batch, h * T, d_h)
''',
    },
    "multi_head_attention": {
        "scale_by_sqrt_d_model": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, d_model = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return np.swapaxes(P.reshape(*batch, T, n_heads, -1), -3, -2)
    Q, K, V = per_head(W_Q), per_head(W_K), per_head(W_V)
    Q = Q * np.sqrt(Q.shape[-1] / d_model)          # so that the scores end up divided by sqrt(d_model)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    out, A = attention(Q, K, V, mask)
    return np.swapaxes(out, -3, -2).reshape(*batch, T, -1) @ np.asarray(W_O, dtype=float), A
''',
        "scale_by_sqrt_of_all_heads_width": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    Q, K, V = (X @ np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V))
    scale = np.sqrt(Q.shape[-1])                    # the width of all heads together
    Q, K, V = (np.swapaxes(P.reshape(*batch, T, n_heads, -1), -3, -2) for P in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / scale
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    A = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return np.swapaxes(A @ V, -3, -2).reshape(*batch, T, -1) @ np.asarray(W_O, dtype=float), A
''',
        "forgets_W_O": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return np.swapaxes(P.reshape(*batch, T, n_heads, -1), -3, -2)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    out, A = attention(per_head(W_Q), per_head(W_K), per_head(W_V), mask)
    return np.swapaxes(out, -3, -2).reshape(*batch, T, -1), A
''',
        "split_by_reshape_without_transpose": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return P.reshape(*batch, n_heads, T, -1)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    out, A = attention(per_head(W_Q), per_head(W_K), per_head(W_V), mask)
    return np.swapaxes(out, -3, -2).reshape(*batch, T, -1) @ np.asarray(W_O, dtype=float), A
''',
        "heads_take_interleaved_columns": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    W_Q, W_K, W_V, W_O = (np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V, W_O))
    outs, maps = [], []
    for i in range(n_heads):
        out, A_i = attention(X @ W_Q[:, i::n_heads], X @ W_K[:, i::n_heads], X @ W_V[:, i::n_heads], mask)
        outs.append(out)
        maps.append(A_i)
    return np.concatenate(outs, axis=-1) @ W_O, np.stack(maps, axis=-3)
''',
        "merge_interleaves_heads": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return np.swapaxes(P.reshape(*batch, T, n_heads, -1), -3, -2)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    out, A = attention(per_head(W_Q), per_head(W_K), per_head(W_V), mask)
    merged = np.moveaxis(out, -3, -1).reshape(*batch, T, -1)
    return merged @ np.asarray(W_O, dtype=float), A
''',
        "mask_without_head_axis": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return np.swapaxes(P.reshape(*batch, T, n_heads, -1), -3, -2)
    out, A = attention(per_head(W_Q), per_head(W_K), per_head(W_V), mask)
    return np.swapaxes(out, -3, -2).reshape(*batch, T, -1) @ np.asarray(W_O, dtype=float), A
''',
        "mask_after_softmax": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return np.swapaxes(P.reshape(*batch, T, n_heads, -1), -3, -2)
    Q, K, V = per_head(W_Q), per_head(W_K), per_head(W_V)
    _, A = attention(Q, K, V)
    if mask is not None:
        A = A * np.asarray(mask, dtype=bool)[..., None, :, :]
    return np.swapaxes(A @ V, -3, -2).reshape(*batch, T, -1) @ np.asarray(W_O, dtype=float), A
''',
        "hard_coded_three_heads": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    def per_head(W):
        P = X @ np.asarray(W, dtype=float)
        return np.swapaxes(P.reshape(*batch, T, 3, -1), -3, -2)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)[..., None, :, :]
    out, A = attention(per_head(W_Q), per_head(W_K), per_head(W_V), mask)
    return np.swapaxes(out, -3, -2).reshape(*batch, T, -1) @ np.asarray(W_O, dtype=float), A
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "split_heads": {
        "reshape_without_transpose": ("reshaped straight",),
        "interleaved_columns": ("interleaved",),
        "only_works_without_batch": ("*batch",),
        "hard_coded_two_heads": ("fixed at 2",),
        "transpose_ignores_batch": ("swapaxes",),
        "keeps_integer_dtype": ('has dtype int64',),
    },
    "merge_heads": {
        "reshape_without_transpose": ("reshaped straight",),
        "interleaves_heads": ("interleaved",),
        "concatenates_the_first_axis": ("batch axis",),
        "stacks_heads_as_rows": ("stacked as rows",),
    },
    "multi_head_attention": {
        "scale_by_sqrt_d_model": ("√d_model",),
        "scale_by_sqrt_of_all_heads_width": ("√d_model",),
        "forgets_W_O": ("never multiplied by w_o",),
        "split_by_reshape_without_transpose": ("plain reshape",),
        "heads_take_interleaved_columns": ("every h-th column",),
        "merge_interleaves_heads": ("interleaved",),
        "mask_without_head_axis": ("head axis",),
        "mask_after_softmax": ("after the softmax",),
        "hard_coded_three_heads": ("n_heads",),
    },
}


#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "split_heads": [
        ("holds columns `i*d_h:(i+1)*d_h` of `X`", "X of shape (5, 6) split into 2 heads of width 3",
         "interleaved_columns"),
        ("Leading batch dimensions stay in front", "a batch X of shape (2, 7, 18) split into 2 heads of width 9",
         "only_works_without_batch"),
        ("Return `float64`", "an integer X of shape (3, 8) split into 2 heads", "keeps_integer_dtype"),
    ],
    "merge_heads": [
        ("with head `i`\nback in columns `i*d_h:(i+1)*d_h`", "H of shape (2, 5, 3): 2 heads, T = 5, d_h = 3",
         "interleaves_heads"),
        ("`(..., h, T, d_h)`", "a batch H of shape (2, 2, 7, 9)", "concatenates_the_first_axis"),
    ],
    "multi_head_attention": [
        ("Head `i` uses columns `i*d_h:(i+1)*d_h` of the three projections.",
         "X of shape (5, 7) (d_model = 7), 3 heads of width 2, no mask", "heads_take_interleaved_columns"),
        ("the width of **one head**", "X of shape (5, 7) (d_model = 7), 3 heads of width 2, no mask",
         "scale_by_sqrt_d_model"),
        ("**shared by every head**", "a batch of 3 sentences X (3, 4, 5) with 3 heads of width 3 and one (4, 4) mask "
         "per sentence (batch size = number of heads)", "mask_without_head_axis"),
        ("`n_heads` is whatever the caller passes",
         "X of shape (6, 9), 2 heads of width 3 (n_heads·d_h = 6 ≠ d_model = 9), no mask", "hard_coded_three_heads"),
        ("`W_O` is\n  `(n_heads·d_h, d_model)`", "X of shape (5, 7) (d_model = 7), 3 heads of width 2, no mask",
         "forgets_W_O"),
    ],
}

CORRECT = {
    "split_heads": {
        "split_and_stack": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    return np.stack(np.split(X, n_heads, axis=-1), axis=-3)
''',
        "loop_over_heads": '''
def split_heads(X, n_heads):
    X = np.array(X, dtype=float)
    d_h = X.shape[-1] // n_heads
    blocks = []
    for i in range(n_heads):
        blocks.append(X[..., i * d_h:(i + 1) * d_h])
    return np.stack(blocks, axis=-3)
''',
        "moveaxis_and_einsum": '''
def split_heads(X, n_heads):
    X = np.asarray(X, dtype=float)
    H = X.reshape(X.shape[:-1] + (n_heads, -1))
    return np.einsum("...thd->...htd", H).copy()
''',
    },
    "merge_heads": {
        "concatenate_heads": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    return np.concatenate([H[..., i, :, :] for i in range(H.shape[-3])], axis=-1)
''',
        "moveaxis_and_reshape": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    T = H.shape[-2]
    return np.moveaxis(H, -3, -2).reshape(H.shape[:-3] + (T, -1))
''',
        "fill_columns_in_a_loop": '''
def merge_heads(H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    out = np.empty((*batch, T, h * d_h))
    for i in range(h):
        out[..., i * d_h:(i + 1) * d_h] = H[..., i, :, :]
    return out
''',
    },
    "multi_head_attention": {
        "uses_split_and_merge": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    Q, K, V = (split_heads(X @ np.asarray(W, dtype=float), n_heads) for W in (W_Q, W_K, W_V))
    if mask is not None:
        mask = np.expand_dims(np.asarray(mask, dtype=bool), -3)
    out, A = attention(Q, K, V, mask)
    return merge_heads(out) @ np.asarray(W_O, dtype=float), A
''',
        "loops_over_sentences_heads_and_rows": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    W_Q, W_K, W_V, W_O = (np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V, W_O))
    *batch, T, d_model = X.shape
    d_h = W_Q.shape[1] // n_heads
    visible = np.ones((T, T), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    visible = np.broadcast_to(visible, (*batch, T, T))
    O = np.zeros((*batch, T, W_O.shape[1]))
    A = np.zeros((*batch, n_heads, T, T))
    for idx in np.ndindex(*batch):
        x, m = X[idx], visible[idx]
        outs = []
        for i in range(n_heads):
            cols = slice(i * d_h, (i + 1) * d_h)
            q, k, v = x @ W_Q[:, cols], x @ W_K[:, cols], x @ W_V[:, cols]
            s = q @ k.T / np.sqrt(d_h)
            a = A[idx + (i,)]
            for t in range(T):
                if m[t].any():
                    e = np.exp(s[t, m[t]] - s[t, m[t]].max())
                    a[t, m[t]] = e / e.sum()
            outs.append(a @ v)
        O[idx] = np.concatenate(outs, axis=-1) @ W_O
    return O, A
''',
        "einsum_with_own_softmax": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    d_model = X.shape[-1]
    Q, K, V = (np.einsum("...td,dhe->...hte", X, np.asarray(W, dtype=float).reshape(d_model, n_heads, -1))
               for W in (W_Q, W_K, W_V))
    scores = np.einsum("...hte,...hse->...hts", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(np.expand_dims(np.asarray(mask, dtype=bool), -3), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    A = np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)
    heads = np.einsum("...hts,...hse->...the", A, V)
    W_O = np.asarray(W_O, dtype=float)
    return np.einsum("...the,hed->...td", heads, W_O.reshape(n_heads, -1, W_O.shape[-1])), A
''',
        "naive_softmax_then_nan_to_num_with_warnings": '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    import sys
    print("multi-head attention, n_heads =", n_heads, file=sys.stderr)
    X = np.asarray(X, dtype=float)
    *batch, T, _ = X.shape
    Q, K, V = (np.swapaxes((X @ np.asarray(W, dtype=float)).reshape(*batch, T, n_heads, -1), -3, -2)
               for W in (W_Q, W_K, W_V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))   # a blind row gives -inf - -inf = nan here
    A = np.nan_to_num(e / e.sum(axis=-1, keepdims=True))
    heads = np.swapaxes(A @ V, -3, -2).reshape(*batch, T, -1)
    return heads @ np.asarray(W_O, dtype=float), A
''',
    },
}
