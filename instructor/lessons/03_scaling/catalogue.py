"""Learner answers for lesson 03 (dot_product_variance, softmax_jacobian, scaled_dot_product_attention)."""
from catalogue import MEASUREMENTS

WRONG = {
    "dot_product_variance": {
        "standard_deviation": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(seed)
    q, k = g.standard_normal((n_samples, d_k)), g.standard_normal((n_samples, d_k))
    return float(np.std(np.sum(q * k, axis=1)))
''',
        "variance_of_scaled_scores": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(seed)
    q, k = g.standard_normal((n_samples, d_k)), g.standard_normal((n_samples, d_k))
    return float(np.var(np.sum(q * k, axis=1) / np.sqrt(d_k)))
''',
        "products_not_summed": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(seed)
    q, k = g.standard_normal((n_samples, d_k)), g.standard_normal((n_samples, d_k))
    return float(np.var(q * k))
''',
        "seed_ignored": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng()
    q, k = g.standard_normal((n_samples, d_k)), g.standard_normal((n_samples, d_k))
    return float(np.var(np.sum(q * k, axis=1)))
''',
        "uniform_instead_of_normal": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(seed)
    q, k = g.random((n_samples, d_k)), g.random((n_samples, d_k))
    return float(np.var(np.sum(q * k, axis=1)))
''',
        "ignores_n_samples": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(seed)
    q, k = g.standard_normal((100_000, d_k)), g.standard_normal((100_000, d_k))   # always 100,000 pairs
    return float(np.var(np.sum(q * k, axis=1)))
''',
        "fixed_seed_zero": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(0)                        # the same draws whatever seed is asked for
    q, k = g.standard_normal((n_samples, d_k)), g.standard_normal((n_samples, d_k))
    return float(np.var(np.sum(q * k, axis=1)))
''',
        "reseeds_the_global_generator": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    np.random.seed(seed)                       # NumPy's global generator, shared with every other cell
    q = np.random.standard_normal((n_samples, d_k))
    k = np.random.standard_normal((n_samples, d_k))
    return float(np.var(np.sum(q * k, axis=1)))
''',
    },
    "softmax_jacobian": {
        "sign_flipped": '''
def softmax_jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.outer(p, p) - np.diag(p)
''',
        "diagonal_only": '''
def softmax_jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.diag(p * (1 - p))
''',
        "identity_instead_of_diag_p": '''
def softmax_jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.eye(len(p)) - np.outer(p, p)
''',
        "kronecker_delta_dropped": '''
def softmax_jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.outer(p, 1 - p)
''',
        "rejects_lists": '''
def softmax_jacobian(p):
    n = p.shape[0]                                      # a list has no .shape
    return np.diag(p) - np.outer(p, p).reshape(n, n)
''',
        "integer_J_for_integer_p": '''
def softmax_jacobian(p):
    p = np.asarray(p)                              # an integer p stays integer, and so does J
    return np.diag(p) - np.outer(p, p)
''',
    },
    "scaled_dot_product_attention": {
        "no_scale": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is None:
        A = softmax(scores)
        return A @ V, A
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
    visible = mask.any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(mask, scores, -np.inf), 0.0)) * visible
    return A @ V, A
''',
        "scaled_by_sqrt_d_v": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(V.shape[-1])
    if mask is None:
        A = softmax(scores)
        return A @ V, A
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
    visible = mask.any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(mask, scores, -np.inf), 0.0)) * visible
    return A @ V, A
''',
        "hard_coded_axis_for_d_k": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[1])
    if mask is None:
        A = softmax(scores)
        return A @ V, A
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
    visible = mask.any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(mask, scores, -np.inf), 0.0)) * visible
    return A @ V, A
''',
        "mask_after_softmax": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    A = softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]))
    if mask is not None:
        A = A * np.asarray(mask, dtype=bool)
    return A @ V, A
''',
        "mask_polarity_reversed": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is None:
        A = softmax(scores)
        return A @ V, A
    blocked = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
    visible = (~blocked).any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(blocked, -np.inf, scores), 0.0)) * visible
    return A @ V, A
''',
        "large_negative_fill": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    A = softmax(scores)
    return A @ V, A
''',
        "nan_on_rows_with_nothing_visible": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    A = softmax(scores)
    return A @ V, A
''',
        "plain_transpose_breaks_batches": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is None:
        A = softmax(scores)
        return A @ V, A
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
    visible = mask.any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(mask, scores, -np.inf), 0.0)) * visible
    return A @ V, A
''',
        "scales_Q_in_place": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    Q /= np.sqrt(K.shape[-1])
    scores = Q @ np.swapaxes(K, -1, -2)
    if mask is None:
        A = softmax(scores)
        return A @ V, A
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), np.broadcast_shapes(np.shape(mask), scores.shape))
    visible = mask.any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(mask, scores, -np.inf), 0.0)) * visible
    return A @ V, A
