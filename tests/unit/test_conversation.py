"""The conversation between the grader and a kernel during a hidden test: the wire format
(``kernel_probe.encode``/``decode``: JSON with base64 arrays, never pickle), the grader's side
(``hidden.conversation.Conversation``: calls handed out a case at a time, stand-ins answered within
limits) and the kernel's side (``kernel_probe.serve``), run against each other in-process."""
import copy
import json

import numpy as np
import pytest

from attention_grading.hidden import conversation as hidden_tests, kernel_probe
from attention_grading.kernels.measurement import last_batch_of_each_kernel
from attention_grading.hidden.calls import plan_calls
from attention_grading.hidden.conversation import Conversation, StopTest
from attention_grading.hidden.in_process import run_locally
from attention_grading.results import REFUSED
from attention_grading.hidden.spec import Callback, Case, Spec


class Reference:
    @staticmethod
    def inner(x):
        return np.asarray(x, dtype=float) + 1.0

    @staticmethod
    def outer(x):
        return 2.0 * Reference.inner(x)


def outer_cases(g):
    return [Case("a vector", (g.normal(size=4),)), Case("a matrix", (g.normal(size=(2, 3)),))]


OUTER = Spec(name="outer", cases=outer_cases, substitutes=("inner",))


# ---------------------------------------------------------------- the wire format

@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.int64).reshape(2, 3), np.linspace(0, 1, 5), np.array([True, False]),
    np.zeros((0, 3)), np.float32(1.5) * np.ones((2, 2), dtype=np.float32), (1, 2.5, "text", None),
    [np.ones(2), False], {"a": np.ones(3), "b": 3}, 7, 2.5, True, "probe", None])
def test_what_crosses_the_wire_comes_back_equal(value):
    """Arrays keep dtype and shape; tuples stay tuples, lists lists; scalars keep their type."""
    back = kernel_probe.decode(json.loads(json.dumps(kernel_probe.encode(value))))
    assert kernel_probe.digest(back) == kernel_probe.digest(value)
    assert type(back) is type(value) or isinstance(value, np.generic)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape and np.array_equal(back, value)


def _same_steps(got, sent):
    """The same strides on every axis longer than 1 (a stride along a single element is immaterial)."""
    return all(a == b for a, b, n in zip(got.strides, sent.strides, sent.shape) if n > 1)


def _layouts():
    g = np.random.default_rng(3)
    base = g.normal(size=(4, 6))
    return {
        "C-ordered": base,
        "Fortran-ordered": np.asfortranarray(g.normal(size=(2, 3, 4))),
        "transposed view": base.T,
        "every other column": base[:, ::2],
        "reversed rows": base[::-1, 1:],
        "integer transposed": g.integers(-3, 4, size=(3, 5)).astype(np.int32).T,
        "boolean strided": (g.random((4, 6)) < 0.5)[::2],
        "a new axis of length 1": (g.random((3, 5)) < 0.5)[:, None, :],
        "0-d": np.array(2.5),
        "empty": np.zeros((0, 3)),
    }


@pytest.mark.parametrize("name", list(_layouts()))
def test_the_wire_keeps_dtype_shape_and_memory_order(name):
    """An array crosses the wire with its values, dtype, shape, strides and contiguity, writable:
    a transposed matrix reaches the function as a transposed view, not a C-ordered copy."""
    sent = _layouts()[name]
    got = kernel_probe.decode(json.loads(json.dumps(kernel_probe.encode(sent))))
    assert isinstance(got, np.ndarray) and got.dtype == sent.dtype and got.shape == sent.shape
    assert np.array_equal(got, sent) and got.flags.writeable
    assert _same_steps(got, sent), (got.strides, sent.strides)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == (sent.flags.c_contiguous, sent.flags.f_contiguous)


def test_a_received_array_is_the_receivers_own():
    """Writing into a decoded array changes nothing that was sent (its bytes are copied)."""
    sent = np.arange(12.0).reshape(3, 4).T
    got = kernel_probe.decode(kernel_probe.encode(sent))
    got[...] = -1.0
    assert np.array_equal(sent, np.arange(12.0).reshape(3, 4).T)


