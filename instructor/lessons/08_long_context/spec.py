"""Hidden tests of lesson 08: ``tiled_attention`` (values on awkward cases, and peak memory: no
T × T array, and blocks of ``block_size`` keys)."""
import numpy as np
from attention_course.long_context import key_block_problem

from ..judge import describe
from ..spec import Bug, Call, Case, Spec, register

# The memory check: the memory the sandbox takes during a call (measured by the grader from
# outside the kernel, sandbox.meter), at a short and a long length drawn per submission; from one
# to the other it must grow in proportion to the length (a copy of Q, K and V, a (T, block_size)
# strip of scores, the running numbers of every query), not like a T × T array. What the long
# length takes beyond the ratio of the lengths times what the short one took grows faster than in
# proportion; a T × T array of booleans adds long² − ratio · short² = long · (long − short) bytes
# to it (6.3 MB at the least, from T = 1024 to T = 3072), and more than half of that fails.
# Each length's calls run in a fresh kernel of their own (kernels/measurement.py): first a warm-up call
# on one block (WARM_UP_LENGTH tokens), then the full call, then the causal one. The meter is never
# reset there, so each figure is the most the sandbox took since the meter started, and the causal
# figure is at least the full one: memory the full call left behind cannot hide a T × T array the
# causal call builds. A length's figure is the most either of its calls took. What the first call
# in a fresh kernel takes whatever T (the probe's messages, a heap grown again: 1.3-2.1 MB
# measured) would, multiplied by the ratio of the lengths, hide a T × T array; taken off as a
# fixed guess, it made a lean answer's short length read 0 where there was no such overhead (a
# process already warm). So the warm-up call measures it in each kernel, and that figure, up to
# WARM_UP_CAP, is taken off its kernel's figure; a warm-up that takes more earns nothing beyond
# it. At the long length the causal call may exceed the full one by no more than half a T × T
# array of booleans: a causal mask is caught within one length, where no ratio multiplies the
# short call's figure. A short length that takes more than it needs earns no more credit than
# CREDIT_CAP T × T bytes at the long length, less than one T × T float64 array (8), which still
# fails.
SHORT_LENGTHS, LONG_LENGTHS = (640, 1024), (3072, 4096)      # ranges the two lengths are drawn from
MEMORY_D, MEMORY_BLOCK = 16, 64
WARM_UP_LENGTH = MEMORY_BLOCK                                # one block of queries and keys
SPOT_ROWS = 7                                                # rows checked against a direct softmax
CREDIT_CAP = 7                                               # bytes per T × T pair (see above)
WARM_UP_CAP = 3_000_000                                      # bytes (see above)
CALL_OVERHEAD = 1_000_000                                    # bytes the key-block call may take whatever its size

# The key-block check: a batch of sequences, each of a few queries, reading many keys that the whole
# batch shares (K and V without a batch axis: they broadcast, as with @), with small blocks. A tiled
# pass holds tiles of (batch, T_q, block_size) scores; one that takes all T_k keys of a query at once
# (a row of scores at a time, or a block of queries against every key) holds at least batch × T_k
# float64 scores (``long_context.key_block_problem``): 12.6 MB and more, where the inputs hold
# T_k × (d_k + d_v) numbers, under 1 MB. What the call takes beyond CALL_OVERHEAD and INPUT_COPIES
# times its inputs (the probe's message, the bytes it decodes, the arrays) fails past half of that.
# The sizes are drawn per submission, in these ranges; the call runs in a fresh kernel of its own.
FEW_BATCH, FEW_QUERIES, MANY_KEYS = (96, 160), (1, 4), (16_384, 24_576)
FEW_D_K, FEW_D_V, SMALL_BLOCKS = (2, 3), (1, 2), (8, 24)
INPUT_COPIES = 4


