"""Judge what a learner's function returned on the hidden cases: compare with the reference and
explain the first difference, naming the catalogued mistake (as data) when the output matches it.

Runs in the grader, never in the kernel. Its inputs are the cases the grader built and the
results the kernel reported (``kernel_probe``: encoded values, exceptions, digests of the inputs
after each call, warnings, measurements).
"""
import inspect
import warnings

import numpy as np
from attention_course.forms import (array_problem, calls_problem, describe,  # noqa: F401 (describe, token_problem: for the specs)
                                    order_problem, returns_problem, token_problem)

from . import kernel_probe
from ..results import MUTATED, PASSED, RAISED, WRONG, Verdict
from .spec import Callback, Case, Mismatch


def compare_arrays(what, mine, expected, spec, equal_nan=False):
    """Why ``mine`` is not ``expected``, in plain words, or None when they agree."""
    problem = array_problem(what, mine, expected.shape, boolean=expected.dtype.kind == "b")
    if problem:
        return problem
    if expected.dtype.kind == "b":
        if not np.array_equal(mine, expected):
            wrong = np.argwhere(mine != expected)
            return (f"{what} is wrong at {len(wrong)} of {mine.size} positions, first at index "
                    f"{tuple(int(i) for i in wrong[0])}.")
        return None
    if np.isnan(mine).any() and not np.isnan(expected).any() and not equal_nan:
        where = tuple(int(i) for i in np.argwhere(np.isnan(mine))[0])
        return f"{what} contains NaN (first at index {where}) where every expected value is a number."
    close = np.isclose(mine, expected, rtol=spec.rtol, atol=spec.atol, equal_nan=equal_nan)
    if not close.all():
        # Where and by how much, never a value: a hidden expected value would teach the cases.
        index = tuple(int(i) for i in np.argwhere(~close)[0])
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")                      # an all-NaN difference
            error = float(np.nanmax(np.abs(np.where(close, 0.0, mine - expected))))
        return (f"{what} differs from the reference at {int((~close).sum())} of {mine.size} entries "
                f"(first at index {index}), by up to {error:.3g}.")
    return None


def compare_outputs(spec, mine, expected, equal_nan=False):
    """Compare a whole return value (one array or a tuple of them)."""
    if len(spec.outputs) == 1:
        return compare_arrays(f"Your `{spec.outputs[0]}`", mine, np.asarray(expected), spec, equal_nan)
    expected = [np.asarray(e) for e in expected]
    problem = returns_problem(spec.name, mine, spec.outputs) or order_problem(
        spec.name, mine, spec.outputs, [e.shape for e in expected],
        close=lambda k, value: compare_arrays("", value, expected[k], spec, equal_nan) is None)
    if problem:
        return problem
    for name, m, e in zip(spec.outputs, mine, expected):
        problem = compare_arrays(f"Your `{name}`", m, e, spec, equal_nan)
        if problem:
            return problem
    return None


def _bug_output(spec, R, bug, case):
    """What ``bug`` returns on ``case`` (adapted), or an exception it raised."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            buggy = bug.output(R, *case.args, **case.kwargs)
            return spec.adapt(buggy) if spec.adapt is not None else buggy
    except Exception as exc:
        return exc


def _learner_value(spec, result):
    """The learner's (adapted) return value in ``result``, or None when there is none to compare."""
    if "raised" in result or "value" not in result:
        return None
    try:
        mine = kernel_probe.decode(result["value"])
        return spec.adapt(mine) if spec.adapt is not None else mine
    except Mismatch:
        return None


def _reproduces(spec, R, bug, case, mine):
    """Does ``bug`` give the learner's (adapted) value ``mine`` on ``case``?"""
    if bug.matches is not None:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return bool(bug.matches(R, case, mine))
        except Exception:
            return False
    buggy = _bug_output(spec, R, bug, case)
    return not isinstance(buggy, Exception) and compare_outputs(spec, mine, buggy, equal_nan=True) is None


def likely_bug(spec, R, case, mine, others=()):
    """The explanation of the catalogued bug that reproduces the learner's output, or None.

    A bug is named only when the evidence singles it out: its output equals the learner's on
    ``case`` and on every other case in ``others`` (``(case, result)`` pairs) where the learner
    returned something, and no other bug does the same (two causes that give the same numbers
    cannot be told apart, so neither is named)."""
    candidates = [bug for bug in spec.bugs if _reproduces(spec, R, bug, case, mine)]
    for other, result in others:
        if len(candidates) < 2:
            break
        theirs = _learner_value(spec, result)
        if theirs is None:
            continue
        other = plain_case(other)
        candidates = [bug for bug in candidates if _reproduces(spec, R, bug, other, theirs)]
    return candidates[0].explanation if len({bug.explanation for bug in candidates}) == 1 else None