def test_strides_that_do_not_fit_the_bytes_are_refused():
    """A kernel that lies about a view's strides gets an opaque value, not memory it did not send."""
    blob = kernel_probe.encode(np.arange(6.0)[::2])
    blob["strides"] = [8000]
    assert isinstance(kernel_probe.decode(blob), kernel_probe.Opaque)


def test_objects_that_could_run_code_never_cross():
    """An object array, a function or a class instance is described, never sent; what comes back
    is an ``Opaque`` the grader cannot call."""
    for value in (np.array([object()]), lambda: 1, Reference()):
        blob = kernel_probe.encode(value)
        assert set(blob) == {"other"}
        assert isinstance(kernel_probe.decode(blob), kernel_probe.Opaque)
    forged = {"array": "AAAA", "dtype": "|O", "shape": [1]}
    assert isinstance(kernel_probe.decode(forged), kernel_probe.Opaque)
    assert isinstance(kernel_probe.decode(["not", "a", "dict"]), kernel_probe.Opaque)


# ---------------------------------------------------------------- the grader's side

def conversation(spec=OUTER, completed=("inner",), g=None, limits=None, reference=Reference):
    g = g or np.random.default_rng(3)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    return cases, Conversation(spec, reference, batches, callbacks, set(completed), len(cases), extra, limits,
                               measured)


def test_calls_are_handed_out_one_case_at_a_time():
    """``ready`` opens the test with the stand-ins to install; each result gets the next case."""
    cases, talk = conversation()
    first = talk.reply({"op": "ready"})
    assert first["substitutes"] == ["inner"] and len(first["calls"]) == 1
    second = talk.reply({"op": "results", "results": [{"value": kernel_probe.encode(1.0)}]})
    assert len(second["calls"]) == 1
    assert talk.reply({"op": "results", "results": [{"value": kernel_probe.encode(1.0)}]}) == {"stop": True}
    assert talk.finished and talk.calls_done == len(cases)


def test_a_kernel_that_breaks_the_protocol_stops_the_test():
    """Results that do not match the calls, or a request out of turn, stop the test as refused."""
    _, talk = conversation()
    with pytest.raises(StopTest) as stop:
        talk.reply({"op": "results", "results": []})           # before ready
    assert stop.value.kind == REFUSED
    _, talk = conversation()
    talk.reply({"op": "ready"})
    with pytest.raises(StopTest, match="do not match"):
        talk.reply({"op": "results", "results": [{}, {}]})


def test_a_stand_in_is_answered_only_once_its_own_test_is_over():
    """Before ``inner``'s own test, the grader refuses to lend it; after it, it answers with the
    reference; a name the spec does not lend is refused."""
    _, early = conversation(completed=())
    early.reply({"op": "ready"})
    refused = early.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(np.ones(2))]})
    assert "only after the hidden test of inner" in refused["error"]
    _, late = conversation()
    late.reply({"op": "ready"})
    lent = late.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(np.ones(2))]})
    assert np.array_equal(kernel_probe.decode(lent["value"]), [2.0, 2.0])
    other = late.reply({"op": "substitute", "key": "outer", "args": []})
    assert "called outer, which is not available in this test" in other["error"]


def test_stand_ins_refuse_huge_inputs_and_too_many_calls():
    """No submission can make the grader compute something huge, or answer without end; the
    limits are the course's settings (``c.ConversationLimits``), the global ones above the test's own."""
    from traitlets.config import Config

    config = Config()
    config.ConversationLimits.max_requests = 3
    config.ConversationLimits.stand_in_scale = 1000.0
    config.ConversationLimits.stand_in_inputs = 1e6
    limits = hidden_tests.ConversationLimits(config=config)
    _, talk = conversation(limits=limits)
    talk.reply({"op": "ready"})
    long_axis = talk.reply({"op": "substitute", "key": "inner",
                            "args": [kernel_probe.encode(np.zeros(limits.max_axis + 1))]})
    assert "called inner with `x` of an axis longer than 512" in long_axis["error"]
    many = talk.reply({"op": "substitute", "key": "inner",
                       "args": [kernel_probe.encode(np.zeros((256, 257)))]})
    assert "called inner with more than 65,536 numbers" in many["error"]
    third = talk.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(1.0)]})
    assert "value" in third
    fourth = talk.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(1.0)]})
    assert "more than 3 times" in fourth["error"]


