"""Run one hidden test from the grader: cases in, outputs out, verdict decided here.

``Conversation`` is the grader's half of ``kernel_probe``: it hands out the calls (one case at a
time, so a hang or a crash is pinned on its case), collects the results and answers the
kernel's stand-ins: a substitute (an earlier graded function, computed with the reference) only
while the test of a function that may call it runs and only once that function's own test is
over, a callback only for its own test; each within limits on the number of requests and on the
size of their inputs, so that no submission can make the grader compute something huge.

The calls come from ``calls.plan_calls``; the verdict from ``decide``. ``kernels.session.KernelSession``
serves a conversation to a live kernel over its stdin channel (``steps.execute.GuardedExecute``
drives it); ``in_process.run_locally`` serves the same conversation in-process (the instructor's
own kernel, outside grading: ``hidden.check``).
"""
import functools
import inspect
import time
import warnings

import numpy as np
from traitlets import Float, Int
from traitlets.config import Configurable

from ..learner_text import scrubbed, scrubbed_name
from ..results import REFUSED
from . import kernel_probe
from .calls import Driven, wire_call
from .stand_in_bounds import StandInBounds, reference_seconds


class ConversationLimits(Configurable):
    """How much a kernel may ask of the grader during one hidden test (``c.ConversationLimits.<name>``):
    the stand-ins and callbacks the grader computes on a kernel's behalf, and the size and number
    of the messages it may send, so that no submission can make the grader compute or hold
    something huge. Each test's own bounds come from its own calls (``stand_in_bounds``), within
    the global ``max_*``."""

    max_requests = Int(20_000, help="Stand-in and callback calls the grader answers in one hidden test.").tag(config=True)
    max_elements = Int(1 << 16, help="Numbers in the inputs, or in the answer, of one stand-in or callback call, "
                       "whatever the test.").tag(config=True)
    max_axis = Int(512, help="Length of any axis of those inputs, whatever the test.").tag(config=True)
    max_integer = Int(4096, help="Largest integer argument of such a call (a length T, say), whatever the "
                      "test.").tag(config=True)
    stand_in_scale = Float(2.0, help="A stand-in or callback call's integer arguments and axes may be at most this "
                           "many times the largest integer or axis of the test's own calls (its cases and "
                           "measurements).").tag(config=True)
    stand_in_inputs = Float(4.0, help="A stand-in or callback call may take at most this many times the numbers "
                            "the largest of the test's own calls takes.").tag(config=True)
    stand_in_outputs = Float(8.0, help="A stand-in's answer may hold at most this many times the numbers the "
                             "largest of the test's own calls takes.").tag(config=True)
    stand_in_seconds = Float(2.0, help="CPU seconds the grader spends answering one test's stand-ins and "
                             "callbacks, times the test's time_factor, unless stand_in_time_factor times the "
                             "reference's time for the test's own cases is more.").tag(config=True)
    stand_in_time_factor = Float(20.0, help="The grader's CPU time on one test's stand-ins and callbacks may "
                                 "reach this many times the reference's time for the test's own cases (or "
                                 "stand_in_seconds, whichever is more).").tag(config=True)
    max_message_bytes = Int(4 << 20, help="Largest part of a message a kernel may send the grader, on any "
                            "channel, in bytes (the hidden tests' largest is about 0.6 MB); a larger one breaks "
                            "the protocol and the kernel is replaced. With message_queue, what a kernel can make "
                            "the grader hold.").tag(config=True)
    message_queue = Int(16, help="Messages from a kernel queued unread per channel; past that, output "
                        "messages are dropped.").tag(config=True)


class StopTest(Exception):
    """The hidden test stopped early: ``kind`` (timeout, crashed, refused) at call ``index``."""

    def __init__(self, kind, index, detail=""):
        super().__init__(detail)
        self.kind, self.index, self.detail = kind, index, detail


