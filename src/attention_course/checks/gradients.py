"""Gradients (lesson 05): relative error, central differences, a constant factor, probes."""
import numpy as np

from .. import forms
from .failures import CheckFailed
from .values import _where_nan


# ---------------------------------------------------------------- gradients (lessons 05 and 07)

def rel_error(analytic, numeric):
    """Relative error of a gradient check, ``‖a − n‖ / max(‖a‖, ‖n‖)``; 0 when both are exactly 0."""
    analytic, numeric = np.asarray(analytic, dtype=float), np.asarray(numeric, dtype=float)
    scale = max(float(np.linalg.norm(analytic)), float(np.linalg.norm(numeric)))
    return 0.0 if scale == 0 else float(np.linalg.norm(analytic - numeric)) / scale


def _central_differences(f, x, h):
    numeric = np.zeros(x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        numeric[index] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    return numeric


def _constant_factor(analytic, numeric):
    """``k`` when ``analytic`` is ``k`` times ``numeric`` everywhere (to 1e-6), else None."""
    if not numeric.any() or not analytic.any():
        return None
    factor = float(np.vdot(analytic, numeric) / np.vdot(numeric, numeric))
    return factor if rel_error(analytic, factor * numeric) < 1e-6 else None


def check_gradient(name, analytic, f, x, tol=1e-7, h=1e-5, hint="", alternatives=(), known_factors=None):
    """``analytic`` is the gradient of the scalar function ``f`` at ``x``: central differences,
    computed here in float64, agree to a relative error below ``tol``.

    When they do not, the failure names what the evidence shows: ``known_factors`` maps a factor
    (say √d_k) to what it means when yours is that multiple of the right gradient;
    ``alternatives`` are ``(what you probably did, g)`` where ``g`` is a scalar function whose
    gradient a plausible mistake computes instead (the loss without the mask, say): if yours
    matches one, that one is named. ``hint`` is given only when nothing matched.
    """
    x = np.array(x, dtype=float)
    if not isinstance(analytic, np.ndarray):
        raise CheckFailed(forms.array_problem(name, analytic, x.shape))
    if analytic.shape != x.shape:
        why = ""
        if analytic.ndim > x.ndim and analytic.shape[analytic.ndim - x.ndim:] == x.shape:
            why = (" It has extra leading axes, one gradient per sequence: a parameter shared by the whole "
                   "batch collects the sum of them over the leading axes.")
        elif analytic.shape == x.shape[::-1]:
            why = " It is transposed: for P = X W the weight gradient is Xᵀ dP, shaped like W."
        raise CheckFailed(f"{forms.array_problem(name, analytic, x.shape)} A gradient has the shape of what it "
                          f"differentiates.{why}")
    problem = forms.array_problem(name, analytic, x.shape)
    if problem:
        raise CheckFailed(problem)
    if not np.isfinite(analytic).all():
        raise CheckFailed(f"{name} contains NaN or inf {_where_nan(np.where(np.isfinite(analytic), 0.0, np.nan))}.")
    numeric = _central_differences(f, x, h)
    error = rel_error(analytic, numeric)
    if error > tol:
        factor = _constant_factor(analytic, numeric)
        named = next((meaning for value, meaning in (known_factors or {}).items()
                      if factor is not None and np.isclose(factor, value, rtol=1e-6)), None)
        for explanation, other in alternatives:
            if named is None and rel_error(analytic, _central_differences(other, x, h)) <= max(tol, 1e-6):
                named = f"it is exactly the gradient you get when {explanation}"
        if named is not None:
            detail = f"Yours is {factor:.4g} times the right gradient: {named}." if factor is not None and \
                not named.startswith("it is") else named[0].upper() + named[1:] + "."
            hint = ""
        elif not analytic.any():
            detail = "Yours is zero everywhere, but the loss does change with it."
        elif not numeric.any():
            detail = "The loss does not change with it at all here, so its gradient is 0."
        elif factor is not None:
            detail = f"Yours is {factor:.4g} times the right gradient everywhere: a constant factor is off."
        else:
            where = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(analytic - numeric)), x.shape))
            detail = (f"The largest gap is at index {where}: yours {analytic[where]:.6g}, central "
                      f"differences {numeric[where]:.6g}.")
        raise CheckFailed(f"{name} disagrees with central differences: relative error {error:.2e}, which "
                          f"should be below {tol:g}. {detail} {hint}".strip())
    print(f"✓ {name} agrees with central differences (relative error {error:.1e} < {tol:g})")


def check_probes(function, x, points, h=None):
    """The points at which ``function`` called ``f`` (noted by the check's own ``f``) move one entry
    of ``x`` at a time by ``h`` (the default 1e-5 when None) and put every entry back exactly, in the
    words of the hidden test."""
    from ..probes import probe_problem

    problem = probe_problem(function, x, points, h)
    if problem:
        raise CheckFailed(problem[0].upper() + problem[1:] if problem.startswith("with") else problem)
    print(f"✓ {function} probes one entry at a time by h = {'1e-5' if h is None else h} and puts each back exactly")


def check_zero(name, value, hint=""):
    """Every entry of ``value`` is exactly 0, not merely small."""
    value = np.asarray(value, dtype=float)
    if np.isnan(value).any():
        raise CheckFailed(f"{name} contains NaN where it should be exactly 0. {hint}".strip())
    if value.any():
        where = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(value)), value.shape))
        raise CheckFailed(f"{name} should be exactly 0, but it is {value[where]:.3g} at index {where}. "
                          f"{hint}".strip())
    print(f"✓ {name} is exactly 0")


#: The capstone's parameters in the order backpropagation reaches them (nearest the loss first).