class Tables:
    """A reference whose answers can be far larger than its inputs (as positional_encoding(T, d))."""

    @staticmethod
    def table(T, d):
        return np.zeros((T, d))

    @staticmethod
    def rows(x):
        return np.asarray(x, dtype=float).sum(axis=-1)

    @staticmethod
    def spin(n):
        # Milliseconds of work for a small n (the stand-in bounds allow only small integers): far
        # more than the reference's microseconds on the cases, under any load.
        total = 0
        for i in range(n * 20_000):
            total += i * i
        return float(total)


def test_stand_ins_are_bounded_by_the_tests_own_calls():
    """A stand-in call may use integers and axes up to twice the test's own largest, take up to four
    times the numbers of its largest call and answer with up to eight times them: a table of
    4096 × 4096 asked by a test whose cases are 6 long is refused, however many times it is asked,
    and the refusal names the call, never a grader limit."""
    spec = Spec(name="rows", cases=lambda g: [Case("a (3, 6) matrix", (g.normal(size=(3, 6)),))], lent=("table",))
    _, talk = conversation(spec, completed=(), reference=Tables)
    talk.reply({"op": "ready"})
    bounds = talk.bounds()
    assert (bounds.max_integer, bounds.max_axis, bounds.max_inputs, bounds.max_outputs) == (12, 12, 72, 144)
    fits = talk.reply({"op": "substitute", "key": "table", "args": [kernel_probe.encode(12), kernel_probe.encode(12)]})
    assert kernel_probe.decode(fits["value"]).shape == (12, 12)
    for _ in range(3):
        huge = talk.reply({"op": "substitute", "key": "table",
                           "args": [kernel_probe.encode(4096), kernel_probe.encode(4096)]})
        assert huge["error"].endswith("your rows called table with `T` larger than 12, more than this test's own "
                                      "inputs need (the grader answers stand-ins only at the sizes its cases use)")
    wide = talk.reply({"op": "substitute", "key": "table", "args": [kernel_probe.encode(2), kernel_probe.encode(100)]})
    assert "with `d` larger than 12" in wide["error"]
    assert talk.refusals == {0: "called table with `T` larger than 12, more than this test's own inputs need "
                                "(the grader answers stand-ins only at the sizes its cases use)"}


def test_the_grader_s_time_on_stand_ins_is_bounded_by_the_reference_s_on_the_cases():
    """The grader's own CPU time answering one test's stand-ins may reach ``stand_in_seconds`` or
    ``stand_in_time_factor`` times what the reference takes for the test's cases, whichever is larger;
    past that every call is refused."""
    from traitlets.config import Config

    spec = Spec(name="rows", cases=lambda g: [Case("a (3, 6) matrix", (g.normal(size=(3, 6)),))], lent=("spin",))

    def talk_with(**settings):
        config = Config()
        for name, value in settings.items():
            setattr(config.ConversationLimits, name, value)
        g = np.random.default_rng(0)
        cases = spec.cases(g)
        batches, callbacks, extra, measured = plan_calls(spec, cases, g)
        talk = Conversation(spec, Tables, batches, callbacks, set(), len(cases), extra,
                            hidden_tests.ConversationLimits(config=config), measured, cases=cases)
        talk.reply({"op": "ready"})
        return talk

    def spin(talk):
        return talk.reply({"op": "substitute", "key": "spin", "args": [kernel_probe.encode(10)]})

    tight = talk_with(stand_in_seconds=1e-9, stand_in_time_factor=1.0)
    refused = spin(tight)
    assert "called the grader's stand-ins for more than" in refused["error"], refused
    assert "error" in spin(tight)
    generous = talk_with(stand_in_seconds=1e-9, stand_in_time_factor=1e9)
    assert all("value" in spin(generous) for _ in range(5))
    assert generous.bounds().budget > generous.bounds().floor


def test_a_refused_call_is_what_the_verdict_says_in_the_grader_s_words():
    """The learner's function sees a refused call raise; whatever it does with that, the verdict on
    the case names the call the grader refused, not what the kernel reported."""
    spec = Spec(name="rows", cases=lambda g: [Case("a (3, 6) matrix", (g.normal(size=(3, 6)),))], lent=("table",))
    namespace = notebook_namespace("def rows(x):\n"
                                   "    try:\n        table(4096, 4096)\n"
                                   "    except RuntimeError as exc:\n        raise ValueError('0.123456 forged') from exc\n")
    verdict = run_locally(spec, Tables, namespace, np.random.default_rng(0))
    assert verdict.message == ("On a (3, 6) matrix, your rows called table with `T` larger than 12, more than this "
                               "test's own inputs need (the grader answers stand-ins only at the sizes its cases use).")


