"""Comparing values: shapes, closeness, rows that sum to one, finite values, NumPy's warnings and
known mistakes."""
import warnings

import numpy as np

from .. import forms
from .calls import _arrays, _check_not_mutated, _explain_error, _named_arguments
from .failures import CheckFailed, _not_implemented, _stderr_discarded


def check_shape(name, value, shape, boolean=False):
    """``value`` is an array of exactly ``shape`` holding float64 numbers (booleans with
    ``boolean``): the form the hidden tests require, in their words."""
    problem = forms.array_problem(name, value, shape, boolean=boolean)
    if problem:
        raise CheckFailed(problem)
    print(f"✓ {name} has shape {value.shape}")


def _distinct(a, b, least=4):
    """``a`` and ``b`` written with as few significant digits (at least ``least``) as tell them apart."""
    for digits in range(least, 18):
        x, y = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if x != y:
            return x, y
    return repr(float(a)), repr(float(b))


def _where_nan(value):
    """Where the NaNs of ``value`` are, in words: rows for a matrix, positions for a vector."""
    bad = np.isnan(value)
    if value.ndim == 0:
        return ""
    if value.ndim == 1:
        at = np.flatnonzero(bad)
        return f"at position{'s' if len(at) > 1 else ''} {', '.join(map(str, at[:6]))} of {value.size}"
    rows = np.argwhere(bad.any(axis=-1))
    shown = ", ".join(str(tuple(int(i) for i in r)) if len(r) > 1 else str(int(r[0])) for r in rows[:6])
    total = int(np.prod(value.shape[:-1]))
    return f"in row{'s' if len(rows) > 1 else ''} {shown}{' …' if len(rows) > 6 else ''} ({len(rows)} of {total})"


def cmp(name, ours, expected, atol=1e-6, hint="", nan_hint=""):
    """``ours`` equals ``expected`` to ``atol``; otherwise say where and by how much.

    ``hint`` is added when the values differ and ``nan_hint`` when ``ours`` holds NaN; give
    them only where that example points at one cause.
    """
    ours = np.asarray(ours) if not isinstance(ours, np.ndarray) else ours
    expected = np.asarray(expected, dtype=float)
    if ours.shape != expected.shape:
        raise CheckFailed(f"{name}: shape {ours.shape}, expected {expected.shape}. {hint}".strip())
    if ours.dtype.kind not in "biuf":
        raise CheckFailed(f"{name}: expected numbers, got an array of dtype {ours.dtype}.")
    if ours.dtype.kind == "f" and ours.dtype != np.float64:
        raise CheckFailed(forms.array_problem(name, ours))
    if np.isnan(ours).any():
        raise CheckFailed(f"{name} contains NaN {_where_nan(ours)}: "
                          f"{np.array2string(ours, precision=4)}. {nan_hint}".strip())
    gap = np.abs(ours.astype(float) - expected)
    if not (gap <= atol).all():
        where = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
        factor = ""
        nonzero = expected != 0
        if nonzero.any() and (ours.astype(float)[~nonzero] == 0).all():
            ratio = ours.astype(float)[nonzero] / expected[nonzero]
            if np.allclose(ratio, ratio.flat[0], rtol=1e-6) and abs(ratio.flat[0] - 1) > 1e-3:
                factor = f" Yours is {ratio.flat[0]:.4g} times the expected value everywhere."
        mine, right = _distinct(float(ours[where]), float(expected[where]), least=6)
        raise CheckFailed(
            f"{name} is off by up to {gap.max():.3g} (tolerance {atol:g}); at index {where} "
            f"you have {mine}, expected {right}.{factor} {hint}".strip())
    print(f"✓ {name} matches to {atol:g}")


