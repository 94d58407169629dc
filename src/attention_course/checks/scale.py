"""Scale and statistics (lessons 01-03): the softmax's scale, a statistic within its standard error, the
global generator untouched."""
import numpy as np

from .. import forms
from .calls import _explain_error, _named_arguments
from .failures import CheckFailed, _name_of, _quietly
from .masks import _row_softmax
from .values import _distinct, _where_nan


# ---------------------------------------------------------------- scale and statistics (lessons 01-03)

def _softmax_scale(weights, scores):
    """The ``c`` with ``weights = softmax(c · scores)`` along each row, or None if there is none."""
    pairs = []
    for w, s in zip(weights.reshape(-1, weights.shape[-1]), scores.reshape(-1, scores.shape[-1])):
        keep = w > 0
        if keep.sum() >= 2 and np.ptp(s[keep]) > 0:
            lw, ss = np.log(w[keep]), s[keep]
            pairs.append((lw - lw.mean(), ss - ss.mean()))
    if not pairs:
        return None
    c = sum(lw @ ss for lw, ss in pairs) / sum(ss @ ss for _, ss in pairs)
    if max(float(np.abs(lw - c * ss).max()) for lw, ss in pairs) > 1e-6:
        return None
    return c


def check_score_scale(name, weights, raw_scores, d_k, width="d_k", **other_widths):
    """The rows of ``weights`` are ``softmax(raw_scores / √d_k)``; otherwise name the divisor used.

    ``width`` is what the lesson calls the width (``"d"`` in lesson 01); ``other_widths`` are
    widths one might divide by by mistake, e.g. ``d_model=3`` or ``d_v=5``.
    """
    weights = np.asarray(weights, dtype=float)
    scores = np.broadcast_to(np.asarray(raw_scores, dtype=float), weights.shape)
    if np.isnan(weights).any():
        raise CheckFailed(f"{name} contains NaN {_where_nan(weights)}.")
    root = f"√{width}"
    c = _softmax_scale(weights, scores)
    if c is None:
        swapped = np.swapaxes(scores, -1, -2)
        if np.allclose(weights, _row_softmax(scores / np.sqrt(d_k), axis=-2), atol=1e-12):
            raise CheckFailed(f"{name} is the softmax of the scores down each column (axis=-2): each "
                              "query's row must be the distribution, so take the softmax along the last axis.")
        if weights.shape[-1] == weights.shape[-2] and _softmax_scale(weights, swapped) is not None:
            raise CheckFailed(f"{name} is a softmax of the transposed scores: row i holds what every "
                              "position scores on i. The scores are Q Kᵀ (queries times keys), not K Qᵀ.")
        raise CheckFailed(f"{name} is not a softmax of the scores along each row: softmax each row "
                          f"of Q Kᵀ / {root} (the last axis) and change nothing else.")
    if np.isclose(c, 1 / np.sqrt(d_k), rtol=1e-6):
        print(f"✓ {name} = softmax(scores / {root}) with {width} = {d_k}")
        return
    divisor = 1 / c if c != 0 else np.inf
    guesses = {"1: the scores were not scaled": 1.0,
               f"{width} = {d_k} instead of {root}": float(d_k)}
    for other, value in other_widths.items():
        guesses[f"√{other} = √{value} instead of {root} = √{d_k}"] = float(np.sqrt(value))
        guesses[f"{other} = {value} instead of {root} = √{d_k}"] = float(value)
    for said, value in guesses.items():
        if np.isclose(divisor, value, rtol=1e-6):
            tokens = ""
            if said.startswith(("√T ", "T ")):       # the width read from an axis counted from the front
                tokens = (f" T = {other_widths['T']} is the number of tokens, the axis before the last: in a batch, "
                          f"X.shape[1] is T. Read {width} from the end, X.shape[-1], so that batch axes in front "
                          "do not shift it.")
            raise CheckFailed(f"{name} is what you get by dividing the scores by {said}. The scale "
                              f"is 1/{root} with {width} = {d_k}" + (
                                  " = K.shape[-1]." if width == "d_k" else ".") + tokens)
    yours, right = _distinct(divisor, float(np.sqrt(d_k)))
    raise CheckFailed(f"{name} is what you get by dividing the scores by {yours}, but the "
                      f"divisor should be {root} = {right} ({width} = {d_k}).")


def check_statistic(name, value, expected, standard_error, within=5.0, hint="", fingerprints=()):
    """A simulated ``value`` is a float within ``within`` standard errors of ``expected``.

    ``fingerprints`` are ``(what you probably computed, the value that gives)``: when ``value`` is
    off and lies within 5 % of one of them, that is named instead of ``hint``.
    """
    problem = forms.float_problem(name.split("(")[0], value)
    if problem:
        raise CheckFailed(problem)
    if not np.isfinite(value):
        raise CheckFailed(f"{name} is {value}. {hint}".strip())
    z = (float(value) - expected) / standard_error
    if abs(z) > within:
        for explanation, typical in fingerprints:
            if np.isclose(float(value), typical, rtol=0.05):
                hint = f"It is close to {typical:.4g}, which is {explanation}."
                break
        raise CheckFailed(f"{name} = {float(value):.6g}, but it should be near {expected:g}: that is "
                          f"{z:+.1f} standard errors away (one standard error is {standard_error:.3g} "
                          f"here; allowed ±{within:g}). {hint}".strip())
    print(f"✓ {name} = {float(value):.4f}, {abs(z):.1f} standard errors from {expected:g}")


def check_global_generator_untouched(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` neither reseeds NumPy's global generator nor draws from it, in the
    words of the hidden test."""
    from ..randomness import GLOBAL_GENERATOR_PROBLEM, moves_the_global_generator

    named = _named_arguments(fn, args, kwargs)
    try:
        moved = _quietly(moves_the_global_generator, fn, *args, **kwargs)
    except Exception as exc:
        raise _explain_error(exc, fn, named) from None
    if moved:
        raise CheckFailed(GLOBAL_GENERATOR_PROBLEM.format(function=_name_of(fn)))
    print(f"✓ {_name_of(fn)} leaves NumPy's global generator alone")
