"""Visible checks: each one either passes quietly with a tick or says *why* it failed.

In the spirit of d2l's ``check_shape`` and Karpathy's ``cmp``: a failed check names
what was compared, where it differs, and the most likely cause in plain words.
"""
import contextlib
import io
import os
import sys
import tempfile
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


def check_runs(fn, *args, **kwargs):
    """Your function runs on a small example and returns something."""
    result = call(fn, *args, **kwargs)
    if result is None:
        raise CheckFailed(f"{fn.__name__} returned None: did you forget the `return`?")
    return result


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