def test_what_a_kernel_reports_of_an_exception_or_a_warning_carries_no_value():
    """An exception's message, its type's name and warnings reach the verdict without numbers that
    could be a hidden input (kept: words, small integers such as an axis or a shape)."""
    from attention_grading.hidden.spec import Spec as _Spec

    spec = _Spec(name="outer", cases=outer_cases)
    namespace = notebook_namespace(
        "def outer(x):\n"
        "    text = ' '.join(repr(float(v)) for v in np.ravel(x))\n"
        "    raise type('Leak_' + text.replace(' ', '_')[:40], (ValueError,), {})("
        "'shapes (3,4) and axis 2: ' + text)\n")
    verdict = run_locally(spec, Reference, namespace, np.random.default_rng(0))
    assert not verdict.passed and "raised Exception: shapes (3,4) and axis 2: …" in verdict.message, verdict.message
    g = np.random.default_rng(0)
    for value in outer_cases(g)[0].args[0]:
        assert repr(float(value)) not in verdict.message and f"{value:.4f}" not in verdict.message


def test_a_callback_is_evaluated_by_the_grader():
    """A function argument stays in the grader: the kernel's stand-in asks for each value."""
    spec = Spec(name="apply", cases=lambda g: [Case("f at 3", (Callback(lambda x: x * 10), 3))])
    _, talk = conversation(spec, completed=())
    ready = talk.reply({"op": "ready"})
    key = ready["calls"][0]["args"][0]["callback"]
    answer = talk.reply({"op": "callback", "key": key, "args": [kernel_probe.encode(4)]})
    assert kernel_probe.decode(answer["value"]) == 40
    assert "called a function the test did not give it" in talk.reply({"op": "callback", "key": "callback-9",
                                                                        "args": []})["error"]


# ---------------------------------------------------------------- both sides

def notebook_namespace(source):
    """The globals of a notebook that ran ``source`` (functions find each other there, as in a kernel)."""
    namespace = {"np": np}
    exec(source, namespace)
    return namespace


def test_both_sides_agree_on_a_right_answer_and_on_a_wrong_one():
    """``run_locally`` plays the kernel's side with ``kernel_probe.serve``: a learner ``outer`` that
    calls its own ``inner`` is graded with the lent one, so only ``outer``'s own mistake counts."""
    wrong_inner = "def inner(x):\n    return np.zeros_like(x)\n"
    namespace = notebook_namespace(wrong_inner + "def outer(x):\n    return 2.0 * inner(x)\n")
    own_inner = namespace["inner"]
    verdict = run_locally(OUTER, Reference, namespace, np.random.default_rng(1))
    assert verdict.passed, verdict.message
    assert namespace["inner"] is own_inner, "the stand-in must be taken away after the test"

    namespace = notebook_namespace(wrong_inner + "def outer(x):\n    return 3.0 * inner(x)\n")
    verdict = run_locally(OUTER, Reference, namespace, np.random.default_rng(1))
    assert not verdict.passed and "differs from the reference" in verdict.message


def test_what_a_learner_function_prints_or_warns_stays_in_the_kernel():
    """Output and warnings of a right answer are discarded during the calls (they never cost points)."""
    import warnings

    def outer(x):
        print("chatty")
        warnings.warn("careful", RuntimeWarning)
        return 2.0 * (np.asarray(x, float) + 1.0)

    assert run_locally(OUTER, Reference, {"outer": outer}, np.random.default_rng(2)).passed


class _Meter:
    """A stand-in for ``sandbox.meter``: records when it was started and what it reports."""

    def __init__(self):
        self.started, self.growths = 0, [11_000_000, 22_000_000]

    def start(self):
        self.started += 1

    def growth(self):
        return self.growths.pop(0)