class Conversation:
    """The grader's side of one hidden test (see the module docstring).

    ``measured``: the batches whose memory the grader measures with ``meter``
    (``kernels.sandbox.meter``): it reads the growth when the results come back, so each of those
    results' ``peak`` is the grader's figure; a kernel cannot report one. The meter is reset as
    such a batch goes out, unless a caller that started it already hands it over with ``resume``.

    One conversation may be served by several kernels in turn: ``serve_until`` stops the first
    one's probe before a given batch, ``resume`` lets the next kernel's probe take up from there
    (``GuardedExecute`` measures each call in a fresh kernel of its own).

    A ``Driven`` batch is a driver's (``Spec.driver``): the conversation asks it for each next
    list of calls as the last one's results come back, and records what it returns as that
    case's one result. ``fresh_batch`` says whether the calls just handed out begin a new batch
    (a new case's time) or go on with a driver's.

    Stand-ins and callbacks are answered within the test's own bounds (``stand_in_bounds``,
    derived from the batches it sends; ``cases``, when given, let it time the reference on them);
    each refusal is kept, in the grader's words, as ``refusals[batch]``. What the kernel reports
    of an exception or a warning is kept ``scrubbed`` of numbers: it reaches the verdict.
    ``kept``: which functions the probe calls (``steps.execute.GuardedExecute``: those of the notebook
    as it was at the test's cell)."""

    def __init__(self, spec, reference, batches, callbacks, completed, cases_batches=None, extra=(),
                 limits=None, measured=(), meter=None, cases=(), kept=None):
        self.spec, self.reference = spec, reference
        self.limits = limits or ConversationLimits()
        self.batches, self.callbacks, self.extra = batches, callbacks, list(extra)
        self.cases_batches = cases_batches if cases_batches is not None else len(batches)
        self.completed = set(completed)
        self.measured, self.meter, self.reset_meter = set(measured), meter, True
        self.results, self.next_batch, self.requests = [], 0, 0
        self.until = len(batches)    # the batch at which this kernel's probe is told to stop
        self.stand_ins = {}          # {batch index: {name: requests}}: the stand-ins each batch asked for
        self.stand_in_calls = {}     # {batch index: [(name, {parameter: what it was given})]}: what they were given
        self.refusals = {}           # {batch index: the first stand-in call refused, in the grader's words}
        self.cases, self.kept, self._bounds = list(cases), kept, None
        self.started = self.finished = False
        self.driving = self.driven_calls = None      # the running driver, the calls it handed out last
        self.fresh_batch = False

    def serve_until(self, batch):
        """The probe in the current kernel stops before ``batch``."""
        self.until = min(batch, len(self.batches))

    def resume(self, until, meter=None):
        """A new kernel's probe serves the next batches, up to ``until``; ``meter``, if given, was
        started by the caller before any learner code ran in that kernel, and is not reset here."""
        self.started = self.finished = False
        self.until = min(until, len(self.batches))
        if meter is not None:
            self.meter, self.reset_meter = meter, False

    @property
    def calls_done(self):
        return sum(len(b) for b in self.results)

    def reply(self, message):
        op = message.get("op") if isinstance(message, dict) else None
        if op == "ready" and not self.started:
            self.started = True
            kept = {} if self.kept is None else {"kept": str(self.kept)}
            return {"substitutes": [*self.spec.substitutes, *self.spec.lent],
                    "globals_of": list(self.spec.learner_functions), **kept, **self._next()}
        if op == "results" and self.started and self.next_batch > len(self.results):
            results = message.get("results")
            expected = self.driven_calls if self.driving is not None else self.batches[len(self.results)]
            if not isinstance(results, list) or len(results) != len(expected) \
                    or not all(isinstance(r, dict) for r in results):
                raise StopTest(REFUSED, self.calls_done, "the kernel sent results that do not match the calls")
            if self.driving is not None:
                self.fresh_batch = False
                for result in results:
                    _scrub(result)
                return self._drive([dict(r, value=kernel_probe.decode(r["value"])) if "value" in r else r
                                    for r in results])
            peak = self._measured_growth(len(self.results))
            for result in results:
                result.pop("peak", None)          # only the grader measures
                _scrub(result)
                if len(self.results) in self.measured:
                    result["peak"] = peak
            self.results.append(results)
            return self._next()
        if op in ("substitute", "callback") and self.started:
            return self._answer(op, message)
        raise StopTest(REFUSED, self.calls_done, f"the kernel sent an unexpected request ({str(op)[:40]})")

    def _next(self):
        if self.next_batch < self.until:
            self.next_batch += 1
            self.fresh_batch = True
            batch = self.batches[self.next_batch - 1]
            if isinstance(batch, Driven):
                self.driving = self.spec.driver(self.reference, batch.case)
                return self._drive(None)
            if self.next_batch - 1 in self.measured and self.meter is not None and self.reset_meter:
                self.meter.start()       # the last thing before the batch goes out
            return {"calls": batch}
        self.finished = True
        return {"stop": True}

    def _drive(self, results):
        """Send the driver the results of its last calls (None: start it); hand out the calls it
        asks for next, or, once it returns, record its result as the case's and go on."""
        try:
            calls = next(self.driving) if results is None else self.driving.send(results)
        except StopIteration as done:
            self.driving = self.driven_calls = None
            result = dict(done.value or {"raised": "the grader's driver returned nothing"})
            if "value" in result:
                result["value"] = kernel_probe.encode(result["value"])
            self.results.append([result])
            return self._next()
        except Exception as exc:             # the grader's own code failed: the instructor is told
            self.driving = self.driven_calls = None
            raise StopTest(REFUSED, self.calls_done,
                           f"the grader could not go on with this test ({type(exc).__name__}: {exc})"[:300]) from None
        shared = []
        self.driven_calls = [wire_call(call.target or self.spec.target, call.args, call.kwargs, self.callbacks,
                                       record_warnings=call.warnings, shared=shared) for call in calls]
        return {"calls": self.driven_calls, "shared": [blob for _, blob in shared]}

    def _measured_growth(self, batch):
        if batch not in self.measured or self.meter is None:
            return None
        try:
            return self.meter.growth()
        except OSError:              # the sandbox is gone
            return None

    def bounds(self):
        """This test's ``StandInBounds``, from the calls it sends (made when first needed)."""
        if self._bounds is None:
            own = []
            for batch in self.batches:
                if isinstance(batch, Driven):      # a driver's calls come from its case
                    own.append((list(batch.case.args), dict(batch.case.kwargs)))
                    continue
                for call in batch:
                    args = [kernel_probe.decode(a, lambda blob: None) for a in call.get("args", [])]
                    kwargs = {k: kernel_probe.decode(v, lambda blob: None) for k, v in call.get("kwargs", {}).items()}
                    own.append((args, kwargs))
            timing = reference_seconds(self.spec, self.reference, self.cases) if self.cases else None
            self._bounds = StandInBounds(self.spec, own, self.limits, timing)
        return self._bounds

    def _refuse(self, why):
        """The answer to a refused call: the kernel's code sees it raised; the verdict keeps ``why``."""
        self.refusals.setdefault(self.next_batch - 1, why)
        return {"error": f"the grader does not answer this call: your {self.spec.name} {why}"}

    def _answer(self, op, message):
        started = time.thread_time()
        key = message.get("key")
        self.requests += 1
        if self.requests > self.limits.max_requests:
            return self._refuse(f"called the grader's stand-ins more than {self.limits.max_requests:,} times in "
                                "one test")
        if op == "substitute":
            asked = self.stand_ins.setdefault(self.next_batch - 1, {})
            asked[str(key)] = asked.get(str(key), 0) + 1
            if key not in self.spec.substitutes and key not in self.spec.lent:
                return self._refuse(f"called {str(key)[:40]}, which is not available in this test")
            if key in self.spec.substitutes and key not in self.completed:
                return self._refuse(f"called {key}, which is lent only after the hidden test of {key} itself")
            function, name = getattr(self.reference, key), str(key)
        else:
            function, name = self.callbacks.get(key), "the function the test gave it"
            if function is None:
                return self._refuse("called a function the test did not give it")
        args = [kernel_probe.decode(a) for a in message.get("args", [])]
        kwargs = {str(k): kernel_probe.decode(v) for k, v in dict(message.get("kwargs", {})).items()}
        bounds = self.bounds()
        problem = bounds.refuse_inputs(name, function, args, kwargs)
        if problem:
            return self._refuse(problem)
        before = [a.copy() if isinstance(a, np.ndarray) else
                  kernel_probe.generator_state(a) if isinstance(a, np.random.Generator) else None for a in args]
        given = _given(function, args, kwargs) if op == "substitute" else None
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                value = function(*args, **kwargs)
        except Exception as exc:
            if given is None:
                return {"error": f"{key} raised {type(exc).__name__}: {exc}"[:300]}
            # The stand-in is right: the learner's call that handed it these inputs is what to fix.
            return {"error": f"your {self.spec.name} called {key} with {_described(given)}, and the correct {key} "
                             f"the grader lends for this test raised {type(exc).__name__}: {str(exc)[:200]}"[:500]}
        finally:
            if given is not None:
                self.stand_in_calls.setdefault(self.next_batch - 1, []).append((str(key), _after(given)))
        problem = bounds.refuse_output(name, value)
        if problem:
            return self._refuse(problem)
        after = [kernel_probe.encode(a) if b is not None and _changed(a, b) else None for a, b in zip(args, before)]
        answer = {"value": kernel_probe.encode(value), "after": after}
        problem = bounds.spend(time.thread_time() - started)
        return self._refuse(problem) if problem else answer