def tiled_cases(g):

    def qkv(T_q, T_k, d_k, d_v, batch=(), spread=3.0):
        return (spread * g.normal(size=batch + (T_q, d_k)),
                spread * g.normal(size=batch + (T_k, d_k)),
                g.normal(size=batch + (T_k, d_v)))

    # Keys grow along the sequence, so nearly every new block raises the running max.
    T = 13
    rising_K = g.normal(size=(T, 4)) * np.linspace(1.0, 60.0, T)[:, None]
    rising_Q, rising_V = 20.0 * g.normal(size=(T, 4)), g.normal(size=(T, 3))
    # The largest key comes first: later blocks never raise the max, they only add to the sum.
    falling_K = rising_K[::-1].copy()
    # Scores of size ~1e4 in both directions.
    huge_Q, huge_K = 100.0 * g.normal(size=(9, 4)), 100.0 * g.normal(size=(9, 4))
    huge_V = g.normal(size=(9, 5))
    # One query whose every score lies below -1e3 (exp of each is 0 in float64: a running max that
    # starts at 0 instead of -inf leaves 0 / 0), one whose every score lies above +1e3 (exp overflows
    # unless the max is subtracted), the others ordinary.
    far_K = g.normal(size=(9, 4))
    far_K[:, 0] = g.uniform(5.0, 10.0, size=9)
    far_Q = g.normal(size=(6, 4))
    far_Q[[1, 4], 0] = [-g.uniform(400.0, 600.0), g.uniform(400.0, 600.0)]
    far_Q[[1, 4], 1:] = 0.1 * g.normal(size=(2, 3))
    far_Q = far_Q[g.permutation(6)]
    return [
        Case("T = 10, d_k = 6, d_v = 5, block_size = 3 (3 does not divide 10)",
             qkv(10, 10, 6, 5), {"block_size": 3}),
        Case("T = 7, block_size = 1 (one key at a time)", qkv(7, 7, 6, 4), {"block_size": 1}),
        Case("T = 10, block_size = 64 (one block holds every key)", qkv(10, 10, 6, 5), {"block_size": 64}),
        Case("T = 8, block_size = 8 (exactly one full block)", qkv(8, 8, 9, 3), {"block_size": 8}),
        Case("T = 150, d_k = 9, d_v = 4 with the default block_size (64, 64 and a last block of 22)",
             qkv(150, 150, 9, 4, spread=2.0)),
        Case("causal, T = 10, block_size = 3", qkv(10, 10, 6, 5), {"block_size": 3, "causal": True}),
        Case("causal, T = 7, block_size = 16 (one block: the mask must work inside it)",
             qkv(7, 7, 6, 4), {"block_size": 16, "causal": True}),
        Case("causal, T = 6, block_size = 1", qkv(6, 6, 6, 2), {"block_size": 1, "causal": True}),
        Case("causal with a batch: Q, K of shape (2, 9, 6), V of shape (2, 9, 4), block_size = 4",
             qkv(9, 9, 6, 4, batch=(2,)), {"block_size": 4, "causal": True}),
        Case("T_q = 5 queries reading T_k = 13 keys, batch (2,), d_k = 9, block_size = 4",
             qkv(5, 13, 9, 4, batch=(2,)), {"block_size": 4}),
        Case("T_q = 12 queries reading T_k = 5 keys, block_size = 2", qkv(12, 5, 6, 3), {"block_size": 2}),
        Case("a batch (3,) of queries, T_q = 5, reading one K (11, 6) and V (11, 4) without a batch axis (they "
             "broadcast), block_size = 4", (g.normal(size=(3, 5, 6)), g.normal(size=(11, 6)), g.normal(size=(11, 4))),
             {"block_size": 4}),
        Case("two batch dimensions (2, 3), T = 8, causal, block_size = 3",
             qkv(8, 8, 6, 5, batch=(2, 3)), {"block_size": 3, "causal": True}),
        Case("keys that grow along the sequence (each block raises the max), block_size = 3",
             (rising_Q, rising_K, rising_V), {"block_size": 3}),
        Case("keys that grow along the sequence, causal, block_size = 4",
             (rising_Q, rising_K, rising_V), {"block_size": 4, "causal": True}),
        Case("the largest key comes first (the max never rises), block_size = 3",
             (rising_Q, falling_K, rising_V), {"block_size": 3}),
        Case("a query whose every score lies below −1e3 and one whose every score lies above +1e3 (the running "
             "max starts at −∞, not 0), block_size = 3", (far_Q, far_K, g.normal(size=(9, 3))), {"block_size": 3}),
        Case("scores of about ±1e4, block_size = 2", (huge_Q, huge_K, huge_V), {"block_size": 2}),
        Case("scores of about ±1e4, causal, block_size = 4", (huge_Q, huge_K, huge_V),
             {"block_size": 4, "causal": True}),
        Case("integer Q, K, V of shape (6, 3), block_size = 4",
             tuple(g.integers(-3, 4, size=(6, 3)) for _ in range(3)), {"block_size": 4}),
    ]


