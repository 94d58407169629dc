"""judge: a learner's results on the hidden cases against the reference, explained in plain
words, with the catalogued mistake named as data, and never an expected value shown."""
import functools

import numpy as np
import pytest

from attention_grading.hidden import judge
from attention_grading.results import MUTATED, PASSED, RAISED, WRONG
from attention_grading.hidden.spec import Bug, Call, Case, Spec


class Reference:
    """A stand-in reference package: what the judge calls ``R``."""

    @staticmethod
    def double(x):
        return 2.0 * np.asarray(x, dtype=float)


def double_cases(g):
    return [Case("a (3, 4) matrix", (g.normal(size=(3, 4)),)), Case("a vector of 5", (g.normal(size=5),))]


SPEC = Spec(name="double", cases=double_cases, outputs=("twice",),
            bugs=(Bug("it triples instead of doubling", lambda R, x: 3.0 * np.asarray(x, float)),))


def results_of(function, cases):
    """What the kernel would report for ``function`` on ``cases`` (``kernel_probe`` form)."""
    from attention_grading.hidden import kernel_probe

    out = []
    for case in cases:
        args = [np.array(a, copy=True) for a in case.args]
        try:
            value = function(*args)
        except Exception as exc:
            out.append({"raised": f"{type(exc).__name__}: {exc}"})
            continue
        out.append({"value": kernel_probe.encode(value), "after": [kernel_probe.digest(a) for a in args]})
    return out


@pytest.fixture
def cases():
    return double_cases(np.random.default_rng(7))


def test_a_right_answer_passes(cases):
    """The reference's own output on every case passes, with the number of cases."""
    verdict = judge.judge(SPEC, Reference, cases, results_of(Reference.double, cases))
    assert verdict.passed and verdict.kind == PASSED and verdict.cases == 2


def test_a_catalogued_mistake_is_named_as_data(cases):
    """An output equal to a Bug's is named, in the message and as the verdict's diagnosis."""
    verdict = judge.judge(SPEC, Reference, cases, results_of(lambda x: 3 * x, cases))
    assert not verdict.passed and verdict.kind == WRONG
    assert verdict.diagnosis == "it triples instead of doubling"
    assert "This is exactly what happens when it triples" in verdict.message
    assert verdict.case == "a (3, 4) matrix"


def test_a_wrong_answer_shows_where_and_how_much_never_the_expected_value(cases):
    """The message gives the index and the size of the error, not the value the reference returned."""
    wrong = results_of(lambda x: 2 * x + np.where(np.arange(x.size).reshape(x.shape) == 5, 0.25, 0.0), cases)
    verdict = judge.judge(SPEC, Reference, cases, wrong)
    expected = Reference.double(cases[0].args[0])
    assert "first at index (1, 1)" in verdict.message and "by up to 0.25" in verdict.message
    for value in expected.reshape(-1):
        for shown in (f"{value:.6g}", f"{value:.4g}", f"{value:.3g}"):
            assert shown not in verdict.message
    assert verdict.diagnosis is None


def test_shape_dtype_nan_and_none_are_told_apart(cases):
    """Each kind of wrong form gets its own sentence."""
    def message(function):
        return judge.judge(SPEC, Reference, cases, results_of(function, cases)).message

    assert "has shape (4, 3), but it should have shape (3, 4)" in message(lambda x: 2 * x.T)
    assert "dtype float32" in message(lambda x: (2 * x).astype(np.float32))
    assert "contains NaN" in message(lambda x: np.full_like(x, np.nan))
    assert "did you forget to return" in message(lambda x: None)


def test_a_raised_exception_and_a_mutated_input_are_reported(cases):
    """An exception names its type; an answer that changes its input in place fails for it."""
    raised = judge.judge(SPEC, Reference, cases, results_of(lambda x: 1 / 0, cases))
    assert raised.kind == RAISED and "ZeroDivisionError" in raised.message

    def in_place(x):
        x *= 2
        return x.copy()

    mutated = judge.judge(SPEC, Reference, cases, results_of(in_place, cases))
    assert mutated.kind == MUTATED and "changed its argument `x` in place" in mutated.message


def test_a_boolean_output_names_positions_not_values():
    """A wrong mask is reported by how many positions and where, not by the values wanted."""
    spec = Spec(name="mask", cases=lambda g: [], outputs=("mask",))
    expected = np.tril(np.ones((4, 4), dtype=bool))
    mine = expected.copy()
    mine[0, 3] = True
    text = judge.compare_arrays("Your `mask`", mine, expected, spec)
    assert text == "Your `mask` is wrong at 1 of 16 positions, first at index (0, 3)."
    assert judge.compare_arrays("Your `mask`", [1], expected, spec) == \
        "Your `mask` should be a NumPy array of shape (4, 4), but it is a list of 1 value."


