"""Masks for hidden-test cases, drawn from the case generator: each keeps the form a case is
about (a key mask that hides something, padding with an empty sequence, blind rows) while
which positions it hides changes from one submission to the next. True = may attend."""
import numpy as np


def key_mask(g, T_k):
    """``(T_k,)``: at least one key visible and at least one hidden."""
    mask = g.random(T_k) < 0.6
    order = g.permutation(T_k)
    mask[order[0]], mask[order[1]] = True, False
    return mask


def padding_mask(g, B, T_k, empty=1):
    """``(B, 1, T_k)``: sequence b reads its first L_b keys; ``empty`` of them read none, the
    others between 1 and T_k - 1 (so every real sequence is padded)."""
    lengths = g.integers(1, T_k, size=B)
    lengths[g.permutation(B)[:empty]] = 0
    return (np.arange(T_k) < lengths[:, None])[:, None, :]


def visible_mask(g, shape, p=0.6, blind_rows=0):
    """A random mask of ``shape`` in which every row (last axis) sees something, except
    ``blind_rows`` rows drawn at random, which see nothing."""
    mask = g.random(shape) < p
    rows = mask.reshape(-1, shape[-1])
    rows[np.arange(len(rows)), g.integers(shape[-1], size=len(rows))] = True
    rows[g.permutation(len(rows))[:blind_rows]] = False
    return rows.reshape(shape)
