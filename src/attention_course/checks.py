"""Visible checks: each one either passes quietly with a tick or says *why* it failed.

In the spirit of d2l's ``check_shape`` and Karpathy's ``cmp``: a failed check names
what was compared, where it differs, and the most likely cause in plain words.
"""
import ast
import contextlib
import inspect
import io
import os
import tempfile
import textwrap
import warnings

import numpy as np


class CheckFailed(AssertionError):
    """A visible check failed; the message explains why."""


@contextlib.contextmanager
def _stderr_discarded():
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def call(fn, *args, **kwargs):
    """Call your function for a check, so that its warnings or stderr do not fail the check.

    A correct answer is judged on its values: a warning is not a wrong answer.
    """
    try:
        with _stderr_discarded(), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except NotImplementedError:
        raise CheckFailed(f"{getattr(fn, '__name__', 'this function')} is not implemented yet: "
                          "replace `raise NotImplementedError()` with your code.") from None


def _is_stub(fn):
    """True when the body of ``fn`` is nothing but ``raise NotImplementedError``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    definition = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    if definition is None:
        return False
    body = [node for node in definition.body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def check_attempted(fn):
    """Fails only while ``fn`` is still the stub that raises ``NotImplementedError``.

    It reads the function instead of calling it: whether the answer is right is for the
    hidden test to say, and a mistake in a function that ``fn`` calls (an earlier exercise)
    must not count against ``fn`` here.
    """
    if _is_stub(fn):
        raise CheckFailed(f"{fn.__name__} is not implemented yet: replace "
                          "`raise NotImplementedError()` with your code.")
    print(f"✓ {getattr(fn, '__name__', 'the function')} is written; the hidden tests decide the points")


def check_shape(name, value, shape):
    """``value`` is an array of exactly ``shape``."""
    if not isinstance(value, np.ndarray):
        raise CheckFailed(f"{name} should be a NumPy array of shape {shape}, got {type(value).__name__}.")
    if value.shape != tuple(shape):
        raise CheckFailed(f"{name} has shape {value.shape}, expected {tuple(shape)}.")
    print(f"✓ {name} has shape {value.shape}")


def cmp(name, ours, expected, atol=1e-6, hint=""):
    """``ours`` equals ``expected`` to ``atol``; otherwise say where and by how much."""
    ours = np.asarray(ours) if not isinstance(ours, np.ndarray) else ours
    expected = np.asarray(expected, dtype=float)
    if ours.shape != expected.shape:
        raise CheckFailed(f"{name}: shape {ours.shape}, expected {expected.shape}. {hint}".strip())
    if ours.dtype.kind not in "biuf":
        raise CheckFailed(f"{name}: expected numbers, got an array of dtype {ours.dtype}.")
    if np.isnan(ours).any():
        raise CheckFailed(f"{name} contains NaN: {np.array2string(ours, precision=4)}. "
                          "Large logits overflow exp() unless you subtract the max first.")
    gap = np.abs(ours.astype(float) - expected)
    if not (gap <= atol).all():
        where = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
        raise CheckFailed(
            f"{name} is off by up to {gap.max():.3g} (tolerance {atol:g}); at index {where} "
            f"you have {ours[where]:.6g}, expected {expected[where]:.6g}. {hint}".strip())
    print(f"✓ {name} matches to {atol:g}")


def check_rows_sum_to_one(name, weights, axis=-1):
    """Each slice of ``weights`` along ``axis`` is a distribution: non-negative, summing to 1."""
    weights = np.asarray(weights, dtype=float)
    if np.isnan(weights).any():
        raise CheckFailed(f"{name} contains NaN. Subtract the max before exp(), and give a row "
                          "with nothing visible all-zero weights instead of 0/0.")
    if (weights < 0).any():
        raise CheckFailed(f"{name} has negative weights; softmax weights are never negative.")
    sums = weights.sum(axis=axis)
    if not np.allclose(sums, 1.0, atol=1e-9):
        shown = np.array2string(sums.ravel()[:6], precision=2, separator=", ")
        raise CheckFailed(f"the slices of {name} along axis {axis} sum to {shown}, not 1: "
                          "did you normalise over the wrong axis?")
    print(f"✓ every slice of {name} along axis {axis} sums to 1")


def check_finite(name, value, hint=""):
    """No NaN or infinity anywhere in ``value``."""
    value = np.asarray(value, dtype=float)
    if not np.isfinite(value).all():
        raise CheckFailed(f"{name} contains NaN or inf. {hint}".strip())
    print(f"✓ {name} is finite")


def check_unchanged(name, before, after):
    """An input is the same after the call as before it."""
    if not np.array_equal(np.asarray(before), np.asarray(after), equal_nan=True):
        raise CheckFailed(f"your function changed {name} in place; work on a copy "
                          "(`x = np.array(x, dtype=float)`) so the caller's data stays intact.")
    print(f"✓ {name} was left unchanged")


# ---------------------------------------------------------------- masks (lesson 04 and later)

def check_causal_mask(name, mask, T):
    """``mask`` is the boolean ``(T, T)`` causal mask: True on and below the diagonal, False above."""
    if not isinstance(mask, np.ndarray):
        raise CheckFailed(f"{name} should be a NumPy array, got {type(mask).__name__}.")
    if mask.shape != (T, T):
        raise CheckFailed(f"{name} has shape {mask.shape}, expected ({T}, {T}): one row per reading "
                          "position, one column per position read.")
    if mask.dtype != bool:
        extra = ""
        if mask.dtype.kind == "f" and np.isinf(mask).any():
            extra = (" It holds -inf: that is the additive form (0 where allowed, -inf where blocked) "
                     "that some texts add to the scores. Here a mask is boolean: True = may attend.")
        raise CheckFailed(f"{name} has dtype {mask.dtype}, but a mask must be boolean "
                          f"(True = may attend); build it with dtype=bool.{extra}")
    i, j = np.indices((T, T))
    diagonal, future, past = mask[i == j], mask[j > i], mask[j < i]
    if T > 1 and not diagonal.any() and future.all() and not past.any():
        raise CheckFailed(f"{name} is exactly reversed: True above the diagonal, False on and below. "
                          "True must mean 'may attend', not 'blocked'.")
    if T > 1 and diagonal.all() and future.all() and not past.any():
        raise CheckFailed(f"{name} is the upper triangle (np.triu): position i could read every later "
                          "position and none of the earlier ones. Keep the lower triangle instead.")
    if not diagonal.all():
        raise CheckFailed(f"{name} is False on the diagonal: position i must be allowed to read itself "
                          "(j = i). A strict lower triangle leaves the first position with nothing "
                          "to read at all.")
    if future.any():
        where = tuple(int(v) for v in np.argwhere(mask & (j > i))[0])
        raise CheckFailed(f"{name} is True at {where}, above the diagonal: position {where[0]} "
                          f"could read the later position {where[1]}, the future.")
    if not past.all():
        where = tuple(int(v) for v in np.argwhere(~mask & (j < i))[0])
        raise CheckFailed(f"{name} is False at {where}, below the diagonal: position {where[0]} "
                          f"must be able to read the earlier position {where[1]}.")
    print(f"✓ {name} is the boolean causal mask for T = {T}")


def check_masked_rows(name, weights, mask):
    """Weights obey a mask: 0 where it is False, rows with something visible sum to 1, rows with nothing visible are all 0."""
    weights = np.asarray(weights, dtype=float)
    try:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape)
    except ValueError:
        raise CheckFailed(f"{name} has shape {weights.shape}, which does not fit the mask of shape "
                          f"{np.shape(mask)}.") from None
    if np.isnan(weights).any():
        rows = np.argwhere(np.isnan(weights).any(axis=-1))[0]
        blind = not mask[tuple(rows)].any()
        raise CheckFailed(f"{name} contains NaN (first in row {tuple(int(r) for r in rows)}). " + (
            "That row has nothing visible: exp(-inf) is 0 everywhere, and 0/0 is NaN. Give such a row "
            "all-zero weights instead." if blind else
            "Subtract the row max before exp() and take it over the visible scores only."))
    visible = mask.any(axis=-1)                                    # (...,) rows with something to read
    blind_rows = weights[~visible]                                 # (n_blind, T_k)
    if blind_rows.size and np.abs(blind_rows).max() > 1e-12:
        uniform = np.allclose(blind_rows, 1.0 / weights.shape[-1])
        raise CheckFailed(f"a row of {name} with nothing visible has weights "
                          f"{np.array2string(blind_rows[0], precision=3)}, not zeros. " + (
                              "They are uniform: filling the masked scores with a large finite number "
                              "such as -1e9 ties them all, and softmax then spreads the row evenly over "
                              "positions it must not read." if uniform else
                              "A row that may read nothing must read nothing: all-zero weights."))
    hidden = np.where(mask, 0.0, np.abs(weights))
    if hidden.max() > 1e-12:
        where = tuple(int(v) for v in np.unravel_index(np.argmax(hidden), hidden.shape))
        flipped = np.abs(np.where(mask, weights, 0.0)).max() <= 1e-12
        raise CheckFailed(f"{name} puts weight {weights[where]:.4g} at {where}, where the mask is False. " + (
            "All the weight sits where the mask is False and none where it is True: the polarity is "
            "reversed. True means 'may attend'." if flipped else
            "Masked positions must get exactly 0: replace their scores by -inf before the softmax."))
    sums = weights.sum(axis=-1)[visible]
    empty = np.argwhere(visible & (np.abs(weights).sum(axis=-1) == 0))
    if empty.size:
        row = tuple(int(r) for r in empty[0])
        raise CheckFailed(f"row {row} of {name} is all zeros although it may read some positions. Does "
                          "your mask hide more than it should? A strict triangle (no diagonal) leaves the "
                          "first position with nothing to read.")
    if not np.allclose(sums, 1.0, atol=1e-9):
        shown = np.array2string(sums[:6], precision=4, separator=", ")
        raise CheckFailed(f"rows of {name} that can see something sum to {shown}, not 1. Zeroing the "
                          "hidden weights after the softmax leaves the visible ones too small: mask the "
                          "scores before the softmax (or renormalise).")
    print(f"✓ {name} respects the mask: hidden positions get 0, every row that sees something sums to 1"
          + (", blind rows are all 0" if (~visible).any() else ""))


def check_no_numpy_warning(what, fn, *args, hint="", **kwargs):
    """Call ``fn(*args, **kwargs)`` and fail if NumPy warns (overflow, 0/0, ...); return the result."""
    try:
        with _stderr_discarded(), warnings.catch_warnings(record=True) as caught, \
                np.errstate(divide="warn", over="warn", invalid="warn", under="ignore"):
            warnings.simplefilter("always")
            result = fn(*args, **kwargs)
    except NotImplementedError:
        raise CheckFailed(f"{getattr(fn, '__name__', 'this function')} is not implemented yet: "
                          "replace `raise NotImplementedError()` with your code.") from None
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if numeric:
        raise CheckFailed(f"{what} made NumPy warn: \"{numeric[0].message}\". {hint}".strip())
    print(f"✓ {what} ran without a NumPy warning")
    return result


# ---------------------------------------------------------------- scale and statistics (lessons 02-03)

def check_score_scale(name, weights, raw_scores, d_k, **other_widths):
    """The rows of ``weights`` are ``softmax(raw_scores / √d_k)``; otherwise name the divisor used.

    ``other_widths`` are widths one might divide by by mistake, e.g. ``d_model=3`` or ``d_v=5``.
    """
    weights = np.asarray(weights, dtype=float)
    scores = np.broadcast_to(np.asarray(raw_scores, dtype=float), weights.shape)
    if np.isnan(weights).any():
        raise CheckFailed(f"{name} contains NaN.")
    # If weights = softmax(c · scores) along each row, then log w = c · scores + (a row constant).
    pairs = []
    for w, s in zip(weights.reshape(-1, weights.shape[-1]), scores.reshape(-1, scores.shape[-1])):
        keep = w > 0
        if keep.sum() >= 2 and np.ptp(s[keep]) > 0:
            lw, ss = np.log(w[keep]), s[keep]
            pairs.append((lw - lw.mean(), ss - ss.mean()))
    if not pairs:
        raise CheckFailed(f"{name}: no row has two different scores with positive weight, so the "
                          "scale cannot be read off.")
    c = sum(lw @ ss for lw, ss in pairs) / sum(ss @ ss for _, ss in pairs)
    if max(float(np.abs(lw - c * ss).max()) for lw, ss in pairs) > 1e-6:
        raise CheckFailed(f"{name} is not a softmax of the scores along each row: softmax each row "
                          "of Q Kᵀ / √d_k (the last axis) and change nothing else.")
    if np.isclose(c, 1 / np.sqrt(d_k), rtol=1e-6):
        print(f"✓ {name} = softmax(scores / √d_k) with d_k = {d_k}")
        return
    divisor = 1 / c if c != 0 else np.inf
    guesses = {"1: the scores were not scaled": 1.0, f"d_k = {d_k} instead of √d_k": float(d_k)}
    for width, value in other_widths.items():
        guesses[f"√{width} = √{value} instead of √d_k = √{d_k}"] = float(np.sqrt(value))
        guesses[f"{width} = {value} instead of √d_k = √{d_k}"] = float(value)
    for said, value in guesses.items():
        if np.isclose(divisor, value, rtol=1e-6):
            raise CheckFailed(f"{name} is what you get by dividing the scores by {said}. The scale "
                              f"is 1/√d_k with d_k = K.shape[-1] = {d_k}.")
    raise CheckFailed(f"{name} is what you get by dividing the scores by {divisor:.4g}, but the "
                      f"divisor should be √d_k = {np.sqrt(d_k):.4g} (d_k = K.shape[-1] = {d_k}).")


def check_statistic(name, value, expected, standard_error, within=5.0, hint=""):
    """A simulated ``value`` is a float within ``within`` standard errors of ``expected``."""
    if isinstance(value, np.ndarray) or not isinstance(value, (float, np.floating)):
        shape = f" of shape {value.shape}" if isinstance(value, np.ndarray) else ""
        raise CheckFailed(f"{name} should be a float, but its type is {type(value).__name__}{shape}: "
                          "return float(...).")
    if not np.isfinite(value):
        raise CheckFailed(f"{name} is {value}. {hint}".strip())
    z = (float(value) - expected) / standard_error
    if abs(z) > within:
        raise CheckFailed(f"{name} = {float(value):.6g}, but it should be near {expected:g}: that is "
                          f"{z:+.1f} standard errors away (one standard error is {standard_error:.3g} "
                          f"here; allowed ±{within:g}). {hint}".strip())
    print(f"✓ {name} = {float(value):.4f}, {abs(z):.1f} standard errors from {expected:g}")


# ---------------------------------------------------------------- known mistakes (lesson 06 and later)

def cmp_known_mistakes(name, ours, expected, mistakes=(), atol=1e-9, hint=""):
    """``ours`` equals ``expected``; if not and it equals a known wrong answer, name that mistake.

    ``mistakes`` is a sequence of ``(what you probably did, the array that mistake produces)``;
    the explanation completes the sentence "it is exactly what you get when ...".
    """
    if not isinstance(ours, np.ndarray):
        raise CheckFailed(f"{name} should be a NumPy array of shape {np.shape(expected)}, "
                          f"got {type(ours).__name__}.")
    expected = np.asarray(expected, dtype=float)
    if ours.shape == expected.shape and ours.dtype.kind in "biuf" and \
            np.allclose(ours, expected, rtol=1e-9, atol=atol):
        print(f"✓ {name} matches to {atol:g}")
        return
    for explanation, wrong in mistakes:
        wrong = np.asarray(wrong, dtype=float)
        if wrong.shape == expected.shape and np.allclose(wrong, expected, rtol=1e-9, atol=atol):
            continue                                  # this example cannot tell that mistake apart
        if wrong.shape == ours.shape and ours.dtype.kind in "biuf" and \
                np.allclose(ours, wrong, rtol=1e-9, atol=atol, equal_nan=True):
            raise CheckFailed(f"{name} is not right: it is exactly what you get when {explanation}.")
    cmp(name, ours, expected, atol=atol, hint=hint)


# ---------------------------------------------------------------- memory (lesson 08)

def check_peak_memory(name, peak_bytes, limit_bytes, hint=""):
    """A measured peak (bytes, from ``tracemalloc``) stays under ``limit_bytes``; otherwise say by how much."""
    if peak_bytes >= limit_bytes:
        raise CheckFailed(f"{name} peaked at {peak_bytes / 1e6:.1f} MB, over the limit of "
                          f"{limit_bytes / 1e6:.1f} MB ({peak_bytes / limit_bytes:.1f} times too much). "
                          f"{hint}".strip())
    print(f"✓ {name} peaked at {peak_bytes / 1e6:.2f} MB, under the limit of {limit_bytes / 1e6:.1f} MB")


# ---------------------------------------------------------------- gradients (lesson 05)

def rel_error(analytic, numeric):
    """Relative error of a gradient check, ``‖a − n‖ / max(‖a‖, ‖n‖)``; 0 when both are exactly 0."""
    analytic, numeric = np.asarray(analytic, dtype=float), np.asarray(numeric, dtype=float)
    scale = max(float(np.linalg.norm(analytic)), float(np.linalg.norm(numeric)))
    return 0.0 if scale == 0 else float(np.linalg.norm(analytic - numeric)) / scale


def check_gradient(name, analytic, f, x, tol=1e-7, h=1e-5, hint=""):
    """``analytic`` is the gradient of the scalar function ``f`` at ``x``: central differences,
    computed here in float64, agree to a relative error below ``tol``."""
    x = np.array(x, dtype=float)
    if not isinstance(analytic, np.ndarray):
        raise CheckFailed(f"{name} should be a NumPy array of shape {x.shape}, got {type(analytic).__name__}.")
    if analytic.shape != x.shape:
        raise CheckFailed(f"{name} has shape {analytic.shape}, but a gradient has the shape of what it "
                          f"differentiates: {x.shape}. {hint}".strip())
    if not np.isfinite(analytic).all():
        raise CheckFailed(f"{name} contains NaN or inf. A row with nothing visible has all-zero weights, "
                          f"so its gradient is 0, not 0/0. {hint}".strip())
    numeric = np.zeros(x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        numeric[index] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    error = rel_error(analytic, numeric)
    if error > tol:
        if not analytic.any():
            detail = "Yours is zero everywhere, but the loss does change with it."
        elif not numeric.any():
            detail = "The loss does not change with it at all here, so its gradient is 0."
        else:
            factor = float(np.vdot(analytic, numeric) / np.vdot(numeric, numeric))
            if rel_error(analytic, factor * numeric) < 1e-6:
                detail = f"Yours is {factor:.4g} times the right gradient everywhere: a constant factor is off."
            else:
                where = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(analytic - numeric)), x.shape))
                detail = (f"The largest gap is at index {where}: yours {analytic[where]:.6g}, central "
                          f"differences {numeric[where]:.6g}.")
        raise CheckFailed(f"{name} disagrees with central differences: relative error {error:.2e}, which "
                          f"should be below {tol:g}. {detail} {hint}".strip())
    print(f"✓ {name} agrees with central differences (relative error {error:.1e} < {tol:g})")


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