''',
        # Right numbers, but a row with nothing visible makes NumPy warn: the lesson asks for no warning.
        "scipy_with_warnings_then_cleanup": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    import scipy.special
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        scores = np.where(mask, scores, -np.inf)
    A = scipy.special.softmax(scores, axis=-1)      # a row of -inf gives NaN and a warning
    A = np.nan_to_num(A, nan=0.0)
    return A @ V, A
''',
        "exp_without_max": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    e = np.exp(scores)                                  # overflows for scores in the hundreds
    if mask is not None:
        e = e * np.asarray(mask, dtype=bool)
    total = e.sum(axis=-1, keepdims=True)
    A = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return A @ V, A
''',
        "one_batch_axis_only": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    Kt = K.transpose(0, 2, 1) if K.ndim == 3 else K.T          # written for (T, d) and (B, T, d)
    scores = Q @ Kt / np.sqrt(K.shape[-1])
    if mask is None:
        A = softmax(scores, axis=-1)
        return A @ V, A
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    visible = mask.any(axis=-1, keepdims=True)
    A = softmax(np.where(visible, np.where(mask, scores, -np.inf), 0.0), axis=-1) * visible
    return A @ V, A
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "dot_product_variance": {
        "standard_deviation": ("standard deviation",),
        "variance_of_scaled_scores": ('does not grow with d_k',),
        "products_not_summed": ('does not grow with d_k',),
        "seed_ignored": ('two calls with seed=3 gave different values',),
        "uniform_instead_of_normal": ("uniformly",),
        "ignores_n_samples": ('n_samples argument is ignored',),
        "fixed_seed_zero": ('seed=3 and seed=4 gave the same value',),
        "reseeds_the_global_generator": ('global generator', 'default_rng(seed)'),
    },
    "softmax_jacobian": {
        "sign_flipped": ("sign is flipped",),
        "diagonal_only": ("only the diagonal",),
        "identity_instead_of_diag_p": ("identity",),
        "kronecker_delta_dropped": ("kronecker delta is dropped",),
        "rejects_lists": ('raised attributeerror', 'list'),
        "integer_J_for_integer_p": ('has dtype int64', 'float64'),
    },
    "scaled_dot_product_attention": {
        "no_scale": ("not scaled",),
        "scaled_by_sqrt_d_v": ("√d_v",),
        "hard_coded_axis_for_d_k": ("√t_k",),
        "mask_after_softmax": ("zeroed after the softmax",),
        "mask_polarity_reversed": ("polarity",),
        "large_negative_fill": ("-1e9",),
        "nan_on_rows_with_nothing_visible": ('may read nothing', 'warn'),
        "plain_transpose_breaks_batches": (".t reverses",),
        "scales_Q_in_place": ("in place", "argument q"),
        "scipy_with_warnings_then_cleanup": ('may read nothing', 'warn'),
        "exp_without_max": ('overflow',),
        "one_batch_axis_only": ('with two batch dimensions', 'transposed'),
    },
}


#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "dot_product_variance": [
        ("Draw `n_samples` independent pairs", MEASUREMENTS, "ignores_n_samples"),
        ("standard-normal vectors", "d_k = 4 with the default n_samples and seed", "uniform_instead_of_normal"),
        ("return the sample variance", "d_k = 4 with the default n_samples and seed", "standard_deviation"),
        ("The same seed must give the same number", MEASUREMENTS, "seed_ignored"),
        ("another seed gives another number", MEASUREMENTS, "fixed_seed_zero"),
        ('a generator of its own', MEASUREMENTS, 'reseeds_the_global_generator'),
    ],
    "softmax_jacobian": [
        ("lists are accepted", "p given as a Python list of 3 floats", "rejects_lists"),
        ("p_i(\\delta_{ij} - p_j)", "p = softmax of 5 random logits", "kronecker_delta_dropped"),
        ('as `float64`', 'a one-hot p of 4 integers', 'integer_J_for_integer_p'),
    ],
    "scaled_dot_product_attention": [
        ("with `d_k = K.shape[-1]`", "no mask, batch: Q (2, 3, 4, 9), K (2, 3, 7, 9), V (2, 3, 7, 2)",
         "hard_coded_axis_for_d_k"),
        ("leading batch\ndimensions broadcast", "no mask, batch: Q (2, 3, 4, 9), K (2, 3, 7, 9), V (2, 3, 7, 2)",
         "plain_transpose_breaks_batches"),
        ("forbidden scores\n   become $-\\infty$ **before** the softmax",
         "a key mask of shape (T_k,) = (5,) with Q (4, 6), K (5, 6), V (5, 3)", "mask_after_softmax"),
        ("True = may attend", "a key mask of shape (T_k,) = (5,) with Q (4, 6), K (5, 6), V (5, 3)",
         "mask_polarity_reversed"),
        ("rows with nothing visible are all zeros", "a (T_q, T_k) = (4, 6) mask whose row 2 is all False",
         "large_negative_fill"),
        ("No NaN and no warning", "a (T_q, T_k) = (4, 6) mask whose row 2 is all False",
         "scipy_with_warnings_then_cleanup"),
        ("for logits of $\\pm 10^4$ too", "no mask, scores of about ±1e4: Q (3, 4), K (6, 4), V (6, 5)",
         "exp_without_max"),
        ("do not modify the\ninputs", "no mask: Q (4, 6), K (5, 6), V (5, 3)", "scales_Q_in_place"),
        ('leading batch\ndimensions broadcast', 'no mask, batch: Q (2, 3, 4, 9), K (2, 3, 7, 9), V (2, 3, 7, 2)', 'one_batch_axis_only'),
    ],
}

CORRECT = {
    "dot_product_variance": {
        "einsum_keys_first_ddof_1": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    g = np.random.default_rng(seed)
    k = g.normal(0.0, 1.0, size=(n_samples, d_k))
    q = g.normal(0.0, 1.0, size=(n_samples, d_k))
    return float(np.var(np.einsum("nd,nd->n", q, k), ddof=1))
''',
        "chunked_loop_with_legacy_generator": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    rs = np.random.RandomState(seed)
    total, total_sq, done = 0.0, 0.0, 0
    while done < n_samples:
        m = min(4096, n_samples - done)
        dots = (rs.randn(m, d_k) * rs.randn(m, d_k)).sum(axis=1)
        total += dots.sum()
        total_sq += (dots ** 2).sum()
        done += m
    mean = total / n_samples
    return total_sq / n_samples - mean ** 2
