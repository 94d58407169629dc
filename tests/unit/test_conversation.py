"""The conversation between the grader and a kernel during a hidden test: the wire format
(``kernel_probe.encode``/``decode``: JSON with base64 arrays, never pickle), the grader's side
(``hidden_tests.Conversation``: calls handed out a case at a time, stand-ins answered within
limits) and the kernel's side (``kernel_probe.serve``), run against each other in-process."""
import json

import numpy as np
import pytest

from attention_grading import hidden_tests, kernel_probe
from attention_grading.hidden_tests import Conversation, StopTest, plan_calls, run_locally
from attention_grading.results import REFUSED
from attention_grading.spec import Callback, Case, Spec


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

def conversation(spec=OUTER, completed=("inner",), g=None, limits=None):
    g = g or np.random.default_rng(3)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    return cases, Conversation(spec, Reference, batches, callbacks, set(completed), len(cases), extra, limits,
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
    assert "not available" in other["error"]


def test_stand_ins_refuse_huge_inputs_and_too_many_calls():
    """No submission can make the grader compute something huge, or answer without end; the
    limits are the course's settings (``c.ConversationLimits``)."""
    from traitlets.config import Config

    config = Config()
    config.ConversationLimits.max_requests = 3
    limits = hidden_tests.ConversationLimits(config=config)
    _, talk = conversation(limits=limits)
    talk.reply({"op": "ready"})
    long_axis = talk.reply({"op": "substitute", "key": "inner",
                            "args": [kernel_probe.encode(np.zeros(limits.max_axis + 1))]})
    assert "axis longer than 512" in long_axis["error"]
    many = talk.reply({"op": "substitute", "key": "inner",
                       "args": [kernel_probe.encode(np.zeros((256, 257)))]})
    assert "more than 65536 numbers" in many["error"]
    third = talk.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(1.0)]})
    assert "value" in third
    fourth = talk.reply({"op": "substitute", "key": "inner", "args": [kernel_probe.encode(1.0)]})
    assert "at most 3" in fourth["error"]


def test_a_callback_is_evaluated_by_the_grader():
    """A function argument stays in the grader: the kernel's stand-in asks for each value."""
    spec = Spec(name="apply", cases=lambda g: [Case("f at 3", (Callback(lambda x: x * 10), 3))])
    _, talk = conversation(spec, completed=())
    ready = talk.reply({"op": "ready"})
    key = ready["calls"][0]["args"][0]["callback"]
    answer = talk.reply({"op": "callback", "key": key, "args": [kernel_probe.encode(4)]})
    assert kernel_probe.decode(answer["value"]) == 40
    assert "unknown" in talk.reply({"op": "callback", "key": "callback-9", "args": []})["error"]


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
    from attention_grading.spec import Call, Case, Spec

    spec = Spec("measured", cases=lambda g: [Case("one", (1.0,))],
                extra_calls=lambda g: [Call((2.0,)), Call((3.0,), memory=True), Call((4.0,), memory=True)])
    g = np.random.default_rng(0)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    assert [len(b) for b in batches] == [1, 1, 1, 1] and measured == {2, 3}
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
