"""Hidden tests of lesson 04: ``causal_mask``, ``masked_softmax`` and ``causal_self_attention``."""
import numpy as np

from ..spec import Bug, Case, Spec, register
from .masks import key_mask, padding_mask, visible_mask


# ---------------------------------------------------------------- causal_mask

def causal_mask_cases(g):
    # T = 3 first: it tells every catalogued bug apart (at T = 1 several of them coincide).
    lengths = (3, 1, 2, int(g.integers(4, 8)), int(g.integers(9, 17)))
    return [Case(f"T = {T}", (T,)) for T in lengths]


def _tri(T, k=0, upper=False, dtype=bool):
    ones = np.ones((T, T), dtype=dtype)
    return np.triu(ones, k) if upper else np.tril(ones, k)


register(Spec(
    name="causal_mask",
    cases=causal_mask_cases,
    outputs=("mask",),
    bugs=(
        Bug("the diagonal is left out (a strict lower triangle, k=-1), so no position may read itself",
            lambda R, T: _tri(T, k=-1)),
        Bug("the mask is the upper triangle (np.triu): each position reads the future instead of the past",
            lambda R, T: _tri(T, upper=True)),
        Bug("the polarity is reversed: True marks the blocked (future) positions instead of the "
            "positions that may be read", lambda R, T: _tri(T, k=1, upper=True)),
        Bug("the mask is built from np.ones without dtype=bool, so it holds 0.0/1.0 floats instead of "
            "booleans", lambda R, T: _tri(T, dtype=float)),
        Bug("it returns the additive form (0 where allowed, -inf where blocked) instead of a boolean mask",
            lambda R, T: np.where(_tri(T), 0.0, -np.inf)),
    ),
))


# ---------------------------------------------------------------- masked_softmax

def _hidden_far_above(g, rows, T):
    """Scores of ``rows`` rows in which a hidden score sits near +1e4 while the visible ones are
    far below it (near -1e4 in the first row, a few units below +1e4 in the others), and the mask."""
    mask = visible_mask(g, (rows, T), p=0.5)
    mask[mask.all(axis=1), g.integers(T)] = False               # every row hides something
    level = np.where(np.arange(rows) == 0, -1e4, 1e4 - 3.0)[:, None]
    scores = level + g.normal(size=(rows, T))
    for r in range(rows):
        scores[r, g.choice(np.flatnonzero(~mask[r]))] = 1e4 + abs(g.normal())
    return scores, mask


def masked_softmax_cases(g):
    causal5 = np.tril(np.ones((5, 5), dtype=bool))
    blind = visible_mask(g, (2, 4, 6), blind_rows=2)        # two rows that may read nothing
    hidden_big, hidden_big_mask = _hidden_far_above(g, 2, 4)
    whole_rows = np.zeros((4, 1), dtype=bool)
    whole_rows[g.permutation(4)[:2]] = True                 # two rows read everything, two nothing
    everything_off = np.zeros((2, 3), dtype=bool)
    return [
        Case("scores (4, 6) with a (4, 6) mask (T_q ≠ T_k)",
             (g.normal(size=(4, 6)), visible_mask(g, (4, 6)))),
        Case("scores (2, 3, 5) with a (5,) key mask", (g.normal(size=(2, 3, 5)), key_mask(g, 5))),
        Case("scores (2, 3, 5) with a (2, 1, 5) padding mask",
             (g.normal(size=(2, 3, 5)), padding_mask(g, 2, 5, empty=0))),
        Case("scores (2, 3, 5) with a full (2, 3, 5) mask", (g.normal(size=(2, 3, 5)), visible_mask(g, (2, 3, 5)))),
        Case("scores (2, 2, 5, 5) with a (5, 5) causal mask", (g.normal(size=(2, 2, 5, 5)), causal5)),
        Case("scores (2, 4, 6) where two rows have nothing visible", (g.normal(size=(2, 4, 6)), blind)),
        Case("scores (4, 3) with a (4, 1) mask that hides whole rows", (g.normal(size=(4, 3)), whole_rows)),
        Case("scores (2, 3) with every position masked", (g.normal(size=(2, 3)), everything_off)),
        Case("rows whose masked scores are near +1e4 while the visible ones are far below",
             (hidden_big, hidden_big_mask)),
        Case("logits of ±1e4 with a (5, 5) causal mask",
             (g.choice([-1e4, 1e4], size=(5, 5)) + g.normal(size=(5, 5)), causal5)),
        Case("scores (3, 4) with an all-True mask (nothing hidden)", (g.normal(size=(3, 4)), np.ones((3, 4), dtype=bool))),
        Case("a 1-D row of 6 scores with a (6,) mask", (g.normal(size=6), key_mask(g, 6))),
        Case("integer scores (4, 4) with a causal mask",
             (g.integers(-3, 4, size=(4, 4)), np.tril(np.ones((4, 4), dtype=bool)))),
    ]


