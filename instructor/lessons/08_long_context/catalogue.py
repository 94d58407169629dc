"""Learner answers for lesson 08 (tiled_attention)."""
from catalogue import MEASUREMENTS

WRONG = {
    "tiled_attention": {
        # l keeps terms measured against an old, smaller max: they are too large.
        "no_rescale_of_running_sum": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q1 if causal else T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
            if causal:
                s = np.where(np.arange(k0, k1)[None, :] <= np.arange(q0, q1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            l = l + p.sum(axis=-1, keepdims=True)
            acc = np.exp(m - m_new) * acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
        "no_rescale_of_accumulator": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q1 if causal else T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
            if causal:
                s = np.where(np.arange(k0, k1)[None, :] <= np.arange(q0, q1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            l = np.exp(m - m_new) * l + p.sum(axis=-1, keepdims=True)
            acc = acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
        # range(0, T - B + 1, B) visits full blocks only.
        "drops_last_partial_block": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.zeros(batch + (T_q, V.shape[-1]))
    B = block_size
    for q0 in range(0, T_q - B + 1, B):
        m = np.full(batch + (B, 1), -np.inf)
        l = np.zeros(batch + (B, 1))
        acc = np.zeros(batch + (B, V.shape[-1]))
        for k0 in range(0, T_k - B + 1, B):
            if causal and k0 > q0:
                break
            s = Q[..., q0:q0 + B, :] @ np.swapaxes(K[..., k0:k0 + B, :], -1, -2) / np.sqrt(K.shape[-1])
            if causal:
                s = np.where(np.arange(k0, k0 + B)[None, :] <= np.arange(q0, q0 + B)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = c * l + p.sum(axis=-1, keepdims=True)
            acc = c * acc + p @ V[..., k0:k0 + B, :]
            m = m_new
        O[..., q0:q0 + B, :] = acc / l
    return O
''',
        # Skips the tiles after the diagonal but reads the diagonal tile whole.
        "causal_mask_by_block": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, T_k, block_size):
            if causal and k0 > q0:
                continue
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = c * l + p.sum(axis=-1, keepdims=True)
            acc = c * acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
        "scale_by_d_k": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q1 if causal else T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / K.shape[-1]
            if causal:
                s = np.where(np.arange(k0, k1)[None, :] <= np.arange(q0, q1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = c * l + p.sum(axis=-1, keepdims=True)
            acc = c * acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
        # Right values, but the whole score matrix exists: fails the memory check.
        "builds_full_score_matrix": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if causal:
        S = np.where(np.tril(np.ones((T_q, T_k), dtype=bool)), S, -np.inf)
    m = np.full(S.shape[:-1] + (1,), -np.inf)
    l = np.zeros_like(m)
    acc = np.zeros(S.shape[:-1] + (V.shape[-1],))
    for k0 in range(0, T_k, block_size):
        s = S[..., k0:k0 + block_size]
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m_new)
        c = np.exp(m - m_new)
        l = c * l + p.sum(axis=-1, keepdims=True)
        acc = c * acc + p @ V[..., k0:k0 + block_size, :]
        m = m_new
    return acc / l
''',
        # Right values, key blocks only, but the causal mask is one (T, T) boolean array.
        "builds_full_causal_mask": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    mask = np.tril(np.ones((T_q, T_k), dtype=bool)) if causal else None
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(batch + (T_q, 1), -np.inf)
    l = np.zeros(batch + (T_q, 1))
    acc = np.zeros(batch + (T_q, V.shape[-1]))
    for k0 in range(0, T_k, block_size):
        k1 = min(k0 + block_size, T_k)
        s = Q @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            s = np.where(mask[:, k0:k1], s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m_new)
        c = np.exp(m - m_new)
        l = c * l + p.sum(axis=-1, keepdims=True)
        acc = c * acc + p @ V[..., k0:k1, :]
        m = m_new
    return acc / l
''',
        # Plain running sums of exp(s): overflows once scores reach the hundreds.
        "no_running_max": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q1 if causal else T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
            if causal:
                s = np.where(np.arange(k0, k1)[None, :] <= np.arange(q0, q1)[:, None], s, -np.inf)
            p = np.exp(s)
            l = l + p.sum(axis=-1, keepdims=True)
            acc = acc + p @ V[..., k0:k1, :]
        O[..., q0:q1, :] = acc / l
    return O
''',
        # Each block normalised on its own, then the blocks' reads averaged.
        "softmax_per_block_then_average": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    total = np.zeros(batch + (T_q, V.shape[-1]))
    count = np.zeros((T_q, 1))
    for k0 in range(0, T_k, block_size):
        k1 = min(k0 + block_size, T_k)
        s = Q @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
        seen = np.ones((T_q, 1), dtype=bool)
        if causal:
            visible = np.arange(k0, k1)[None, :] <= np.arange(T_q)[:, None]
            s = np.where(visible, s, -np.inf)
            seen = visible.any(axis=-1, keepdims=True)
        w = np.exp(s - np.where(seen, s.max(axis=-1, keepdims=True), 0.0))
        w = w / np.where(seen, w.sum(axis=-1, keepdims=True), 1.0)
        total = total + w @ V[..., k0:k1, :]
        count = count + seen
    return total / count
''',
        # Scales Q in place: the caller's array changes.
        "scales_Q_in_place": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q = np.asarray(Q, dtype=float)
    K, V = np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    Q /= np.sqrt(K.shape[-1])
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q1 if causal else T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2)
            if causal:
                s = np.where(np.arange(k0, k1)[None, :] <= np.arange(q0, q1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = c * l + p.sum(axis=-1, keepdims=True)
            acc = c * acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
        "strict_causal_boundary": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q1 if causal else T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
            if causal:
                s = np.where(np.arange(k0, k1)[None, :] < np.arange(q0, q1)[:, None], s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = c * l + p.sum(axis=-1, keepdims=True)
            acc = c * acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
        # Ignores block_size: one query's whole row of scores at a time, an exact softmax of it.
        "row_at_a_time_ignores_block_size": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for i in range(T_q):
        s = Q[..., i:i + 1, :] @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            s[..., i + 1:] = -np.inf
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        O[..., i:i + 1, :] = (w / w.sum(axis=-1, keepdims=True)) @ V
    return O
''',
        # Cuts the queries into blocks but reads every key of a block at once (a strip of scores).
        "query_blocks_with_all_keys": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        last = q1 if causal else T_k
        s = Q[..., q0:q1, :] @ np.swapaxes(K[..., :last, :], -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            s = np.where(np.arange(last)[None, :] <= np.arange(q0, q1)[:, None], s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        O[..., q0:q1, :] = (p / p.sum(axis=-1, keepdims=True)) @ V[..., :last, :]
    return O
''',
        "skips_the_diagonal_tile": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.empty(batch + (T_q, V.shape[-1]))
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        m = np.full(batch + (q1 - q0, 1), -np.inf)
        l = np.zeros(batch + (q1 - q0, 1))
        acc = np.zeros(batch + (q1 - q0, V.shape[-1]))
        for k0 in range(0, q0 if causal else T_k, block_size):     # stops before the diagonal tile
            k1 = min(k0 + block_size, T_k)
            s = Q[..., q0:q1, :] @ np.swapaxes(K[..., k0:k1, :], -1, -2) / np.sqrt(K.shape[-1])
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            l = c * l + p.sum(axis=-1, keepdims=True)
            acc = c * acc + p @ V[..., k0:k1, :]
            m = m_new
        O[..., q0:q1, :] = acc / l
    return O
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "tiled_attention": {
        "no_rescale_of_running_sum": ("running sum l is not multiplied",),
        "no_rescale_of_accumulator": ("accumulator is not multiplied",),
        "drops_last_partial_block": ("partial block",),
        "causal_mask_by_block": ("by block",),
        "scale_by_d_k": ("d_k instead of √d_k",),
        "builds_full_score_matrix": ("t²", "float64"),
        "builds_full_causal_mask": ("t²",),
        "builds_causal_mask_by_comparison": ("t²",),
        "builds_mask_of_every_pair": ("t²", "boolean", "causal=false"),
        "no_running_max": ("nothing is subtracted",),
        "softmax_per_block_then_average": ("own softmax",),
        "scales_Q_in_place": ("in place", "argument q"),
        "strict_causal_boundary": ("j < i",),
        "skips_the_diagonal_tile": ("diagonal tile is skipped",),
        "rescale_exponent_flipped": ('upside down',),
        "running_max_from_zero": ("starts at 0 instead of −∞",),
        "batch_shape_from_the_keys": ("batch shape every input broadcasts to",),
        "row_at_a_time_ignores_block_size": ("all t_k keys of a query at once",),
        "query_blocks_with_all_keys": ("all t_k keys of a query at once",),
        "scale_by_sqrt_d_v": ("√d_v instead of √d_k",),
        "keys_transposed_with_dot_T": (".t reverses every axis",),
        "output_in_the_inputs_dtype": ("dtype int64", "float64"),
        "keys_counted_with_T_q": ("stops at t_q",),
        "array_split_into_T_over_B_parts": ("asks for 0 parts",),
    },
}


_FIRST = "T = 10, d_k = 6, d_v = 5, block_size = 3 (3 does not divide 10)"

#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "tiled_attention": [
        ("never build a `(T_q, T_k)` array, not even a mask", MEASUREMENTS, "builds_full_causal_mask"),
        ("never build a `(T_q, T_k)` array, not even a mask", MEASUREMENTS, "builds_mask_of_every_pair"),
        ("blocks that do not divide `T`", "T = 10, d_k = 6, d_v = 5, block_size = 3 (3 does not divide 10)",
         "drops_last_partial_block"),
        ("position `i` reads positions `j <= i`", "causal, T = 10, block_size = 3", "causal_mask_by_block"),
        ("**Rescale both running quantities**", "keys that grow along the sequence (each block raises the max), "
         "block_size = 3", "no_running_max"),
        ("do not change `Q`, `K` or `V`", "T = 10, d_k = 6, d_v = 5, block_size = 3 (3 does not divide 10)",
         "scales_Q_in_place"),
        ("process at most `block_size` keys", MEASUREMENTS, "row_at_a_time_ignores_block_size"),
        ("`softmax(Q Kᵀ / √d_k) V`", _FIRST, "scale_by_d_k"),
        ("with an\n  online softmax", _FIRST, "softmax_per_block_then_average"),
        ("`block_size >= T` (a single\n  block)", "T = 10, block_size = 64 (one block holds every key)",
         "array_split_into_T_over_B_parts"),
        ("leading batch dimensions (`Q[..., a:b, :]` slices the token axis whatever comes before)",
         "causal with a batch: Q, K of shape (2, 9, 6), V of shape (2, 9, 4), block_size = 4", "keys_transposed_with_dot_T"),
        ("`T_q != T_k` when not causal", "T_q = 5 queries reading T_k = 13 keys, batch (2,), d_k = 9, block_size = 4",
         "keys_counted_with_T_q"),
        ("`d_k != d_v`", _FIRST, "scale_by_sqrt_d_v"),
        ("integer inputs", "integer Q, K, V of shape (6, 3), block_size = 4", "output_in_the_inputs_dtype"),
        ("Start with $m = -\\infty$", "a query whose every score lies below −1e3 and one whose every score lies "
         "above +1e3 (the running max starts at −∞, not 0), block_size = 3", "running_max_from_zero"),
        ("one `K` and `V` without a batch axis may serve a whole batch of\nqueries",
         "a batch (3,) of queries, T_q = 5, reading one K (11, 6) and V (11, 4) without a batch axis (they "
         "broadcast), block_size = 4", "batch_shape_from_the_keys"),
    ],
}

CORRECT = {
    "tiled_attention": {
        # All queries at once, one block of keys at a time (memory grows like T·B, still < 13.4 MB).
        "key_blocks_only": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = np.asarray(Q, float), np.asarray(K, float), np.asarray(V, float)
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    running_max = np.full(batch + (T_q, 1), -np.inf)
    running_sum = np.zeros(batch + (T_q, 1))
    blend = np.zeros(batch + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    start = 0
    while start < T_k:
        stop = min(start + block_size, T_k)
        scores = np.einsum("...qd,...kd->...qk", Q, K[..., start:stop, :]) / np.sqrt(K.shape[-1])
        if causal:
            scores[..., np.arange(start, stop)[None, :] > rows] = -np.inf
        new_max = np.maximum(running_max, scores.max(axis=-1, keepdims=True))
        weights = np.exp(scores - new_max)
        shrink = np.exp(running_max - new_max)
        running_sum = running_sum * shrink + weights.sum(axis=-1, keepdims=True)
        blend = blend * shrink + np.einsum("...qk,...kd->...qd", weights, V[..., start:stop, :])
        running_max = new_max
        start = stop
    return blend / running_sum
''',
        # Keeps the normalised output and the log of the sum (log-sum-exp) instead of m and l.
        "running_logsumexp": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = np.zeros(batch + (T_q, d_v))
    for i0 in range(0, T_q, block_size):
        i1 = min(T_q, i0 + block_size)
        lse = np.full(batch + (i1 - i0, 1), -np.inf)          # log of the running sum
        o = np.zeros(batch + (i1 - i0, d_v))                  # already-normalised read
        for j0 in range(0, T_k, block_size):
            if causal and j0 >= i1:
                break
            j1 = min(T_k, j0 + block_size)
            s = Q[..., i0:i1, :] @ np.swapaxes(K[..., j0:j1, :], -1, -2) / np.sqrt(K.shape[-1])
            if causal:
                s = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None], s, -np.inf)
            top = s.max(axis=-1, keepdims=True)
            block_lse = top + np.log(np.exp(s - top).sum(axis=-1, keepdims=True))
            new_lse = np.logaddexp(lse, block_lse)
            o = o * np.exp(lse - new_lse) + np.exp(s - new_lse) @ V[..., j0:j1, :]
            lse = new_lse
        out[..., i0:i1, :] = o
    return out
''',
        # Builds one tile at a time with einsum and talks a lot on stderr and through warnings.
        "chatty_einsum_tiles": '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    import sys, warnings
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    print(f"tiled attention with block_size={block_size}", file=sys.stderr)
    warnings.warn("this implementation is chatty")
    T_q, T_k = Q.shape[-2], K.shape[-2]
    scale = K.shape[-1] ** -0.5
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    O = np.zeros(batch + (T_q, V.shape[-1]))
    for a in range(0, T_q, block_size):
        b = min(a + block_size, T_q)
        m = np.full(batch + (b - a,), -np.inf)
        l = np.zeros(batch + (b - a,))
        acc = np.zeros(batch + (b - a, V.shape[-1]))
        for c in range(0, T_k, block_size):
            e = min(c + block_size, T_k)
            s = np.einsum("...id,...jd->...ij", Q[..., a:b, :], K[..., c:e, :]) * scale
            if causal:
                s = s + np.where(np.arange(c, e) <= np.arange(a, b)[:, None], 0.0, -np.inf)
            m_new = np.fmax(m, s.max(axis=-1))
            with np.errstate(invalid="warn"):
                p = np.exp(s - m_new[..., None])
                p = np.nan_to_num(p, nan=0.0)
                factor = np.nan_to_num(np.exp(m - m_new), nan=0.0)
            l = l * factor + p.sum(axis=-1)
            acc = acc * factor[..., None] + np.einsum("...ij,...jd->...id", p, V[..., c:e, :])
            m = m_new
        O[..., a:b, :] = acc / l[..., None]
    return O
''',
    },
}


# The correction upside down, exp(m_new − m_old): inf at the first block, and NaN from there on.
# The leanest full causal mask: one (T, T) boolean comparison, nothing else of size T × T.
WRONG["tiled_attention"]["builds_causal_mask_by_comparison"] = WRONG["tiled_attention"]["builds_full_causal_mask"].replace(
    "mask = np.tril(np.ones((T_q, T_k), dtype=bool)) if causal else None",
    "mask = (np.arange(T_q)[:, None] >= np.arange(T_k)) if causal else None")
# A boolean mask of every (query, key) pair in both calls (all True when not causal): the causal call
# takes no more than the full one, so only the growth from the short length to the long one shows it.
WRONG["tiled_attention"]["builds_mask_of_every_pair"] = WRONG["tiled_attention"]["builds_full_causal_mask"].replace(
    "mask = np.tril(np.ones((T_q, T_k), dtype=bool)) if causal else None",
    "mask = (np.arange(T_q)[:, None] >= np.arange(T_k)) if causal else np.ones((T_q, T_k), dtype=bool)").replace(
    "        if causal:\n            s = np.where(mask[:, k0:k1], s, -np.inf)", "        s = np.where(mask[:, k0:k1], s, -np.inf)")
WRONG["tiled_attention"]["rescale_exponent_flipped"] = CORRECT["tiled_attention"]["key_blocks_only"].replace(
    "shrink = np.exp(running_max - new_max)", "shrink = np.exp(new_max - running_max)")
# The other widths: scaled by the values' width, d_v, where d_k = K.shape[-1] is asked.
WRONG["tiled_attention"]["scale_by_sqrt_d_v"] = WRONG["tiled_attention"]["scale_by_d_k"].replace(
    "/ K.shape[-1]", "/ np.sqrt(V.shape[-1])")
# K[..., a:b, :].T reverses the batch axes too: right for one sequence only.
WRONG["tiled_attention"]["keys_transposed_with_dot_T"] = WRONG["tiled_attention"]["scale_by_d_k"].replace(
    "/ K.shape[-1]", "/ np.sqrt(K.shape[-1])").replace("np.swapaxes(K[..., k0:k1, :], -1, -2)", "K[..., k0:k1, :].T")
# Inputs kept as given and the output made in the queries' dtype: integer inputs give integer outputs.
WRONG["tiled_attention"]["output_in_the_inputs_dtype"] = WRONG["tiled_attention"]["scale_by_d_k"].replace(
    "/ K.shape[-1]", "/ np.sqrt(K.shape[-1])").replace(
    "Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))", "Q, K, V = (np.asarray(a) for a in (Q, K, V))").replace(
    "O = np.empty(batch + (T_q, V.shape[-1]))", "O = np.empty(batch + (T_q, V.shape[-1]), dtype=Q.dtype)")
# The key loop runs to T_q, the number of queries, as if there were as many keys.
WRONG["tiled_attention"]["keys_counted_with_T_q"] = WRONG["tiled_attention"]["scale_by_d_k"].replace(
    "/ K.shape[-1]", "/ np.sqrt(K.shape[-1])").replace(
    "for k0 in range(0, q1 if causal else T_k, block_size):", "for k0 in range(0, q1 if causal else T_q, block_size):")
# The keys cut into T // block_size parts with np.array_split: no part at all once block_size > T.
WRONG["tiled_attention"]["array_split_into_T_over_B_parts"] = '''
def tiled_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k = Q.shape[-2], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(batch + (T_q, 1), -np.inf)
    l = np.zeros(batch + (T_q, 1))
    acc = np.zeros(batch + (T_q, V.shape[-1]))
    rows = np.arange(T_q)[:, None]
    parts = T_k // block_size
    start = 0
    for K_part, V_part in zip(np.array_split(K, parts, axis=-2), np.array_split(V, parts, axis=-2)):
        stop = start + K_part.shape[-2]
        s = Q @ np.swapaxes(K_part, -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            s = np.where(np.arange(start, stop)[None, :] <= rows, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m_new)
        c = np.exp(m - m_new)
        l = c * l + p.sum(axis=-1, keepdims=True)
        acc = c * acc + p @ V_part
        m = m_new
        start = stop
    return acc / l
'''
# The running max starts at 0, not −inf: right while every row has a score above about −745.
WRONG["tiled_attention"]["running_max_from_zero"] = CORRECT["tiled_attention"]["key_blocks_only"].replace(
    "running_max = np.full(batch + (T_q, 1), -np.inf)", "running_max = np.zeros(batch + (T_q, 1))")
# The output's batch shape read from the keys: the rows of a batch of queries sharing one K and V
# do not fit in it.
WRONG["tiled_attention"]["batch_shape_from_the_keys"] = WRONG["tiled_attention"]["scale_by_d_k"].replace(
    "/ K.shape[-1]", "/ np.sqrt(K.shape[-1])").replace(
    "batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])", "batch = K.shape[:-2]")