def check_rows_sum_to_one(name, weights, axis=-1, nan_hint=""):
    """Each slice of ``weights`` along ``axis`` is a distribution: non-negative, summing to 1."""
    weights = np.asarray(weights, dtype=float)
    if np.isnan(weights).any():
        raise CheckFailed(f"{name} contains NaN {_where_nan(np.moveaxis(weights, axis, -1))}. {nan_hint}".strip())
    if (weights < 0).any():
        raise CheckFailed(f"{name} has negative weights; softmax weights are never negative.")
    sums = weights.sum(axis=axis)
    if not np.allclose(sums, 1.0, atol=1e-9):
        shown = np.array2string(sums.ravel()[:6], precision=2, separator=", ")
        asked = axis % weights.ndim
        other = [a for a in range(weights.ndim) if a != asked and np.allclose(weights.sum(axis=a), 1.0, atol=1e-9)]
        named = [f"{a - weights.ndim}" if a - weights.ndim == -1 else f"{a}" for a in other]
        raise CheckFailed(f"the slices of {name} along axis {axis} sum to {shown}, not 1" + (
            f", but the slices along axis {named[0]} do: it is normalised along axis {named[0]} instead of "
            f"axis {axis}. Take the max and the sum along the `axis` you are given." if other else
            ": normalise along that axis (the max and the sum both along it, with keepdims=True)."))
    print(f"✓ every slice of {name} along axis {axis} sums to 1")


def check_finite(name, value, hint=""):
    """No NaN or infinity anywhere in ``value``."""
    value = np.asarray(value, dtype=float)
    if not np.isfinite(value).all():
        raise CheckFailed(f"{name} contains NaN or inf. {hint}".strip())
    print(f"✓ {name} is finite")


def check_no_numpy_warning(what, fn, *args, hint="", **kwargs):
    """Call ``fn(*args, **kwargs)`` and fail if NumPy warns (overflow, 0/0, ...); return the result.

    ``hint`` is a string, or a dict from words of the warning ("invalid", "overflow", ...) to the
    advice that warning calls for.
    """
    named = _named_arguments(fn, args, kwargs)
    snapshots = [(name, value, value.copy()) for name, value in _arrays(named)]
    try:
        with _stderr_discarded(), warnings.catch_warnings(record=True) as caught, \
                np.errstate(divide="warn", over="warn", invalid="warn", under="ignore"):
            warnings.simplefilter("always")
            result = fn(*args, **kwargs)
    except NotImplementedError:
        raise _not_implemented(fn) from None
    except Exception as exc:
        raise _explain_error(exc, fn, named) from None
    _check_not_mutated(fn, snapshots)
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if numeric:
        message = str(numeric[0].message)
        if isinstance(hint, dict):
            hint = next((advice for word, advice in hint.items() if word in message), "")
        raise CheckFailed(f"{what} made NumPy warn: \"{message}\". {hint}".strip())
    print(f"✓ {what} ran without a NumPy warning")
    return result


# ---------------------------------------------------------------- known mistakes

def cmp_known_mistakes(name, ours, expected, mistakes=(), atol=1e-9, hint="", nan_hint=""):
    """``ours`` equals ``expected``; if not and it equals a known wrong answer, name that mistake.

    ``mistakes`` is a sequence of ``(what you probably did, the array that mistake produces)``;
    the explanation completes the sentence "it is exactly what you get when ...". NaN in the
    same places counts as equal, so a mistake that produces NaN can be named too.
    """
    problem = forms.array_problem(name, ours, None if isinstance(ours, np.ndarray) else np.shape(expected))
    if problem:
        raise CheckFailed(problem)
    expected = np.asarray(expected, dtype=float)
    if ours.shape == expected.shape and np.allclose(ours, expected, rtol=1e-9, atol=atol):
        print(f"✓ {name} matches to {atol:g}")
        return
    matched = []
    for explanation, wrong in mistakes:
        wrong = np.asarray(wrong, dtype=float)
        if wrong.shape == expected.shape and np.allclose(wrong, expected, rtol=1e-9, atol=atol):
            continue                                  # this example cannot tell that mistake apart
        if wrong.shape == ours.shape and np.allclose(ours, wrong, rtol=1e-9, atol=atol, equal_nan=True):
            matched.append(explanation)
    if len(set(matched)) == 1:                        # two causes with the same result name neither
        raise CheckFailed(f"{name} is not right: it is exactly what you get when {matched[0]}.")
    cmp(name, ours, expected, atol=atol, hint=hint, nan_hint=nan_hint)
