"""How much one hidden test's stand-ins and callbacks may ask of the grader, from the test's own
calls.

A stand-in (an earlier graded function the grader answers with the reference, a lent function, a
callback) computes in the grading process, on inputs the learner's code chooses. A correct
answer asks only for what the test's own calls need: ``generate`` on a prompt of 10 tokens asks
for positional encodings of at most a few dozen positions, never of 4,096. So each test's bounds
are derived from its own calls (the cases and the measurement calls the grader sends):

- *scale*: the largest integer argument or axis length of those calls; a stand-in call's integers
  and axes may be at most ``stand_in_scale`` times it;
- *numbers*: the most numbers one of those calls takes; a stand-in call may take at most
  ``stand_in_inputs`` times that, and return at most ``stand_in_outputs`` times that;
- *time*: what the grader spends answering the test's stand-ins (its own CPU time) may reach
  ``stand_in_seconds`` (times the test's ``time_factor``), or ``stand_in_time_factor`` times what
  the reference takes for the test's own cases, whichever is larger (measured only once the
  first is spent);

and never more than the global ``ConversationLimits``. Across every lesson's solution and
catalogued correct answers, stand-in calls stay within 1.02 times the scale, 1.7 times the
inputs and 2.5 times the outputs of their test's own calls, and well within a second.

A refused call is answered with an error (the learner's code sees it raised) and the grader
keeps its own description of it, which names the learner's call and what it asked for, never
a grader limit nor a value: that description, not whatever the kernel reports, is what the
verdict says.
"""
import functools
import inspect
import time

import numpy as np

from . import kernel_probe
from .spec import Shared


def _sizes(value, found):
    """Add ``value``'s integers, axis lengths and numbers to ``found`` = [scale, numbers]."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, Shared):          # an argument a driver's calls share
            stack.append(item.value)
        elif isinstance(item, np.ndarray):
            found[0] = max(found[0], *item.shape) if item.shape else found[0]
            found[1] += item.size
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            found[0] = max(found[0], abs(int(item)))
    return found


def call_sizes(args, kwargs):
    """(the largest integer or axis length, the numbers) of one call's arguments."""
    return tuple(_sizes([list(args), list(kwargs.values())], [0, 0]))


@functools.lru_cache(maxsize=None)
def _signature(function):
    return inspect.signature(function)


def _parameters(function, args, kwargs):
    """(parameter name, value) of a call, by the function's own parameter names where it has them."""
    try:
        return list(_signature(function).bind(*args, **kwargs).arguments.items())
    except (TypeError, ValueError):
        return [(f"number {i + 1}", a) for i, a in enumerate(args)] + list(kwargs.items())


def _flatten(value):
    stack, out = [value], []
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        else:
            out.append(item)
    return out


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


BEYOND = "more than this test's own inputs need (the grader answers stand-ins only at the sizes its cases use)"


class StandInBounds:
    """The bounds of one hidden test (see the module docstring). ``own``: the (args, kwargs) of
    every call the test itself sends; ``reference_time``: a function returning the seconds the
    reference takes for the test's cases, or None where it cannot tell.

    Each refusal is a clause that completes "your <tested function> ..." and names the call."""

    def __init__(self, spec, own, limits, reference_time=None):
        self.spec, self.limits, self.reference_time = spec, limits, reference_time
        sizes = [call_sizes(args, kwargs) for args, kwargs in own]
        scale = max((s for s, _ in sizes), default=0)
        numbers = max((n for _, n in sizes), default=0)
        self.max_integer = min(limits.max_integer, max(8, int(limits.stand_in_scale * scale)))
        self.max_axis = min(limits.max_axis, max(8, int(limits.stand_in_scale * scale)))
        self.max_inputs = min(limits.max_elements, max(64, int(limits.stand_in_inputs * numbers)))
        self.max_outputs = min(limits.max_elements, max(64, int(limits.stand_in_outputs * numbers)))
        self.floor = limits.stand_in_seconds * spec.time_factor
        self.budget, self.spent, self._measured = self.floor, 0.0, False

    def refuse_inputs(self, key, function, args, kwargs):
        """Why the grader does not compute ``key`` on these inputs, or None."""
        total = 0
        for name, value in _parameters(function, args, kwargs):
            items = _flatten(value)
            for item in items:
                if isinstance(item, kernel_probe.Opaque):
                    return f"called {key} with `{name}` as {item.description}, which the grader cannot receive"
                if isinstance(item, np.ndarray) and any(n > self.max_axis for n in item.shape):
                    return f"called {key} with `{name}` of an axis longer than {self.max_axis}, {BEYOND}"
                if _is_integer(item) and abs(int(item)) > self.max_integer:
                    return f"called {key} with `{name}` larger than {self.max_integer}, {BEYOND}"
            total += sum(item.size for item in items if isinstance(item, np.ndarray))
        if total > self.max_inputs:
            return f"called {key} with more than {self.max_inputs:,} numbers, {BEYOND}"
        return None

    def refuse_output(self, key, value):
        """Why the grader does not send back ``key``'s answer (too large), or None."""
        numbers = _sizes(value, [0, 0])[1]
        if numbers > self.max_outputs:
            return f"called {key} for an answer of more than {self.max_outputs:,} numbers, {BEYOND}"
        return None

    def spend(self, seconds):
        """Count the grader's ``seconds`` on one answer; why no further answer is given, or None."""
        self.spent += seconds
        if self.spent <= self.budget:
            return None
        if not self._measured:
            self._measured = True
            measured = self.reference_time() if self.reference_time is not None else None
            if measured is not None:
                self.budget = max(self.floor, self.limits.stand_in_time_factor * measured)
            if self.spent <= self.budget:
                return None
        return (f"called the grader's stand-ins for more than {self.budget:.1f} s of the grader's time, far "
                "more than this test's own cases need")


def reference_seconds(spec, reference, cases):
    """A function giving the grader's CPU seconds for the reference to compute ``cases`` (None when
    the test's target has no reference of its name, or it fails on them)."""
    from .judge import plain_case
    from .spec import Learner

    function = getattr(reference, spec.name, None)
    if function is None or spec.target != Learner(spec.name):
        return None

    def measure():
        import warnings

        started = time.thread_time()
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                for case in cases:
                    case = plain_case(case)
                    function(*case.args, **case.kwargs)
        except Exception:
            return None
        return time.thread_time() - started
    return measure