def _float(x):
    return np.asarray(x, dtype=float)


def _minus_inf_no_guard(R, scores, mask):
    s = np.where(mask, _float(scores), -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _naive_fill_then_divide(R, scores, mask):
    e = np.exp(np.where(mask, _float(scores), -np.inf))
    return e / e.sum(axis=-1, keepdims=True)


def _max_over_all_scores(R, scores, mask):
    s = _float(scores)
    e = np.exp(s - s.max(axis=-1, keepdims=True)) * mask
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _zeroed_after(R, scores, mask):
    return R.softmax(scores, axis=-1) * np.asarray(mask, dtype=bool)


def _over_axis(R, scores, mask, axis):
    s = np.where(mask, _float(scores), -np.inf)
    return R.softmax(s, axis=axis)


def _warned(label, warning):
    """The diagnosis of a right answer that made NumPy warn on one case."""
    return (f"On {label}, your masked_softmax gives the right numbers but makes NumPy warn "
            f"(\"{warning}\"). A row with nothing visible must come out as zeros without ever "
            "computing -inf - (-inf) or 0/0: guard the max and the division (for example with "
            "np.where and np.divide(..., where=...)).")


register(Spec(
    name="masked_softmax",
    cases=masked_softmax_cases,
    outputs=("weights",),
    bugs=(
        Bug("the softmax runs over every score and the hidden weights are zeroed afterwards, so the "
            "visible weights no longer sum to 1", _zeroed_after),
        Bug("the mask's polarity is reversed: positions marked True are hidden instead of read",
            lambda R, scores, mask: R.masked_softmax(scores, ~np.asarray(mask, dtype=bool))),
        Bug("masked scores are filled with -1e9: that hides them in partly visible rows, but a row with "
            "nothing visible ties all its scores and comes out uniform instead of all zeros",
            lambda R, scores, mask: R.softmax(np.where(mask, _float(scores), -1e9), axis=-1)),
        Bug("masked scores are set to -inf and the max is subtracted without a guard: in a row with "
            "nothing visible that computes -inf - (-inf) = NaN", _minus_inf_no_guard),
        Bug("masked scores are set to -inf and exp() is divided by its row sum without a guard: a row "
            "with nothing visible gives 0/0 = NaN (and large logits overflow)", _naive_fill_then_divide),
        Bug("the mask is ignored", lambda R, scores, mask: R.softmax(scores, axis=-1)),
        Bug("the scores are multiplied by the mask, which sets hidden scores to 0 instead of removing them",
            lambda R, scores, mask: R.softmax(_float(scores) * np.asarray(mask, dtype=bool), axis=-1)),
        Bug("the max subtracted before exp() is taken over all the scores, hidden ones included: when a "
            "hidden score is far larger than the visible ones, every visible weight underflows to 0",
            _max_over_all_scores),
        Bug("the softmax normalises down the columns (axis -2) instead of along the last axis",
            lambda R, scores, mask: _over_axis(R, scores, mask, axis=-2)),
    ),
    warnings_fail=_warned,
))


# ---------------------------------------------------------------- causal_self_attention

def causal_self_attention_cases(g):

    def weights(d_model, d_k, d_v, scale=1.0):
        return (scale * g.normal(size=(d_model, d_k)), scale * g.normal(size=(d_model, d_k)),
                scale * g.normal(size=(d_model, d_v)))

    return [
        Case("X (5, 4) with d_k = 6 and d_v = 3", (g.normal(size=(5, 4)), *weights(4, 6, 3))),
        Case("X (7, 5) with d_k = 9 and d_v = 2", (g.normal(size=(7, 5)), *weights(5, 9, 2))),
        Case("a batch X (3, 6, 4) with d_k = 6 and d_v = 5", (g.normal(size=(3, 6, 4)), *weights(4, 6, 5))),
        Case("two batch dimensions X (2, 3, 5, 4) with d_k = 9 and d_v = 3",
             (g.normal(size=(2, 3, 5, 4)), *weights(4, 9, 3))),
        Case("large entries: scaled scores of the order of ±1e4 (X (6, 4), d_k = 6, d_v = 3)",
             (12 * g.normal(size=(6, 4)), *weights(4, 6, 3, scale=4.0))),
        Case("a single token: X (1, 3) with d_k = 6 and d_v = 2", (g.normal(size=(1, 3)), *weights(3, 6, 2))),
        Case("integer X (4, 3) and integer weights (d_k = 2, d_v = 4)",
             (g.integers(-2, 3, size=(4, 3)), g.integers(-2, 3, size=(3, 2)),
              g.integers(-2, 3, size=(3, 2)), g.integers(-2, 3, size=(3, 4)))),
    ]


def _attend(R, X, W_Q, W_K, W_V, visible=None, scale=None, zero_after=False):
    Q, K, V = R.project(X, W_Q, W_K, W_V)
    T, d_k = Q.shape[-2], K.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) * (d_k ** -0.5 if scale is None else scale(Q, K, V, X))
    mask = np.tril(np.ones((T, T), dtype=bool)) if visible is None else visible(T)
    if zero_after:
        A = R.softmax(scores, axis=-1) * mask
    else:
        A = R.masked_softmax(scores, mask)
    return A @ V, A