# ---------------------------------------------------------------- catalogued mistakes

def _tiled_variant(Q, K, V, block_size=64, causal=False, *, scale="sqrt_dk", shift=True,
                   rescale_sum=True, rescale_acc=True, drop_last_keys=False,
                   drop_last_queries=False, causal_by="position", first_max=-np.inf, keys_to_T_q=False):
    """Tiled attention over key blocks with one mistake switched on (all rows at once)."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_q, T_k, d_k, d_v = Q.shape[-2], K.shape[-2], K.shape[-1], V.shape[-1]
    factor = {"sqrt_dk": d_k ** -0.5, "none": 1.0, "dk": 1.0 / d_k, "sqrt_dv": d_v ** -0.5}[scale]
    B = block_size
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full(batch + (T_q, 1), first_max)                       # (..., T_q, 1)
    l = np.zeros(batch + (T_q, 1))                                 # (..., T_q, 1)
    acc = np.zeros(batch + (T_q, d_v))                             # (..., T_q, d_v)
    i = np.arange(T_q)[:, None]                                    # (T_q, 1)
    stop_at = T_k - B + 1 if drop_last_keys else min(T_q, T_k) if keys_to_T_q else T_k
    for start in range(0, max(stop_at, 0), B):
        stop = min(start + B, T_k)
        s = Q @ np.swapaxes(K[..., start:stop, :], -1, -2) * factor    # (..., T_q, b)
        j = np.arange(start, stop)[None, :]                             # (1, b)
        if causal:
            # by block: key block [start, stop) is read whole by every query i >= start,
            # which is the same as "key block index <= query block index".
            visible = (j <= i) if causal_by == "position" else np.broadcast_to(start <= i, (T_q, stop - start))
            s = np.where(visible, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True)) if shift else np.zeros_like(m)
        safe = np.where(np.isfinite(m_new), m_new, 0.0)
        p = np.exp(s - safe)                                            # (..., T_q, b)
        c = np.exp(np.where(np.isfinite(m), m, safe) - safe)            # (..., T_q, 1)
        l = (l * c if rescale_sum else l) + p.sum(axis=-1, keepdims=True)
        acc = (acc * c if rescale_acc else acc) + p @ V[..., start:stop, :]
        m = m_new
    O = acc / l
    if drop_last_queries:
        O[..., (T_q // B) * B:, :] = 0.0
    return O


def _bug(**mistake):
    return lambda R, Q, K, V, block_size=64, causal=False: _tiled_variant(
        Q, K, V, block_size, causal, **mistake)


def _per_block_softmax_averaged(R, Q, K, V, block_size=64, causal=False):
    """Per-block softmax, normalised inside each block and then averaged: no running max at all."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T_k = K.shape[-2]
    O, n = 0.0, 0
    for start in range(0, T_k, block_size):
        mask = None
        if causal:
            mask = np.arange(start, min(start + block_size, T_k))[None, :] <= np.arange(Q.shape[-2])[:, None]
        O = O + R.scaled_dot_product_attention(Q, K[..., start:start + block_size, :],
                                               V[..., start:start + block_size, :], mask)[0]
        n += 1
    return O / n


