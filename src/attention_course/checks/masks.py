"""Masks (lesson 03 and later): a causal mask, and masked rows of weights."""
import numpy as np

from .. import forms
from .failures import CheckFailed


# ---------------------------------------------------------------- masks (lesson 03 and later)

def check_causal_mask(name, mask, T):
    """``mask`` is the boolean ``(T, T)`` causal mask: True on and below the diagonal, False above."""
    problem = forms.array_problem(name, mask, (T, T), boolean=True)
    if problem:
        extra = ""
        if isinstance(mask, np.ndarray) and mask.shape != (T, T):
            extra = " One row per reading position, one column per position read."
        elif isinstance(mask, np.ndarray) and mask.dtype.kind == "f" and np.isinf(mask).any():
            extra = (" It holds -inf: that is the additive form (0 where allowed, -inf where blocked) "
                     "that some texts add to the scores. Here a mask is boolean: build it with dtype=bool.")
        elif isinstance(mask, np.ndarray):
            extra = " Build it with dtype=bool."
        raise CheckFailed(problem + extra)
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


def _row_softmax(scores, axis=-1):
    """A plain softmax for the checks' own candidate answers (-inf entries get 0, blind slices 0)."""
    scores = np.asarray(scores, dtype=float)
    top = np.max(scores, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore"):
        e = np.exp(scores - top)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _masked_mistakes(scores, mask):
    """Wrong answers a masked softmax is often mistaken for, as ``(what was done, weights)``."""
    hidden = np.where(mask, scores, -np.inf)
    return [
        ("the hidden weights are zeroed after the softmax, so the visible ones keep the old denominator "
         "(which still counts the hidden scores): mask the scores with -inf before the softmax",
         _row_softmax(scores) * mask),
        ("the softmax runs down the columns (axis=-2) instead of along each row (the last axis)",
         _row_softmax(hidden, axis=-2)),
        ("the mask is never applied", _row_softmax(scores)),
        ("the scores are multiplied by the mask: a hidden score becomes 0, which still gets weight; it "
         "must become -inf", _row_softmax(scores * mask)),
        ("the mask's polarity is reversed: True must mean 'may attend'",
         _row_softmax(np.where(mask, -np.inf, scores))),
    ] + ([("the mask is transposed (np.triu where np.tril belongs): position i reads the later positions "
           "instead of the earlier ones", _row_softmax(np.where(np.swapaxes(mask, -1, -2), scores, -np.inf)))]
         if mask.shape[-1] == mask.shape[-2] else [])


def check_masked_rows(name, weights, mask, scores=None, hint=""):
    """Weights obey a mask: 0 where it is False, rows with something visible sum to 1, rows with
    nothing visible are all 0.

    With ``scores`` (the scores the weights came from), a wrong answer that equals a known mistake
    is named. ``hint`` replaces the advice given when a hidden position gets weight.
    """
    weights = np.asarray(weights, dtype=float)
    try:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape)
    except ValueError:
        raise CheckFailed(f"{name} has shape {weights.shape}, which does not fit the mask of shape "
                          f"{np.shape(mask)}.") from None
    if scores is not None:
        scores = np.broadcast_to(np.asarray(scores, dtype=float), weights.shape)
        right = _row_softmax(np.where(mask, scores, -np.inf))
        if not np.allclose(weights, right, rtol=1e-9, atol=1e-12):
            matched = [explanation for explanation, wrong in _masked_mistakes(scores, mask)
                       if not np.allclose(wrong, right, atol=1e-12)
                       and np.allclose(weights, wrong, rtol=1e-9, atol=1e-12, equal_nan=True)]
            if len(matched) == 1:                  # two causes with the same weights name neither
                raise CheckFailed(f"{name} is exactly what you get when {matched[0]}.")
    visible = mask.any(axis=-1)                                    # (...,) rows with something to read
    if np.isnan(weights).any():
        rows = np.argwhere(np.isnan(weights).any(axis=-1))
        blind = [tuple(int(r) for r in row) for row in rows if not visible[tuple(row)]]
        first = tuple(int(r) for r in rows[0])
        if blind:
            raise CheckFailed(f"{name} contains NaN in row{'s' if len(blind) > 1 else ''} "
                              f"{', '.join(map(str, blind[:4]))}, which may read nothing: exp(-inf) is 0 "
                              "everywhere there, and 0/0 is NaN. Give such a row all-zero weights instead.")
        large = scores is not None and np.abs(scores[first][mask[first]]).max() > 700
        raise CheckFailed(f"{name} contains NaN in row {first}, which can read "
                          f"{int(mask[first].sum())} position(s)." + (
                              " Its scores are large enough for exp() to overflow: subtract the row's "
                              "max over the visible scores before exp()." if large else ""))
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
        square = mask.shape[-1] == mask.shape[-2] if mask.ndim >= 2 else False
        transposed = square and np.abs(np.where(np.swapaxes(mask, -1, -2), 0.0, weights)).max() <= 1e-12
        unmasked = bool((np.abs(weights)[~mask] > 0).all())
        why = ("All the weight sits where the mask is False and none where it is True: the polarity is "
               "reversed. True means 'may attend'." if flipped else
               "Every weight is 0 where the transposed mask is False: the mask was applied transposed "
               "(row i must read the columns j that row i of the mask allows)." if transposed else
               hint or ("No hidden position gets weight 0: the mask is not applied to these weights."
                        if unmasked else "Masked positions must get exactly 0."))
        raise CheckFailed(f"{name} puts weight {weights[where]:.4g} at {where}, where the mask is False. {why}")
    sums = weights.sum(axis=-1)[visible]
    empty = np.argwhere(visible & (np.abs(weights).sum(axis=-1) == 0))
    if empty.size:
        row = tuple(int(r) for r in empty[0])
        row = row[0] if len(row) == 1 else row
        diagonal = np.diagonal(weights, axis1=-2, axis2=-1) if weights.shape[-1] == weights.shape[-2] else None
        on_diagonal = diagonal is not None and np.diagonal(mask, axis1=-2, axis2=-1).all() and not diagonal.any()
        raise CheckFailed(f"row {row} of {name} is all zeros although the mask lets it read "
                          f"{int(mask[tuple(empty[0])].sum())} position(s)." + (
                              " Every weight on the diagonal is 0 too: a position must be allowed to read "
                              "itself (j ≤ i), and without the diagonal the first one has nothing to read."
                              if on_diagonal else ""))
    if not np.allclose(sums, 1.0, atol=1e-9):
        shown = np.array2string(sums[:6], precision=4, separator=", ")
        columns = weights.ndim >= 2 and np.allclose(weights.sum(axis=-2), 1.0, atol=1e-9)
        raise CheckFailed(f"rows of {name} that can see something sum to {shown}, not 1" + (
            ", but its columns sum to 1: it is normalised down the columns (axis -2) instead of along "
            "each row (the last axis)." if columns else
            ": each row must be normalised by the sum of its own visible weights."))
    print(f"✓ {name} respects the mask: hidden positions get 0, every row that sees something sums to 1"
          + (", blind rows are all 0" if (~visible).any() else ""))
