"""The out-of-kernel half of a hidden test: rebuild the cases, run the reference, compare.

Reads one JSON request on stdin (see ``hidden.check``) and writes a JSON verdict
``{"passed": bool, "message": str, "cases": int}`` on stdout. It runs in a fresh
interpreter, so nothing a submission did to its own kernel can change the verdict.
"""
import json
import sys
import warnings

import numpy as np

from . import spec as spec_module
from . import wire


def describe(value):
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if value is None:
        return "None (did you forget to return?)"
    return repr(value)


def compare_arrays(what, mine, expected, spec, equal_nan=False):
    """Why ``mine`` is not ``expected``, in plain words, or None when they agree."""
    if not isinstance(mine, np.ndarray):
        return f"{what} should be an array of shape {expected.shape}, but it is {describe(mine)}."
    if mine.shape != expected.shape:
        return f"{what} has shape {mine.shape}, but it should have shape {expected.shape}."
    if expected.dtype.kind == "b":
        if mine.dtype.kind != "b":
            return f"{what} should be a boolean array (True = may attend), not dtype {mine.dtype}."
        if not np.array_equal(mine, expected):
            wrong = np.argwhere(mine != expected)[0]
            return (f"{what} is {mine[tuple(wrong)]} at index {tuple(int(i) for i in wrong)} "
                    f"where it should be {expected[tuple(wrong)]}.")
        return None
    if mine.dtype != np.float64:
        return f"{what} has dtype {mine.dtype}; the course works in float64 throughout."
    if np.isnan(mine).any() and not np.isnan(expected).any() and not equal_nan:
        where = tuple(int(i) for i in np.argwhere(np.isnan(mine))[0])
        return (f"{what} contains NaN (first at index {where}). Large logits overflow exp() "
                "unless you subtract the max first, and a fully masked row must give zeros, not 0/0.")
    close = np.isclose(mine, expected, rtol=spec.rtol, atol=spec.atol, equal_nan=equal_nan)
    if not close.all():
        index = tuple(int(i) for i in np.argwhere(~close)[0])
        error = float(np.nanmax(np.abs(np.where(close, 0.0, mine - expected))))
        return (f"{what} is off from the expected values by up to {error:.3g}; first at index "
                f"{index}: yours {mine[index]:.6g}, expected {expected[index]:.6g}.")
    return None


def compare_outputs(spec, mine, expected, equal_nan=False):
    """Compare a whole return value (one array or a tuple of them)."""
    if len(spec.outputs) == 1:
        return compare_arrays(f"Your `{spec.outputs[0]}`", mine, np.asarray(expected), spec, equal_nan)
    if not isinstance(mine, tuple) or len(mine) != len(spec.outputs):
        names = ", ".join(spec.outputs)
        return f"It should return {len(spec.outputs)} values ({names}), but it returned {describe(mine)}."
    for name, m, e in zip(spec.outputs, mine, expected):
        problem = compare_arrays(f"Your `{name}`", m, np.asarray(e), spec, equal_nan)
        if problem:
            return problem
    return None


def likely_bug(spec, R, case, mine):
    """The explanation of the first catalogued bug whose output equals the learner's."""
    for bug in spec.bugs:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                buggy = bug.output(R, *case.args, **case.kwargs)
        except Exception:
            continue
        if compare_outputs(spec, mine, buggy, equal_nan=True) is None:
            return bug.explanation
    return None


def judge(request):
    import attention_reference as R

    spec = spec_module.get(request["name"])
    cases = spec.cases()
    reference = getattr(R, spec.name)
    if len(request["results"]) != len(cases):
        return {"passed": False, "cases": len(cases),
                "message": "The hidden test did not run to completion; run the whole notebook again."}
    for case, result, after in zip(cases, request["results"], request["after"]):
        if "raised" in result:
            return {"passed": False, "cases": len(cases),
                    "message": f"On {case.label}, your {spec.name} raised {result['raised']}"}
        mine = wire.decode(result["value"])
        if spec.compare is not None:
            problem = spec.compare(R, case, mine)
        else:
            problem = compare_outputs(spec, mine, reference(*case.args, **case.kwargs))
        if problem:
            hint = likely_bug(spec, R, case, mine)
            message = f"On {case.label}: {problem}"
            if hint:
                message += f" This is exactly what happens when {hint}."
            return {"passed": False, "cases": len(cases), "message": message}
        for position, (original, changed) in enumerate(zip(case.args, after)):
            if changed is not None and isinstance(original, np.ndarray):
                changed = wire.decode(changed)
                if not (isinstance(changed, np.ndarray) and changed.shape == original.shape
                        and np.array_equal(changed, original, equal_nan=True)):
                    return {"passed": False, "cases": len(cases),
                            "message": (f"On {case.label}, your {spec.name} changed its argument "
                                        f"number {position + 1} in place. Work on a copy: inputs must "
                                        "never be mutated.")}
    if spec.judge_measurements is not None:
        problem = spec.judge_measurements(request.get("measurements", {}))
        if problem:
            return {"passed": False, "cases": len(cases), "message": problem}
    return {"passed": True, "cases": len(cases), "message": "all cases agree with the reference"}


def main():
    request = json.loads(sys.stdin.read())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = judge(request)
    sys.stdout.write(json.dumps(verdict))


if __name__ == "__main__":
    main()