def test_each_measured_call_is_its_own_batch_and_the_grader_measures_it():
    """Calls whose memory is measured get a batch each; the meter starts as the batch goes out and
    its figure is the result's ``peak``; a peak the kernel reports itself is dropped."""
    from attention_grading.hidden.spec import Call, Case, Spec

    spec = Spec("measured", cases=lambda g: [Case("one", (1.0,))],
                extra_calls=lambda g: [Call((2.0,)), Call((3.0,), memory=True), Call((4.0,), memory=True)])
    g = np.random.default_rng(0)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    assert [len(b) for b in batches] == [1, 1, 1, 1] and measured == {2: 0, 3: 1}
    meter = _Meter()
    talk = Conversation(spec, Reference, batches, callbacks, set(), len(cases), extra, measured=measured, meter=meter)
    reply = talk.reply({"op": "ready"})
    for step in range(len(batches)):
        started = meter.started
        results = [{"value": kernel_probe.encode(0.0), "peak": 1} for _ in reply["calls"]]
        reply = talk.reply({"op": "results", "results": results})
        assert meter.started == started + (step + 1 in measured)
    assert [r[0].get("peak") for r in talk.results] == [None, None, 11_000_000, 22_000_000]
    assert reply == {"stop": True}


def test_kernels_can_take_turns_and_a_meter_handed_over_is_not_reset():
    """``serve_until`` stops the first kernel's probe before the measured batches; each later
    kernel resumes with a meter its caller started before any learner code ran there: the
    conversation reads it but never resets it, and the results stay in the order of the batches."""
    from attention_grading.hidden.spec import Call, Case, Spec

    spec = Spec("measured", cases=lambda g: [Case("one", (1.0,))],
                extra_calls=lambda g: [Call((2.0,)), Call((3.0,), memory=True), Call((4.0,), memory=True)])
    g = np.random.default_rng(0)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    talk = Conversation(spec, Reference, batches, callbacks, set(), len(cases), extra, measured=measured)
    talk.serve_until(min(measured))

    def serve(expected_batches):
        reply = talk.reply({"op": "ready"})
        for batch in expected_batches:
            assert reply["calls"] == batches[batch]
            reply = talk.reply({"op": "results", "results": [{"value": kernel_probe.encode(float(batch))}]})
        assert reply == {"stop": True} and talk.finished

    serve([0, 1])                                     # the learner's own kernel: cases and unmeasured calls
    with pytest.raises(StopTest):
        talk.reply({"op": "ready"})                   # a second "ready" needs a new kernel
    meters = []
    for batch in last_batch_of_each_kernel(measured):
        meters.append(_Meter())
        talk.resume(batch + 1, meters[-1])
        serve([batch])
    assert [m.started for m in meters] == [0, 0]
    assert [r[0].get("peak") for r in talk.results] == [None, None, 11_000_000, 11_000_000]
    assert [kernel_probe.decode(r[0]["value"]) for r in talk.results] == [0.0, 1.0, 2.0, 3.0]


def test_measured_calls_that_share_a_kernel_come_together_and_read_one_meter():
    """``Call.kernel``: calls with the same key are planned as consecutive batches for one fresh
    kernel, in the order given (the others keep a kernel each); within it the meter, started once,
    is read after each call and never reset, so a later call's figure includes the earlier one's."""
    from attention_grading.hidden.spec import Call, Case, Spec

    spec = Spec("measured", cases=lambda g: [Case("one", (1.0,))],
                extra_calls=lambda g: [Call((2.0,), memory=True, kernel="long"), Call((3.0,), memory=True),
                                       Call((4.0,), memory=True, kernel="long"), Call((5.0,))])
    g = np.random.default_rng(0)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    assert [c.args for c in extra] == [(5.0,), (2.0,), (4.0,), (3.0,)]
    assert measured == {2: 0, 3: 0, 4: 1} and last_batch_of_each_kernel(measured) == [3, 4]
    talk = Conversation(spec, Reference, batches, callbacks, set(), len(cases), extra, measured=measured)
    talk.serve_until(min(measured))
    reply = talk.reply({"op": "ready"})
    while "calls" in reply:
        reply = talk.reply({"op": "results", "results": [{"value": kernel_probe.encode(0.0)}]})
    shared = _Meter()
    talk.resume(4, shared)
    reply = talk.reply({"op": "ready"})
    for batch in (2, 3):
        assert reply["calls"] == batches[batch]
        reply = talk.reply({"op": "results", "results": [{"value": kernel_probe.encode(float(batch))}]})
    assert reply == {"stop": True} and shared.started == 0
    assert [r[0].get("peak") for r in talk.results] == [None, None, 11_000_000, 22_000_000]


