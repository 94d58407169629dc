"""Learner answers for lesson 02 (project, self_attention)."""

WRONG = {
    "project": {
        "transposed_weights": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return X @ W_Q.T, X @ W_K.T, X @ W_V.T
''',
        "keys_and_values_swapped": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return Q, V, K
''',
        "integers_not_promoted": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X)
    return X @ W_Q, X @ W_K, X @ W_V
''',
        "hard_coded_two_dimensions": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return (np.einsum("td,dk->tk", X, W_Q), np.einsum("td,dk->tk", X, W_K),
            np.einsum("td,dk->tk", X, W_V))
''',
        "one_matrix_for_keys_and_values": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    K = X @ W_K
    return X @ W_Q, K, K
''',
    },
    "self_attention": {
        "no_scale": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ np.swapaxes(K, -1, -2), axis=-1)
    return A @ V, A
''',
        "scale_by_sqrt_d_model": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1]), axis=-1)
    return A @ V, A
''',
        "scale_by_d_k": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ np.swapaxes(K, -1, -2) / K.shape[-1], axis=-1)
    return A @ V, A
''',
        "softmax_down_the_columns": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), axis=-2)
    return A @ V, A
''',
        "keys_times_queries": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(K @ np.swapaxes(Q, -1, -2) / np.sqrt(K.shape[-1]), axis=-1)
    return A @ V, A
''',
        "plain_transpose_breaks_batches": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ K.T / np.sqrt(K.shape[-1]), axis=-1)
    return A @ V, A
''',
        "folds_scale_into_W_Q_in_place": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    W_Q /= np.sqrt(W_K.shape[-1])               # scale once, in the weights
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ np.swapaxes(K, -1, -2), axis=-1)
    return A @ V, A
''',
        "one_batch_axis_only": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    Kt = np.transpose(K, (0, 2, 1)) if K.ndim == 3 else K.T     # written for (T, d) and (B, T, d)
    A = softmax(Q @ Kt / np.sqrt(K.shape[-1]), axis=-1)
    return A @ V, A
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "project": {
        "transposed_weights": ("not its transpose",),
        "keys_and_values_swapped": ("in that order",),
        "integers_not_promoted": ("float64",),
        "hard_coded_two_dimensions": ("'...'",),
        "one_matrix_for_keys_and_values": ("made with w_k",),
    },
    "self_attention": {
        "no_scale": ("not scaled",),
        "scale_by_sqrt_d_model": ("√d_model",),
        "scale_by_d_k": ("d_k = 2 instead of √d_k",),
        "softmax_down_the_columns": ("column",),
        "keys_times_queries": ("transposed scores",),
        "plain_transpose_breaks_batches": (".t reverses",),
        "folds_scale_into_W_Q_in_place": ("in place", "w_q"),
        "one_batch_axis_only": ('with two batch dimensions', 'transposed'),
    },
}


#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "project": [
        ("Return `(Q, K, V)`", "square weights (6, 6), where a transposed matrix still has the right shape",
         "keys_and_values_swapped"),
        ("all `float64` (integer inputs are promoted", "integer X (4, 3) and integer weights (d_k = 2, d_v = 5)",
         "integers_not_promoted"),
        ("shared by every position and every sequence of a batch",
         "a batch X of shape (3, 5, 4) sharing one set of weights (d_k = 2, d_v = 6)", "hard_coded_two_dimensions"),
    ],
    "self_attention": [
        ("transpose only the last two axes of `K`", "a batch X of shape (3, 4, 5) (d_k = 2, d_v = 3)",
         "plain_transpose_breaks_batches"),
        ("the width of the keys, **not** of `X`", "X (5, 4) with d_k = 3 and d_v = 2", "scale_by_sqrt_d_model"),
        ("`A` = softmax of each row (the last axis)", "X (5, 4) with d_k = 3 and d_v = 2", "softmax_down_the_columns"),
        ('so that batch dimensions stay in front', 'two batch dimensions, X of shape (2, 5, 3, 4) (d_k = 6, d_v = 3)', 'one_batch_axis_only'),
    ],
}

CORRECT = {
    "project": {
        "einsum": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    return tuple(np.einsum("...td,dk->...tk", X, np.asarray(W, dtype=float)) for W in (W_Q, W_K, W_V))
''',
        "column_form_one_token_at_a_time": '''
def project(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    out = []
    for W in (W_Q, W_K, W_V):
        W = np.asarray(W, dtype=float)
        P = np.zeros(X.shape[:-1] + (W.shape[1],))
        for index in np.ndindex(X.shape[:-1]):
            P[index] = (W.T @ X[index].reshape(-1, 1)).ravel()   # seed 000's q_i = W_Q^T x_i
        out.append(P)
    return tuple(out)
''',
        "tensordot": '''
def project(X, W_Q, W_K, W_V):
    X = np.array(X, dtype=np.float64)
    Q = np.tensordot(X, W_Q, axes=([-1], [0])).astype(np.float64)
    K = np.tensordot(X, W_K, axes=([-1], [0])).astype(np.float64)
    V = np.tensordot(X, W_V, axes=([-1], [0])).astype(np.float64)
    return Q, K, V
''',
    },
    "self_attention": {
        "calls_project_and_einsum": '''
def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = project(X, W_Q, W_K, W_V)
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(K.shape[-1])
    A = softmax(scores, axis=-1)
    return np.einsum("...qk,...kv->...qv", A, V), A
''',
        "loops_over_sequences_and_positions": '''
def self_attention(X, W_Q, W_K, W_V):
    X = np.asarray(X, dtype=float)
    if X.ndim > 2:
        reads = [self_attention(x, W_Q, W_K, W_V) for x in X]
        return np.stack([r[0] for r in reads]), np.stack([r[1] for r in reads])
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    T, d_k = K.shape
    A = np.zeros((T, T))
    O = np.zeros((T, V.shape[1]))
    for i in range(T):
        scores = np.array([Q[i] @ K[j] for j in range(T)]) / d_k ** 0.5
        A[i] = softmax(scores)
        O[i] = sum(A[i, j] * V[j] for j in range(T))
    return O, A
''',
        "scipy_softmax_chatty": '''
def self_attention(X, W_Q, W_K, W_V):
    import sys, warnings
    import scipy.special
    print("attending...", file=sys.stderr)
    warnings.warn("self_attention is chatty")
    X = np.asarray(X, dtype=float)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = scipy.special.softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), axis=-1)
    return A @ V, A
''',
    },
}