BUGS = (
    Bug("the running sum l is not rescaled by exp(m_old − m_new) when a block raises the running max",
        _bug(rescale_sum=False)),
    Bug("the accumulator of weighted values is not rescaled by exp(m_old − m_new) when a block raises "
        "the running max", _bug(rescale_acc=False)),
    Bug("neither the running sum nor the accumulator is rescaled when the running max rises",
        _bug(rescale_sum=False, rescale_acc=False)),
    Bug("the last, partial block of keys is skipped (the loop stops at the last full block)",
        _bug(drop_last_keys=True)),
    Bug("the last, partial block of queries is never computed, so its rows stay 0",
        _bug(drop_last_queries=True)),
    Bug("the last partial blocks of both queries and keys are skipped",
        _bug(drop_last_keys=True, drop_last_queries=True)),
    Bug("the causal mask is applied by block, not by position: a key block is read whole once it "
        "starts at or before the query, so inside the diagonal block a query also reads later keys "
        "(mask with j <= i per position)",
        _bug(causal_by="block")),
    Bug("the scores are not divided by √d_k", _bug(scale="none")),
    Bug("the scores are divided by d_k instead of √d_k", _bug(scale="dk")),
    Bug("the scores are divided by √d_v instead of √d_k (d_k = K.shape[-1])", _bug(scale="sqrt_dv")),
    Bug("each block's softmax is normalised on its own and the blocks' reads are averaged, instead of "
        "keeping one running max and one running sum across blocks", _per_block_softmax_averaged),
    Bug("the loop over keys stops at T_q, the number of queries: the keys run to T_k = K.shape[-2]",
        _bug(keys_to_T_q=True)),
    Bug("the running max starts at 0 instead of −∞: a query whose every score lies below about −745 gets "
        "exp() = 0 for every key, and 0 / 0 is NaN", _bug(first_max=0.0)),
)


# ---------------------------------------------------------------- memory that grows like T, not T²