def test_the_probe_frees_each_batch_before_the_next_one_arrives(monkeypatch):
    """A kernel that serves two measured calls holds nothing of the first while it reads the
    second: ``serve`` drops the last batch's arguments before it asks for the next, and
    ``ask_grader`` empties the message it sends before it reads the reply."""
    import weakref

    class Reply(dict):
        pass

    earlier = []

    def ask(message):
        assert all(ref() is None for ref in earlier), "the batch before is still held"
        call = {"target": {"learner": "twice"}, "args": [kernel_probe.encode(np.ones(3))]}
        reply = Reply(calls=[call]) if len(earlier) < 2 else Reply(stop=True)
        earlier.append(weakref.ref(reply))
        return reply

    kernel_probe.serve({"twice": lambda x: 2 * x}, ask)
    assert len(earlier) == 3

    sent = {}
    monkeypatch.setattr("builtins.input", lambda text: sent.setdefault("text", text) and '{"stop": true}')
    message = {"op": "results", "results": [{"value": kernel_probe.encode(1.0)}]}
    assert kernel_probe.ask_grader(message) == {"stop": True}
    assert message == {} and json.loads(sent["text"][len(kernel_probe.MAGIC):])["op"] == "results"


# ---------------------------------------------------------------- lent stand-ins and generators

def test_an_earlier_lessons_function_is_lent_from_the_first_call_within_the_same_limits():
    """``Spec.lent``: no test of this notebook grades it, so its stand-in is answered at once (a
    substitute of this lesson waits for its own test), and huge inputs are refused all the same."""
    spec = Spec(name="outer", cases=outer_cases, lent=("inner",))
    _, talk = conversation(spec, completed=())
    first = talk.reply({"op": "ready"})
    assert first["substitutes"] == ["inner"]
    lent = talk.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(np.ones(2))]})
    np.testing.assert_array_equal(kernel_probe.decode(lent["value"]), [2.0, 2.0])
    huge = talk.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(np.ones(600))]})
    assert "axis longer than" in huge["error"]
    unlisted = talk.reply({"op": "substitute", "key": "outer", "args": []})
    assert "called outer, which is not available in this test" in unlisted["error"]


def test_generators_cross_the_wire_by_their_state():
    """A numpy Generator arrives drawing exactly what the original would draw next; a forged state
    or another bit generator arrives as something that cannot run code."""
    rng = np.random.default_rng(42)
    rng.random(3)
    arrived = kernel_probe.decode(json.loads(json.dumps(kernel_probe.encode(rng))))
    np.testing.assert_array_equal(arrived.random(5), rng.random(5))
    assert isinstance(kernel_probe.decode({"generator": {"state": "x"}}), kernel_probe.Opaque)
    assert kernel_probe.encode(np.random.Generator(np.random.MT19937(1))) == {"other": "a Generator other than PCG64"}


def test_a_stand_in_that_draws_moves_the_callers_generator_on():
    """The grader draws with a copy of the kernel's Generator and hands its new state back, so the
    kernel's generator moves on exactly as if the kernel had drawn itself."""
    class Drawing:
        @staticmethod
        def draw(rng):
            return float(rng.random())

    spec = Spec(name="twice", cases=lambda g: [Case("a generator", (np.random.default_rng(7),))], lent=("draw",))
    namespace = {"draw": None}
    exec("def twice(rng):\n    return draw(rng), draw(rng)\n", namespace)
    cases = spec.cases(None)
    batches, callbacks, extra, _ = plan_calls(spec, cases, None)
    talk = Conversation(spec, Drawing, batches, callbacks, set(), len(cases), extra)
    kernel_probe.serve(namespace, talk.reply)
    first, second = kernel_probe.decode(talk.results[0][0]["value"])
    own = np.random.default_rng(7)
    assert (first, second) == (own.random(), own.random())


