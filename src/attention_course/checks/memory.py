"""Memory (lesson 08): how a function's peak memory grows with the length of the context."""
import numpy as np

from .. import forms
from .calls import _explain_error, _named_arguments
from .failures import CheckFailed, _not_implemented, _quietly
from .values import cmp


# ---------------------------------------------------------------- memory (lesson 08)

def check_memory_growth(name, fn, make_inputs, lengths=(512, 1024, 2048), **kwargs):
    """Peak memory of ``fn(*make_inputs(T), **kwargs)`` must not grow like T².

    The peak (``tracemalloc``) is measured at three lengths T, 2T, 4T. A peak of the form
    a + b·T + c·T² has c = (2·p(T) − 3·p(2T) + p(4T)) / (6·T²): the bytes per (query, key)
    pair. Copies of the inputs and the output grow like T and cancel out of c; a ``(T, T)``
    array of float64 gives c ≈ 8 or more, a boolean one c ≈ 1.
    """
    T = lengths[0]
    if tuple(lengths) != (T, 2 * T, 4 * T):
        raise ValueError("lengths must be T, 2T and 4T")
    peaks = _peaks(fn, make_inputs, lengths, kwargs)
    # tracemalloc sees every thread of the process (a kernel's output thread, a widget): a
    # growth seen once is measured again, and only the smallest peak per length counts. A (T, T)
    # array shows up every time.
    for _ in range(2):
        if _per_pair(peaks, T) <= 0.25:
            break
        peaks = [min(a, b) for a, b in zip(peaks, _peaks(fn, make_inputs, lengths, kwargs))]
    per_pair = _per_pair(peaks, T)
    shown = ", ".join(f"{p / 1e6:.2f} MB at T = {t}" for p, t in zip(peaks, lengths))
    if per_pair > 0.25:
        kind = ("a (T, T) array of float64 (scores or weights)" if per_pair >= 6 else
                "a (T, T) boolean array (a mask?)" if per_pair < 2 else "a (T, T) array")
        raise CheckFailed(f"{name}: the peak memory grows like T², about {per_pair:.1f} bytes per (query, "
                          f"key) pair ({shown}), which is what {kind} costs. Build only one tile at a time: "
                          "scores, weights and mask of one block of queries against one block of keys.")
    print(f"✓ {name}: peak memory {shown}; the part that grows like T² is {max(per_pair, 0.0):.3f} bytes "
          "per (query, key) pair, so no (T, T) array is built")


def check_key_blocks(name, fn, batch=64, T_q=3, T_k=16384, d_k=2, d_v=2, block_size=16, seed=0):
    """A batch of ``batch`` sequences of ``T_q`` queries reading ``T_k`` keys that the batch shares
    (K and V without a batch axis), in blocks of ``block_size``: the output is attention, and the
    peak memory of the call (``tracemalloc``, the inputs made beforehand not counted) stays below
    half of one float64 score for every key, for one query of each sequence, which an answer that
    takes all T_k keys of a query at once holds. The hidden test measures the same from outside the
    kernel, on sizes drawn for each submission (``long_context.key_block_problem``: its words)."""
    from ..long_context import key_block_problem

    g = np.random.default_rng(seed)
    Q = 2.0 * g.standard_normal((batch, T_q, d_k))                    # (batch, T_q, d_k)
    K, V = g.standard_normal((T_k, d_k)), g.standard_normal((T_k, d_v))  # shared by the batch
    O, peak = _peaks(fn, lambda _: (Q, K, V), [T_k], {"block_size": block_size}, keep=True)[0]
    problem = forms.array_problem("O", O, (batch, T_q, d_v))
    if problem:
        raise CheckFailed(f"{name}: {problem}")
    expected = np.empty((batch, T_q, d_v))
    for start in range(0, batch, 16):                                 # 16 sequences at a time: a few MB
        s = Q[start:start + 16] @ K.T / np.sqrt(d_k)                  # (16, T_q, T_k)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        expected[start:start + 16] = (w / w.sum(axis=-1, keepdims=True)) @ V
    cmp(f"{name}: O for a batch of queries reading keys the batch shares", O, expected, atol=1e-10)
    problem = key_block_problem(peak, batch, T_q, T_k, block_size, "at its peak")
    if problem:          # another thread of the kernel may have allocated beside it: measured once more
        peak = min(peak, _peaks(fn, lambda _: (Q, K, V), [T_k], {"block_size": block_size}, keep=True)[0][1])
        problem = key_block_problem(peak, batch, T_q, T_k, block_size, "at its peak")
    if problem:
        raise CheckFailed(problem)
    print(f"✓ {name}: a batch of {batch} sequences of {T_q} queries reading {T_k:,} shared keys, block_size = "
          f"{block_size}: peak memory {peak / 1e6:.2f} MB, under half the {8 * batch * T_k / 1e6:.1f} MB of one "
          "score for every key for one query of each sequence, so no query takes all its keys at once")


def _peaks(fn, make_inputs, lengths, kwargs, keep=False):
    """The peak memory of ``fn`` at each length (``keep``: with its result, as pairs)."""
    from ..long_context import peak_memory

    peaks = []
    for length in lengths:
        inputs = make_inputs(length)
        try:
            result, peak = peak_memory(_quietly, fn, *inputs, **kwargs)
        except NotImplementedError:
            raise _not_implemented(fn) from None
        except Exception as exc:
            named = _named_arguments(fn, inputs, kwargs)
            raise _explain_error(exc, fn, named) from None
        peaks.append((result, peak) if keep else peak)
        del inputs, result
    return peaks


def _per_pair(peaks, T):
    return (2 * peaks[0] - 3 * peaks[1] + peaks[2]) / (6 * T * T)