def expected_output(spec, R, case):
    reference = getattr(R, spec.name)
    value = reference(*case.args, **case.kwargs)
    return spec.adapt(value) if spec.adapt is not None else value


def input_digests(case):
    """Digests of a case's arguments as the kernel receives them (after the wire's round trip)."""
    return [kernel_probe.digest(kernel_probe.decode(kernel_probe.encode(a)))
            if isinstance(a, (np.ndarray, dict)) else None for a in case.args]


def plain_case(case):
    """The case with grader-side functions (``Callback``) unwrapped, for the reference and bugs."""
    def plain(value):
        return value.function if isinstance(value, Callback) else value
    return Case(case.label, tuple(plain(a) for a in case.args), {k: plain(v) for k, v in case.kwargs.items()},
                case.note)


def argument_name(spec, R, position):
    """The name of the graded function's parameter at ``position`` (its reference's), or its number."""
    try:
        names = list(inspect.signature(getattr(R, spec.name)).parameters)
        return f"`{names[position]}`"
    except (AttributeError, IndexError, TypeError, ValueError):
        return f"number {position + 1}"


def judge_case(spec, R, case, result, others=()):
    """None when the learner's result on ``case`` is right, else (kind, message, diagnosis);
    ``others``: the other ``(case, result)`` pairs, the evidence that names a mistake."""
    digests = input_digests(case)
    case = plain_case(case)
    if "raised" in result:
        return RAISED, f"On {case.label}, your {spec.name} raised {result['raised']}", None
    mine = kernel_probe.decode(result.get("value", {"other": "nothing"}))
    try:
        if spec.adapt is not None:
            mine = spec.adapt(mine)
    except Mismatch as exc:
        return WRONG, f"On {case.label}: {exc}", None
    hint = None
    if spec.compare is not None:
        problem = spec.compare(R, case, mine)
        if isinstance(problem, tuple):         # (message, the mistake it names)
            problem, hint = problem
    else:
        problem = compare_outputs(spec, mine, expected_output(spec, R, case))
    if problem:
        hint = hint or likely_bug(spec, R, case, mine, others)
        message = f"On {case.label}: {problem}"
        if hint and hint not in problem:
            message += f" This is exactly what happens when {hint}."
        return WRONG, message, hint
    problem = calls_problem(spec.name, spec.calls_required, result.get("stand_ins") or {})
    if problem is None and spec.judge_stand_ins is not None:
        problem = spec.judge_stand_ins(R, case, result.get("stand_in_calls") or [])
    if problem:
        return WRONG, f"On {case.label}: the values are right, but {problem}", None
    for position, (before, after) in enumerate(zip(digests, result.get("after") or [])):
        if before is not None and after != before:
            return MUTATED, (f"On {case.label}, your {spec.name} changed its argument "
                             f"{argument_name(spec, R, position)} in place. Work on a copy: inputs must "
                             "never be mutated."), None
    if spec.warnings_fail is not None and result.get("warnings"):
        return WRONG, spec.warnings_fail(case.label, result["warnings"][0]), None
    return None


def judge(spec, R, cases, results, extra_results=None, extra_calls=()):
    """The verdict on a learner's function from its results on every case, and on the extra
    calls (``extra_calls``, the ``spec.Call``s made) when ``extra_results`` is given (None: the
    measurements are not judged)."""
    pairs = list(zip(cases, results))
    for index, (case, result) in enumerate(pairs):
        failure = judge_case(spec, R, case, result, pairs[:index] + pairs[index + 1:])
        if failure:
            kind, message, diagnosis = failure
            if result.get("refused"):     # the grader refused a stand-in call: its words, not the kernel's
                message, diagnosis = f"On {case.label}, your {spec.name} {result['refused']}.", None
            return Verdict(spec.name, False, message, kind=kind, cases=len(cases), case=case.label,
                           diagnosis=diagnosis)
    if len(results) < len(cases):
        return Verdict(spec.name, False, "The hidden test did not run to completion.", kind=WRONG,
                       cases=len(cases))
    if spec.judge_extra is not None and extra_results is not None:
        decoded = [dict(r, value=kernel_probe.decode(r["value"])) if "value" in r else r for r in extra_results]
        problem = spec.judge_extra(R, list(extra_calls), decoded)
        if problem:
            return Verdict(spec.name, False, problem, kind=WRONG, cases=len(cases))
    return Verdict(spec.name, True, f"{spec.name} agrees with the reference on {len(cases)} hidden cases.",
                   kind=PASSED, cases=len(cases))