def memory_calls(g):
    """The function at a short and a long length drawn from ``g``, in one fresh kernel per length: a
    warm-up call on one block, then the full call, then the causal one, each call's memory measured
    by the grader; at the longer length a few rows (the first and last of a block among them), drawn
    here, are checked against a direct softmax. Then a batch of a few queries reading many shared
    keys in small blocks (``key_block_call``), in a fresh kernel of its own."""
    calls = []
    for low, high in (SHORT_LENGTHS, LONG_LENGTHS):
        T = int(g.integers(low, high, endpoint=True))
        warm = tuple(g.standard_normal((WARM_UP_LENGTH, MEMORY_D)) for _ in range(3))
        calls.append(Call(warm, {"block_size": MEMORY_BLOCK, "causal": False}, memory=True, kernel=T,
                          note={"warm_up": True}))
        Q, K, V = (g.standard_normal((T, MEMORY_D)) for _ in range(3))
        edges = [0, T - 1, MEMORY_BLOCK * int(g.integers(1, T // MEMORY_BLOCK))]
        rows = sorted({*edges, edges[-1] - 1, *(int(r) for r in g.choice(T, SPOT_ROWS - 4, replace=False))})
        for causal in (False, True):
            calls.append(Call((Q, K, V), {"block_size": MEMORY_BLOCK, "causal": causal}, memory=True, kernel=T,
                              note={"rows": rows}))
    return calls + [key_block_call(g)]


def key_block_call(g):
    """A batch of sequences of a few queries reading many keys that the batch shares, with small
    blocks (sizes drawn from ``g`` in the ranges above); its memory measured by the grader."""
    def size(low, high):
        return int(g.integers(low, high, endpoint=True))

    batch, T_q, T_k = size(*FEW_BATCH), size(*FEW_QUERIES), size(*MANY_KEYS)
    d_k, d_v, block_size = size(*FEW_D_K), size(*FEW_D_V), size(*SMALL_BLOCKS)
    Q = 2.0 * g.standard_normal((batch, T_q, d_k))                    # (batch, T_q, d_k)
    K, V = g.standard_normal((T_k, d_k)), g.standard_normal((T_k, d_v))  # shared by the batch
    return Call((Q, K, V), {"block_size": block_size}, memory=True, note={"key_blocks": True})


def _spot_error(Q, K, V, O, causal, rows):
    """Largest error of ``O`` on a few rows recomputed directly (a cheap output cannot pass)."""
    errors = []
    for i in rows:
        n = i + 1 if causal else len(K)
        s = K[:n] @ Q[i] / np.sqrt(Q.shape[-1])                   # (n,)
        w = np.exp(s - s.max())
        errors.append(np.abs(O[i] - (w / w.sum()) @ V[:n]).max())
    error = float(np.max(errors))
    return error if np.isfinite(error) else float("inf")


def _attention_error(Q, K, V, O, chunk=8):
    """Largest error of ``O`` against attention computed directly (a few sequences at a time)."""
    worst = 0.0
    for start in range(0, Q.shape[0], chunk):
        s = Q[start:start + chunk] @ K.T / np.sqrt(K.shape[-1])       # (chunk, T_q, T_k)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        error = float(np.abs(O[start:start + chunk] - (w / w.sum(axis=-1, keepdims=True)) @ V).max())
        if not np.isfinite(error):                                    # NaN would compare as no error at all
            return float("inf")
        worst = max(worst, error)
    return worst


def judge_key_blocks(call, result):
    """The key-block call: right values, and no more memory than tiles of block_size keys take
    (beyond what any call takes in a fresh kernel and copies of its inputs)."""
    Q, K, V = call.args
    batch, T_q, _ = Q.shape
    T_k, block_size = K.shape[0], call.kwargs["block_size"]
    where = (f"With a batch of {batch} sequences of T_q = {T_q} queries reading T_k = {T_k:,} keys that the batch "
             f"shares (K and V without a batch axis) and block_size = {block_size},")
    if "raised" in result:
        return (f"{where} your tiled_attention raised {result['raised']} (the memory calls run in a fresh kernel "
                "that has run only the lesson's given cells and your answer cells)")
    O = result["value"]
    if not isinstance(O, np.ndarray) or O.shape != (batch, T_q, V.shape[-1]):
        return f"{where} it returned {describe(O)}, not an array of shape {(batch, T_q, V.shape[-1])}."
    if _attention_error(Q, K, V, O) > 1e-9:
        return f"{where} your output differs from attention computed directly."
    if result.get("peak") is None:
        return f"{where} the grader could not measure the memory your tiled_attention took."
    inputs = sum(a.nbytes for a in call.args)
    own = result["peak"] - CALL_OVERHEAD - INPUT_COPIES * inputs
    return key_block_problem(own, batch, T_q, T_k, block_size,
                             f"(beyond the {CALL_OVERHEAD / 1e6:.0f} MB any call takes in a fresh kernel and "
                             f"{INPUT_COPIES} times the {inputs / 1e6:.1f} MB of its inputs, as the grader sends them)")


def _length_figures(calls, results):
    """``({(T, causal): figure}, {T: warm-up figure})`` of the calls at the two lengths, or the
    problem with one of them (a raise, a wrong output, no figure)."""
    figures, warm_ups = {}, {}
    for call, result in zip(calls, results):
        if "key_blocks" in call.note:
            continue
        warm_up = "warm_up" in call.note
        T, causal = call.kernel, call.kwargs["causal"]
        where = (f"On the warm-up call before T = {T} (T = {WARM_UP_LENGTH}, one block)" if warm_up else
                 f"At T = {T}, d = {MEMORY_D}, block_size = {MEMORY_BLOCK} (causal={causal})")
        if "raised" in result:
            return (f"{where} your tiled_attention raised {result['raised']} (the memory calls run in a "
                    "fresh kernel that has run only the lesson's given cells and your answer cells)")
        O, shape = result["value"], call.args[0].shape
        if not isinstance(O, np.ndarray) or O.shape != shape:
            return f"{where} it returned {describe(O)}, not an array of shape {shape}."
        if T >= LONG_LENGTHS[0] and not warm_up and _spot_error(*call.args, O, causal, call.note["rows"]) > 1e-9:
            return f"{where} your output differs from attention computed directly on some rows."
        if result.get("peak") is None:
            return f"{where} the grader could not measure the memory your tiled_attention took."
        if warm_up:
            warm_ups[T] = result["peak"]
        else:
            figures[T, causal] = result["peak"]
    return figures, warm_ups


def judge_memory(R, calls, results):
    """From the short length to the long one, the memory a length's calls take (beyond what the
    warm-up call of its kernel took, up to WARM_UP_CAP) must grow in proportion to T; what grows
    faster by more than half of what a T × T array of booleans adds is a T × T array. At the long
    length the causal call may take no more than the full one, by half a T × T array of booleans:
    more is a T × T causal mask. Then the key-block call (``judge_key_blocks``)."""
    found = _length_figures(calls, results)
    if isinstance(found, str):
        return found
    figures, warm_ups = found
    short, long = sorted({T for T, _ in figures})
    mask = figures[long, True] - figures[long, False]
    if mask > long * long / 2:
        per_pair = mask / (long * long)
        what = ("a T × T causal mask" if per_pair < 4 else
                f"T × T arrays of float64 for the causal case (about {per_pair:.0f} bytes per (query, key) pair; "
                "one such array takes 8)")
        return (f"At T = {long}, the causal call took {mask / 1e6:.1f} MB more memory than the full one "
                f"(a T × T array of booleans takes {long * long / 1e6:.1f} MB): it builds {what}. Mask each "
                "block as you reach it, from the positions of its queries and keys.")
    own = {T: max(max(figures[T, False], figures[T, True]) - min(warm_ups[T], WARM_UP_CAP), 1) for T in (short, long)}
    ratio = long / short
    excess = own[long] - min(ratio * own[short], CREDIT_CAP * long * long)
    booleans = long * (long - short)           # what a T × T boolean array adds beyond proportion
    if excess > booleans / 2:
        return (f"From T = {short} to T = {long}, {ratio:.1f} times longer, the memory your tiled_attention took "
                f"(beyond what a warm-up call on one block took in the same fresh kernel) grew from "
                f"{own[short] / 1e6:.1f} MB to {own[long] / 1e6:.1f} MB, {own[long] / own[short]:.1f} times: "
                f"{excess / 1e6:.1f} MB more than in proportion to T, as a T × T array would take (one of booleans "
                f"adds {booleans / 1e6:.1f} MB more than in proportion from T = {short} to T = {long}, one of "
                f"float64 {8 * booleans / 1e6:.0f} MB). Never build a T × T array (scores, weights or a mask): work "
                "on one block of keys (and of queries) at a time.")
    for call, result in zip(calls, results):
        if "key_blocks" in call.note:
            problem = judge_key_blocks(call, result)
            if problem:
                return problem
    return None


register(Spec(
    name="tiled_attention",
    cases=tiled_cases,
    outputs=("O",),
    rtol=1e-7,
    atol=1e-10,
    bugs=BUGS,
    extra_calls=memory_calls,
    judge_extra=judge_memory,
    time_factor=3.0,       # the memory calls run the learner's Python loop over up to 4,096 tiles
))