''',
        "one_draw_both_vectors": '''
def dot_product_variance(d_k, n_samples=100_000, seed=0):
    pairs = np.random.default_rng(seed).standard_normal((n_samples, 2, d_k))
    dots = (pairs[:, 0] * pairs[:, 1]).sum(-1)
    return float(((dots - dots.mean()) ** 2).mean())
''',
    },
    "softmax_jacobian": {
        "double_loop": '''
def softmax_jacobian(p):
    p = [float(v) for v in p]
    n = len(p)
    J = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            J[i, j] = p[i] * ((1.0 if i == j else 0.0) - p[j])
    return J
''',
        "einsum_with_identity": '''
def softmax_jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.einsum("i,ij->ij", p, np.eye(p.size) - p[None, :])
''',
        "diagflat_chatty": '''
def softmax_jacobian(p):
    import sys, warnings
    print("building the Jacobian", file=sys.stderr)
    warnings.warn("softmax_jacobian is chatty")
    p = np.asarray(p, dtype=np.float64)
    return np.diagflat(p) - p[:, None] * p[None, :]
''',
    },
    "scaled_dot_product_attention": {
        "loops_over_batches_and_rows": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], K.shape[-1]
    mask_batch = () if mask is None else np.shape(mask)[:-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], mask_batch)
    Q = np.broadcast_to(Q, batch + Q.shape[-2:])
    K = np.broadcast_to(K, batch + K.shape[-2:])
    V = np.broadcast_to(V, batch + V.shape[-2:])
    if mask is None:
        M = np.ones(batch + (T_q, T_k), dtype=bool)
    else:
        M = np.broadcast_to(np.asarray(mask, dtype=bool), batch + (T_q, T_k))
    A = np.zeros(batch + (T_q, T_k))
    O = np.zeros(batch + (T_q, V.shape[-1]))
    for b in np.ndindex(*batch):
        for i in range(T_q):
            seen = [j for j in range(T_k) if M[b][i, j]]
            if not seen:
                continue
            s = np.array([Q[b][i] @ K[b][j] for j in seen]) / np.sqrt(d_k)
            w = np.exp(s - s.max())
            w = w / w.sum()
            A[b][i, seen] = w
            O[b][i] = w @ V[b][seen]
    return O, A
''',
        "finite_fill_then_zero_blind_rows": '''
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(K.shape[-1])
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    scores = np.where(mask, scores, -1e300)
    A = softmax(scores) * mask.any(axis=-1, keepdims=True)
    A = np.where(mask, A, 0.0)
    return np.einsum("...qk,...kv->...qv", A, V), A
''',
    },
}