def _scrub(result):
    """What a kernel reports of an exception or warnings, without numbers (``learner_text``)."""
    if "raised" in result:
        kind, _, message = str(result["raised"]).partition(": ")
        result["raised"] = f"{scrubbed_name(kind)}: {scrubbed(message, 300)}"
        result["type"] = scrubbed_name(result.get("type", ""))
    if "warnings" in result:
        warned = result["warnings"] if isinstance(result["warnings"], list) else []
        result["warnings"] = [scrubbed(w, 200) for w in warned[:5]]


@functools.lru_cache(maxsize=None)
def _signature(function):
    return inspect.signature(function)


def _given(function, args, kwargs):
    """What a stand-in call was given, by parameter name, without the numbers: an array's shape,
    a Generator's state before the call (``_after`` adds its state after it), scalars as they
    are, the type of anything else."""
    try:
        bound = dict(_signature(function).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        bound = {**{str(k): v for k, v in enumerate(args)}, **kwargs}

    def summary(value):
        if isinstance(value, np.ndarray):
            return {"shape": value.shape}
        if isinstance(value, np.random.Generator):
            return {"generator": value, "before": kernel_probe.generator_state(value)}
        if value is None or isinstance(value, (bool, int, float, str, np.number)):
            return value
        return {"type": type(value).__name__}
    return {name: summary(value) for name, value in bound.items()}


def _described(given):
    """``_given``'s record in words: "scores of shape (3, 6, 6), mask of shape (3, 3)"."""
    def word(name, value):
        if isinstance(value, dict) and "shape" in value:
            return f"{name} of shape {tuple(value['shape'])}"
        if isinstance(value, dict):
            return f"{name}: {value.get('type', 'a generator')}"
        return f"{name}={value!r}"
    return ", ".join(word(name, value) for name, value in given.items()) or "no arguments"


def _after(given):
    """``_given``'s record once the call is over: each Generator's state after it, the object itself let go."""
    for value in given.values():
        if isinstance(value, dict) and "generator" in value:
            value["after"] = kernel_probe.generator_state(value.pop("generator"))
    return given


def _changed(value, before):
    """Did a call change this argument (an array's values, a Generator's state)?"""
    if isinstance(value, np.random.Generator):
        return kernel_probe.generator_state(value) != before
    return not np.array_equal(value, before, equal_nan=True)