def test_measurements_are_judged_with_the_calls_that_made_them(cases):
    """``judge_extra`` receives the extra Calls and their decoded results, once every case passed."""
    seen = {}

    def judge_extra(R, calls, results):
        seen["calls"], seen["results"] = calls, results
        return "too slow" if results[0]["value"] is None else None

    spec = Spec(name="double", cases=double_cases, judge_extra=judge_extra,
                extra_calls=lambda g: [Call((np.ones(2),))])
    calls = spec.extra_calls(np.random.default_rng(0))
    ok = results_of(Reference.double, cases)
    verdict = judge.judge(spec, Reference, cases, ok, [{"value": {"none": True}}], calls)
    assert not verdict.passed and verdict.message == "too slow"
    assert seen["calls"] == calls and seen["results"] == [{"value": None}]
    assert judge.judge(spec, Reference, cases, ok, None, calls).passed      # not measured: not judged


def test_generate_memory_is_judged_on_the_graders_figures_alone():
    """Lesson 09's cache check reads only the growth the grader measured from outside the kernel:
    growth in proportion to the length passes, a (heads, T, T) array's worth more fails and says
    so, and a call the grader could not measure fails (no figure is taken from the kernel)."""
    from attention_grading.hidden.specs import lesson09_small_gpt as lesson09

    calls = lesson09.generate_memory_calls(np.random.default_rng(3))
    assert all(call.memory for call in calls) and len({call.args[2] for call in calls}) == 2
    lengths = [lesson09.MEMORY_PROMPT + call.args[2] for call in calls]
    in_proportion = [{"peak": 40_000 * T} for T in lengths]
    assert lesson09.judge_generate_memory(None, calls, in_proportion) is None
    square = [{"peak": 40_000 * T + 8 * lesson09.MEMORY_HEADS * T * T} for T in lengths]
    assert "square of the length" in lesson09.judge_generate_memory(None, calls, square)
    short = min(lengths)
    inflated = [{"peak": 400_000_000 if T == short else 40_000 * T + 8 * lesson09.MEMORY_HEADS * T * T}
                for T in lengths]
    assert "square of the length" in lesson09.judge_generate_memory(None, calls, inflated)
    unmeasured = [{"peak": None} for _ in lengths]
    assert "could not measure" in lesson09.judge_generate_memory(None, calls, unmeasured)


def _memory_results(calls, bytes_of, key_block_bytes=4_000_000):
    """Results of lesson 08's memory calls: at each length ``bytes_of(T, causal)``; the key-block
    call (a batch of queries reading shared keys) ``key_block_bytes``."""
    return [{"value": np.zeros(call.args[0].shape[:-1] + call.args[2].shape[-1:]), "peak": key_block_bytes}
            if "key_blocks" in call.note else
            {"value": np.zeros(call.args[0].shape), "peak": bytes_of(call.args[0].shape[0], call.kwargs["causal"])}
            for call in calls]