register(Spec(
    name="causal_self_attention",
    substitutes=("causal_mask", "masked_softmax"),
    cases=causal_self_attention_cases,
    outputs=("O", "A"),
    bugs=(
        Bug("no mask is applied, so every position reads the future too",
            lambda R, *a: R.self_attention(*a)),
        Bug("the future weights are zeroed after the softmax instead of masking the scores before it, "
            "so the rows no longer sum to 1",
            lambda R, *a: _attend(R, *a, zero_after=True)),
        Bug("the mask leaves out the diagonal (strict lower triangle), so a position cannot read itself "
            "and the first position reads nothing",
            lambda R, *a: _attend(R, *a, visible=lambda T: _tri(T, k=-1))),
        Bug("the mask is the upper triangle (np.triu): each position reads itself and the future",
            lambda R, *a: _attend(R, *a, visible=lambda T: _tri(T, upper=True))),
        Bug("the mask's polarity is reversed (True = blocked): each position reads only the future",
            lambda R, *a: _attend(R, *a, visible=lambda T: _tri(T, k=1, upper=True))),
        Bug("the scores are not divided by √d_k",
            lambda R, *a: _attend(R, *a, scale=lambda Q, K, V, X: 1.0)),
        Bug("the scores are divided by √d_v (the width of V) instead of √d_k",
            lambda R, *a: _attend(R, *a, scale=lambda Q, K, V, X: V.shape[-1] ** -0.5)),
        Bug("the scores are divided by √d_model (the width of X) instead of √d_k",
            lambda R, *a: _attend(R, *a, scale=lambda Q, K, V, X: np.shape(X)[-1] ** -0.5)),
        Bug("the scores are divided by d_k instead of √d_k",
            lambda R, *a: _attend(R, *a, scale=lambda Q, K, V, X: 1.0 / K.shape[-1])),
    ),
))