def test_a_stand_in_the_exercise_requires_must_be_asked_for():
    """``Spec.calls_required``: a right value computed without the earlier function the exercise
    says to build on fails, and the verdict says which calls were missing."""
    spec = Spec(name="outer", cases=outer_cases, substitutes=("inner",), calls_required={"inner": 1})
    honest, inlined = {}, {}
    exec("def outer(x):\n    return 2.0 * inner(x)\n", honest)
    exec("import numpy as np\ndef outer(x):\n    return 2.0 * (np.asarray(x, dtype=float) + 1.0)\n", inlined)
    assert run_locally(spec, Reference, honest, np.random.default_rng(0)).passed
    verdict = run_locally(spec, Reference, inlined, np.random.default_rng(0))
    assert not verdict.passed and "call your inner (once); it called inner not at all" in verdict.message


def test_the_grader_judges_what_each_stand_in_call_was_given():
    """``Spec.judge_stand_ins`` sees every stand-in call the grader answered during a case: an
    array's shape, a scalar as it was, a Generator's state before and after the call; a right
    value that breaks how the exercise asks to call it fails, and no figure comes from the kernel."""
    class Drawing:
        @staticmethod
        def draw(x, scale, rng):
            return scale * float(np.sum(x)) + 0.0 * rng.random()      # draws, but its value does not show it

        @staticmethod
        def twice(x, rng):
            rng = copy.deepcopy(rng)               # the case's generator stays as the kernel got it
            return np.array([Drawing.draw(x, 2.0, rng), Drawing.draw(x[:2], 2.0, rng)])

    rng = np.random.default_rng(5)
    seen = []

    def judge_calls(R, case, calls):
        seen.append(calls)
        state = kernel_probe.generator_state(case.args[1])
        for name, given in calls:
            if given["scale"] != 2.0:
                return "the scale given was not passed on"
            if given["rng"]["before"] != state:
                return "the rng given was not passed on"
            state = given["rng"]["after"]
        return None

    spec = Spec(name="twice", cases=lambda g: [Case("a vector and a generator", (np.ones(3), rng))],
                lent=("draw",), judge_stand_ins=judge_calls)
    honest = {"draw": None, "np": np}
    exec("def twice(x, rng):\n    return np.array([draw(x, 2.0, rng), draw(x[:2], 2.0, rng)])\n", honest)
    assert run_locally(spec, Drawing, honest, None).passed
    (first, second), = seen
    assert first[0] == "draw" and first[1]["x"] == {"shape": (3,)} and second[1]["x"] == {"shape": (2,)}
    assert first[1]["rng"]["after"] == second[1]["rng"]["before"] != first[1]["rng"]["before"]
    rescaled = {"draw": None, "np": np}           # the same value, but not the call the exercise asks for
    exec("def twice(x, rng):\n    return np.array([2 * draw(x, 1.0, rng), draw(x[:2], 2.0, rng)])\n", rescaled)
    verdict = run_locally(spec, Drawing, rescaled, None)
    assert not verdict.passed and verdict.message.endswith("the values are right, but the scale given was not passed on")
    copied = {"draw": None, "np": np}             # the second draw from a generator of its own
    exec("def twice(x, rng):\n    return np.array([draw(x, 2.0, rng), draw(x[:2], 2.0, np.random.default_rng(1))])\n",
         copied)
    verdict = run_locally(spec, Drawing, copied, None)
    assert not verdict.passed and verdict.message.endswith("the rng given was not passed on")


def test_a_call_measured_in_process_is_counted_after_large_blocks_were_freed():
    """``run_locally`` measures this process's memory: once the heap has kept freed large blocks
    (glibc then serves an allocation of that size without a new page), the memory a measured call
    allocates is still counted, as in a grading kernel. In a fresh process of its own."""
    import subprocess
    import sys

    code = ("import os, numpy as np\n"
            "from attention_grading.kernels.sandbox.meter import ProcessMeter\n"
            "from attention_grading.hidden.in_process import _allocate_as_a_kernel\n"
            "for _ in range(3):\n    big = np.ones(20 << 17); del big\n"
            "_allocate_as_a_kernel()\n"
            "meter = ProcessMeter(os.getpid()); meter.start()\n"
            "kept = np.ones(1 << 20)\n"
            "print(meter.growth())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 8 << 20, done.stdout          # the 8 MB array, every page of it
