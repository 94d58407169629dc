"""How a finite-difference gradient probed its function: the points ``f`` was called at.

``numerical_gradient`` must move one entry at a time by exactly ``h`` (``1e-5`` when no ``h`` is
given) and put each entry back exactly afterwards. Whether it did shows in the points it called
``f`` at, which the visible check (an ``f`` of its own that notes them) and the hidden test (the
grader's loss, which the kernel calls) both see; both judge them with ``probe_problem`` and say
the same sentence.
"""
import numpy as np

DEFAULT_STEP = 1e-5
#: Words of the message about an entry not put back exactly (the hidden test's diagnosis).
NOT_RESTORED = "an entry probed earlier was not put back exactly"


def probe_problem(function, x, points, h=None):
    """Why the ``points`` (arrays shaped like ``x``) at which ``function`` called ``f`` break the
    rules of a central-difference probe with step ``h`` (None: the default was left to apply), or
    None."""
    x = np.array(x, dtype=float)
    step = DEFAULT_STEP if h is None else float(h)
    for point in points:
        point = np.asarray(point, dtype=float)
        if point.shape != x.shape:
            continue                          # the shape of what f receives is judged by the values
        gap = np.abs(point - x)
        stale = np.argwhere((gap > 0) & (gap < step / 2))
        if len(stale) and np.count_nonzero(gap) > 1:
            where = tuple(int(i) for i in stale[0])
            return (f"{function} called f at a point where entry {where} was {float(point[where])!r} instead of "
                    f"{float(x[where])!r}: {NOT_RESTORED}. Save each entry's value before probing it and put that "
                    "value back afterwards, rather than adding h and subtracting it again (x + h − 2h + h is "
                    "not always x in floating point).")
        moved = np.flatnonzero(gap)
        if h is None and len(moved) == 1 and not np.isclose(gap.flat[moved[0]], DEFAULT_STEP, rtol=1e-4):
            where = tuple(int(i) for i in np.unravel_index(moved[0], x.shape))
            return (f"with no h given, {function} moved entry {where} by {gap.flat[moved[0]]:.3g}, not by the "
                    "default step h = 1e-5: keep the signature numerical_gradient(f, x, h=1e-5).")
    return None
