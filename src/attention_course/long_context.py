"""Measuring what attention costs (lesson 08): wall-clock time and peak memory of one call.

Both helpers call the function exactly as given and return its result too, so a lesson can
check the answer it timed. Memory is measured with ``tracemalloc``, which sees every NumPy
array allocated during the call; arrays that existed before the call are not counted.
"""
import time
import tracemalloc


def peak_memory(fn, *args, **kwargs):
    """``(result, peak)``: ``fn(*args, **kwargs)`` and the most bytes it held at once during the call.

    The peak counts everything allocated inside the call that was alive at the worst moment,
    including the returned array; inputs created beforehand are not counted.
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, peak - before


def best_time(fn, *args, repeats=2, **kwargs):
    """``(result, seconds)``: the shortest wall-clock time of ``repeats`` calls of ``fn``.

    The shortest run is the one least disturbed by whatever else the machine was doing.
    """
    best, result = float("inf"), None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return result, best


def key_block_problem(own, batch, T_q, T_k, block_size, counted):
    """Why ``own`` bytes are more than tiled attention needs for a batch of ``batch`` sequences of
    ``T_q`` queries reading ``T_k`` keys that the batch shares, in blocks of ``block_size`` keys, or
    None (``counted``: how the bytes were counted). A tiled pass holds tiles of (batch, T_q,
    block_size) scores; one that takes all T_k keys of a query at once holds at least one float64
    score for every key, for one query of each sequence: past half of that, it fails. The visible
    check of lesson 08 and its hidden test say it in these words."""
    one, tile = 8 * batch * T_k, 8 * batch * T_q * block_size
    if own <= one / 2:
        return None
    return (f"With a batch of {batch} sequences of T_q = {T_q} queries reading T_k = {T_k:,} keys that the batch "
            f"shares (K and V without a batch axis) and block_size = {block_size}, your tiled_attention took "
            f"{own / 1e6:.1f} MB {counted}; one float64 score for every key, for one query of each sequence, takes "
            f"{one / 1e6:.1f} MB, a tile of block_size keys for every query {tile / 1e6:.2f} MB: it processes all "
            "T_k keys of a query at once: use blocks of block_size keys.")


def online_softmax_mistakes(Q, K, V, block_size, causal=False):
    """What tiled attention returns when the rescaling step is forgotten, as ``(mistake, O)`` pairs.

    For the visible checks of lesson 08, which use them to name a mistake: each pair completes
    the sentence "your output is exactly what you get when ...". Small inputs only (it builds the
    T_q × T_k scores). The keys are cut into blocks of ``block_size``; ``m_j`` is the running max
    just after the block holding key j, and ``m`` the final max.
    """
    import numpy as np

    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])          # (..., T_q, T_k)
    T_q, T_k = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((T_q, T_k), dtype=bool)), s, -np.inf)
    starts = list(range(0, T_k, block_size))
    block_max = np.stack([s[..., a:a + block_size].max(axis=-1) for a in starts], axis=-1)
    running = np.maximum.accumulate(block_max, axis=-1)            # (..., T_q, n_blocks)
    m_j = np.repeat(running, block_size, axis=-1)[..., :T_k]        # (..., T_q, T_k)
    m = running[..., -1:]                                           # (..., T_q, 1)
    right = np.exp(s - m)                                           # every term relative to the final max
    stale = np.exp(s - m_j)                                         # each term relative to its block's max
    l, l_stale = right.sum(axis=-1, keepdims=True), stale.sum(axis=-1, keepdims=True)
    acc, acc_stale = right @ V, stale @ V
    upside_down = []
    with np.errstate(over="ignore"):
        if np.isfinite(np.exp(s[np.isfinite(s)])).all():   # NaN everywhere is then this mistake, not an overflow
            upside_down = [("the correction is upside down, exp(m_new − m_old): at the first block m_old = −inf, "
                            "so it is exp(+inf) = inf, and inf · 0 is NaN. It must be exp(m_old − m_new) ≤ 1",
                            np.full(acc.shape, np.nan))]
    return upside_down + [
        ("the running sum l is not multiplied by exp(m_old − m_new) when a block raises the max",
         acc / l_stale),
        ("the accumulator is not multiplied by exp(m_old − m_new) when a block raises the max",
         acc_stale / l),
        ("neither the running sum nor the accumulator is rescaled when a block raises the max",
         acc_stale / l_stale),
    ]


def tiled_attention_mistakes(Q, K, V, block_size, causal=False):
    """Common wrong answers of tiled attention on small inputs, as ``(mistake, O)`` pairs.

    For the visible checks of lesson 08: wrong scale, a skipped last partial block (of keys or
    of queries), causal masks with the wrong boundary (by block, j < i, the diagonal tile left
    out), no running max or one that starts at 0, and the forgotten rescalings of :func:`online_softmax_mistakes`. Each
    output is computed directly (it builds the T_q × T_k scores, so keep the inputs small). A row
    that a mistake leaves with nothing to read is NaN (0/0), as it is in a tiled loop. Mistakes
    that give the right answer on these inputs are left out: they cannot be told apart here.
    """
    import numpy as np

    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k, d_k, d_v = Q.shape[-2], K.shape[-2], K.shape[-1], V.shape[-1]
    i, j = np.arange(T_q)[:, None], np.arange(T_k)[None, :]

    def attend(Q, K, V, visible=None, divisor=np.sqrt(d_k), shift=True, max_from=-np.inf):
        s = Q @ np.swapaxes(K, -1, -2) / divisor                     # (..., T_q, T_k)
        if visible is not None:
            s = np.where(visible, s, -np.inf)
        with np.errstate(all="ignore"):
            top = np.maximum(s.max(axis=-1, keepdims=True), max_from)   # a running max that started at max_from
            w = np.exp(s - top) if shift else np.exp(s)
            return (w / w.sum(axis=-1, keepdims=True)) @ V           # (..., T_q, d_v)

    visible = (j <= i) if causal else None
    right = attend(Q, K, V, visible)
    full_blocks = (T_k // block_size) * block_size
    mistakes = [
        ("the scores are not divided by √d_k", attend(Q, K, V, visible, 1.0)),
        ("the scores are divided by d_k instead of √d_k", attend(Q, K, V, visible, float(d_k))),
        ("the scores are divided by √d_v instead of √d_k (d_k = K.shape[-1])",
         attend(Q, K, V, visible, np.sqrt(d_v))),
        ("nothing is subtracted before exp(): exp() of scores in the hundreds overflows to inf, and "
         "inf / inf is NaN (keep a running max and subtract it)", attend(Q, K, V, visible, shift=False)),
        ("the running max starts at 0 instead of −∞: a query whose every score lies below about −745 gets "
         "exp() = 0 for every key, and 0 / 0 is NaN (start it at -np.inf, which the first block replaces)",
         attend(Q, K, V, visible, max_from=0.0)),
    ]
    if 0 < full_blocks < T_k:
        cut = None if visible is None else visible[:, :full_blocks]
        mistakes.append(("the last, partial block of keys is skipped (the loop stops at the last "
                         "full block: use stop = min(start + block_size, T))",
                         attend(Q, K[..., :full_blocks, :], V[..., :full_blocks, :], cut)))
    reached = min(-(-T_q // block_size) * block_size, T_k)           # key blocks up to the last query's block
    if not causal and reached < T_k:
        mistakes.append(("the loop over keys stops at T_q, the number of queries: the keys run to T_k = K.shape[-2]",
                         attend(Q, K[..., :reached, :], V[..., :reached, :])))
    if (T_q // block_size) * block_size < T_q:
        rows_missing = right.copy()
        rows_missing[..., (T_q // block_size) * block_size:, :] = 0.0
        mistakes.append(("the last, partial block of queries is never computed, so its rows stay 0",
                         rows_missing))
    if causal:
        mistakes += [
            ("the causal mask is applied by block, not by position: a query also reads the later keys "
             "of its own block (mask with j <= i inside the diagonal tile)",
             attend(Q, K, V, j // block_size <= i // block_size)),
            ("the causal boundary is j < i: a position must also read itself (j <= i), and the first "
             "one then has nothing to read at all (0/0)", attend(Q, K, V, j < i)),
            ("the diagonal tile is skipped: the key loop stops before the tile the diagonal runs "
             "through, so the first block of queries reads nothing (0/0) and every query misses the "
             "keys of its own block", attend(Q, K, V, j < (i // block_size) * block_size)),
        ]
    reads, seen = [], []
    for start in range(0, T_k, block_size):                          # each block normalised on its own
        stop = min(start + block_size, T_k)
        block_visible = None if visible is None else visible[:, start:stop]
        reads.append(np.nan_to_num(attend(Q, K[..., start:stop, :], V[..., start:stop, :], block_visible)))
        seen.append(np.ones((T_q, 1)) if visible is None else visible[:, start:stop].any(axis=-1, keepdims=True))
    if len(reads) > 1:
        mistakes.append(("each block of keys gets its own softmax and the blocks' reads are averaged: the "
                         "blocks must share one softmax, through the running max and the running sum",
                         sum(reads) / sum(seen)))
    mistakes += online_softmax_mistakes(Q, K, V, block_size, causal)
    return [(e, o) for e, o in mistakes if not np.allclose(o, right, rtol=1e-9, atol=1e-12, equal_nan=True)]