def test_tiled_memory_is_judged_on_growth_and_a_short_call_cannot_buy_credit(monkeypatch):
    """Lesson 08: memory in proportion to T passes (with a constant on top); a T × T float64
    array fails, and so does a boolean causal mask on top of what any call takes in a fresh
    kernel; a short call that takes hundreds of MB for nothing does not make a long call's T × T
    array look in proportion."""
    from attention_grading.hidden.specs import lesson08_long_context as lesson08

    monkeypatch.setattr(lesson08, "_spot_error", lambda *args: 0.0)      # the values are not the point here
    monkeypatch.setattr(lesson08, "_attention_error", lambda *args: 0.0)
    calls = lesson08.memory_calls(np.random.default_rng(5))
    judge_memory = functools.partial(lesson08.judge_memory, None, calls)
    assert judge_memory(_memory_results(calls, lambda T, causal: 3_000_000 + 2_500 * T)) is None
    float64 = judge_memory(_memory_results(calls, lambda T, causal: 2_500 * T + 8 * T * T))
    assert "T × T array" in float64
    mask = judge_memory(_memory_results(calls, lambda T, causal: 1_500_000 + 2_500 * T + T * T))
    assert "T × T array" in mask        # a fresh kernel's 1.5 MB for any call does not hide a boolean one
    long = max(call.args[0].shape[0] for call in calls)
    inflated = judge_memory(_memory_results(calls, lambda T, causal: 400_000_000 if T < long // 2 else
                                            2_500 * T + 8 * T * T))
    assert "T × T array" in inflated
    # As the grader reads them: one kernel per length, the causal figure the most since the meter started.
    def shared_kernel(bytes_of):
        return lambda T, causal: max(bytes_of(T, False), bytes_of(T, True)) if causal else bytes_of(T, False)

    assert judge_memory(_memory_results(calls, shared_kernel(lambda T, causal: 3_000_000 + 2_500 * T))) is None
    assert judge_memory(_memory_results(calls, shared_kernel(
        lambda T, causal: 3_000_000 + 2_500 * T + (1_000_000 if causal else 0)))) is None
    # A boolean causal mask is caught within the long length, whatever the short calls measured:
    # 2 MB more at the short length, times the ratio of the lengths, would hide it across lengths.
    for short_extra in (0, 2_000_000):
        mask = judge_memory(_memory_results(calls, shared_kernel(
            lambda T, causal: 1_500_000 + 2_500 * T + (T * T if causal else 0) + (short_extra if T < long // 2 else 0))))
        assert "more memory than the full one" in mask and "causal mask" in mask


def test_tiled_memory_takes_off_what_a_warm_up_call_took_and_no_more(monkeypatch):
    """Lesson 08: what the first call in a fresh kernel takes whatever T (about 2 MB in a grading
    kernel, nothing in a warm process) is measured by a warm-up call on one block and taken off its
    kernel's figures, up to WARM_UP_CAP. A lean answer holding (T, block_size) strips passes either
    way, also where the short length's causal call read less than its full call (a meter reset
    between them, as in the tests' in-process judgement), which a fixed 1 MB taken off used to read as
    0 and then fail; a boolean T × T array built by both calls still fails; a warm-up that takes
    100 MB earns no more than the cap, so a T × T float64 array behind it still fails; T × T float64
    arrays built for the causal call alone are not called a mask."""
    from attention_grading.hidden.specs import lesson08_long_context as lesson08

    monkeypatch.setattr(lesson08, "_spot_error", lambda *args: 0.0)
    monkeypatch.setattr(lesson08, "_attention_error", lambda *args: 0.0)
    warm = lesson08.WARM_UP_LENGTH
    for seed in range(20):
        calls = lesson08.memory_calls(np.random.default_rng(seed))
        assert [c.note.get("warm_up", False) for c in calls if "key_blocks" not in c.note] == [True, False, False] * 2
        judge_memory = functools.partial(lesson08.judge_memory, None, calls)
        for first_call in (0, 2_000_000):
            def strips(T, causal, first_call=first_call):
                lower = 0.4 if causal and T < 2 * lesson08.SHORT_LENGTHS[1] else 1.0     # reset between the calls
                return first_call + int(lower * 2_400 * T) if T > warm else first_call + 2_400 * T
            assert judge_memory(_memory_results(calls, strips)) is None, (seed, first_call)
            mask_of_every_pair = judge_memory(_memory_results(
                calls, lambda T, causal, first_call=first_call: first_call + 2_400 * T + T * T))
            assert "T × T array" in mask_of_every_pair, (seed, first_call)
        long = max(c.kernel for c in calls if c.kernel)
        spike = 100_000_000
        hidden = _memory_results(calls, lambda T, causal: spike if T == warm else
                                 max(spike, 2_000_000 + 2_400 * T + (8 * T * T if T == long else 0)))
        assert "T × T array" in judge_memory(hidden), seed
        causal_scores = judge_memory(_memory_results(
            calls, lambda T, causal: 2_000_000 + 2_400 * T + (16 * T * T if causal and T > warm else 0)))
        assert "float64 for the causal case" in causal_scores and "causal mask" not in causal_scores


def test_tiled_key_blocks_are_judged_on_the_memory_of_a_query_that_meets_all_its_keys(monkeypatch):
    """Lesson 08's key-block call: a batch of sequences of a few queries reading many keys the batch
    shares. What tiles of block_size keys take passes, with the 1 MB any call takes and copies of the
    inputs as the probe receives them on top; one float64 score for every key, for one query of each
    sequence, fails and says what is missing (in the visible check's words); so does a raise, a
    wrong value, or a call the grader could not measure."""
    from attention_course.long_context import key_block_problem
    from attention_grading.hidden.specs import lesson08_long_context as lesson08

    calls = lesson08.memory_calls(np.random.default_rng(7))
    (call,) = [c for c in calls if "key_blocks" in c.note]
    Q, K, V = call.args
    batch, T_q, T_k = Q.shape[0], Q.shape[1], K.shape[0]
    assert K.ndim == V.ndim == 2 and lesson08.FEW_BATCH[0] <= batch <= lesson08.FEW_BATCH[1]
    assert lesson08.MANY_KEYS[0] <= T_k <= lesson08.MANY_KEYS[1] and call.memory and call.kernel is None
    inputs = sum(a.nbytes for a in call.args)
    assert inputs < 8 * batch * T_k / 8               # the inputs are small beside one row of scores per sequence
    s = Q @ K.T / np.sqrt(K.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    O = (w / w.sum(axis=-1, keepdims=True)) @ V

    def verdict(peak, value=O):
        return lesson08.judge_key_blocks(call, {"value": value, "peak": peak})

    base = lesson08.CALL_OVERHEAD + lesson08.INPUT_COPIES * inputs
    tiles = 8 * batch * T_q * call.kwargs["block_size"] * 6
    assert verdict(base + tiles) is None and verdict(base + 2 * tiles + 2_000_000) is None
    row = verdict(base + 8 * batch * T_k)
    assert "processes all T_k keys of a query at once: use blocks of block_size keys" in row
    assert row == key_block_problem(8 * batch * T_k, batch, T_q, T_k, call.kwargs["block_size"],
                                    row.split(" MB ", 1)[1].split(";")[0])
    assert "raised ValueError" in lesson08.judge_key_blocks(call, {"raised": "ValueError: no"})
    assert "differs from attention" in verdict(base, O + 1e-6)
    assert "differs from attention" in verdict(base, np.where(np.arange(T_q)[:, None] == 0, np.nan, O))
    assert "could not measure" in verdict(None)
    monkeypatch.setattr(lesson08, "_spot_error", lambda *args: 0.0)
    monkeypatch.setattr(lesson08, "judge_key_blocks", lambda call, result: "key blocks")
    assert lesson08.judge_memory(None, calls, _memory_results(calls, lambda T, causal: 3_000_000 + 2_500 * T)) \
        == "key blocks"                                # judged after the lengths, whose own figures pass


def test_a_mistake_is_named_only_when_the_evidence_singles_it_out(cases):
    """Two catalogued mistakes that give the learner's output on the failing case are told apart
    by the other cases the learner answered; when nothing tells them apart, neither is named."""
    def first_row_tripled(R, x):                   # triples a matrix's first row, a vector whole
        x = np.array(x, dtype=float) * 2
        if x.ndim == 1:
            return 1.5 * x
        x[0] *= 1.5
        return x

    spec = Spec(name="double", cases=double_cases, outputs=("twice",), bugs=(
        Bug("it triples instead of doubling", lambda R, x: 3.0 * np.asarray(x, float)),
        Bug("it triples the first row only", first_row_tripled)))
    one_row = results_of(lambda x: first_row_tripled(None, x), cases)
    # On the vector both bugs give the learner's output; the matrix (answered too) singles one out.
    verdict = judge.judge(spec, Reference, cases[::-1], one_row[::-1])
    assert verdict.case == "a vector of 5" and verdict.diagnosis == "it triples the first row only"
    # Judged on the vector alone, either could be the cause: neither is named.
    alone = judge.judge(spec, Reference, cases[1:], one_row[1:])
    assert not alone.passed and alone.diagnosis is None and "This is exactly" not in alone.message


def test_a_mistake_judged_by_a_predicate_is_named_by_the_same_rule(cases):
    """``Bug.matches`` (a mistake that cannot be compared by equality, such as draws that fit a
    distribution) names a mistake only when it alone reproduces the answer, and never on a case
    where the mistake gives the right answer."""
    def near(factor):
        return lambda R, case, mine: np.allclose(mine, factor * np.asarray(case.args[0]), rtol=0.01)

    spec = Spec(name="double", cases=double_cases, outputs=("twice",),
                bugs=(Bug("it triples", matches=near(3.0)), Bug("it doubles", matches=near(2.0))))
    verdict = judge.judge(spec, Reference, cases, results_of(lambda x: 3.0 * x, cases))
    assert verdict.diagnosis == "it triples" and "This is exactly what happens when it triples" in verdict.message
    alike = Spec(name="double", cases=double_cases, outputs=("twice",),
                 bugs=(Bug("it triples", matches=near(3.0)), Bug("it multiplies by three", matches=near(3.0))))
    verdict = judge.judge(alike, Reference, cases, results_of(lambda x: 3.0 * x, cases))
    assert not verdict.passed and verdict.diagnosis is None and "This is exactly" not in verdict.message
    broken = Spec(name="double", cases=double_cases, outputs=("twice",),
                  bugs=(Bug("it triples", matches=lambda R, case, mine: 1 / 0),))
    assert judge.judge(broken, Reference, cases, results_of(lambda x: 3.0 * x, cases)).diagnosis is None
