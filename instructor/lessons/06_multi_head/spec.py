"""Hidden tests of lesson 06: ``split_heads``, ``merge_heads`` and ``multi_head_attention``.

Shapes are chosen so the usual mistakes cannot hide: T differs from the number of heads,
the model width differs from ``n_heads·d_h``, head widths are 2, 3, 6 and 9, one batch has
as many sentences as there are heads (a mask without a head axis then broadcasts silently
against the wrong axis), and ``n_heads`` varies from 1 to 5.
"""
import numpy as np

from ..spec import Bug, Case, Spec, register
from .masks import padding_mask, visible_mask


# ---------------------------------------------------------------- split_heads

def split_heads_cases(g):
    return [
        Case("X of shape (5, 6) split into 2 heads of width 3", (g.normal(size=(5, 6)), 2)),
        Case("X of shape (4, 12) split into 3 heads of width 4", (g.normal(size=(4, 12)), 3)),
        Case("X of shape (3, 10) split into 5 heads of width 2", (g.normal(size=(3, 10)), 5)),
        Case("a batch X of shape (2, 7, 18) split into 2 heads of width 9", (g.normal(size=(2, 7, 18)), 2)),
        Case("X with two batch dimensions, shape (2, 3, 4, 12), split into 4 heads of width 3",
             (g.normal(size=(2, 3, 4, 12)), 4)),
        Case("X of shape (6, 8) as one head of width 8", (g.normal(size=(6, 8)), 1)),
        Case("X of shape (4, 6) split into 6 heads of width 1", (g.normal(size=(4, 6)), 6)),
        Case("an integer X of shape (3, 8) split into 2 heads", (g.integers(-9, 10, size=(3, 8)), 2)),
    ]


def _split_no_transpose(R, X, n_heads):
    X = np.asarray(X, dtype=float)
    *batch, T, width = X.shape
    return X.reshape(*batch, n_heads, T, width // n_heads)


def _split_interleaved(R, X, n_heads):
    X = np.asarray(X, dtype=float)
    *batch, T, width = X.shape
    H = X.reshape(*batch, T, width // n_heads, n_heads)          # column c goes to head c % h
    return np.moveaxis(H, -1, -3)


def _split_d_h_heads(R, X, n_heads):
    X = np.asarray(X, dtype=float)
    return R.split_heads(X, X.shape[-1] // n_heads)               # n_heads and d_h swapped


register(Spec(
    name="split_heads",
    cases=split_heads_cases,
    outputs=("H",),
    rtol=0.0,
    atol=0.0,
    bugs=(
        Bug("the columns are reshaped straight to (..., h, T, d_h) without moving the head axis: "
            "reshape to (..., T, h, d_h) first, then swap the T and h axes",
            _split_no_transpose),
        Bug("each head takes every h-th column (interleaved) instead of one block of d_h "
            "neighbouring columns: head i owns columns i*d_h:(i+1)*d_h",
            _split_interleaved),
        Bug("the number of heads and the head width are swapped",
            _split_d_h_heads),
    ),
))


# ---------------------------------------------------------------- merge_heads

def merge_heads_cases(g):
    return [
        Case("H of shape (2, 5, 3): 2 heads, T = 5, d_h = 3", (g.normal(size=(2, 5, 3)),)),
        Case("H of shape (3, 4, 4)", (g.normal(size=(3, 4, 4)),)),
        Case("H of shape (5, 3, 2)", (g.normal(size=(5, 3, 2)),)),
        Case("a batch H of shape (2, 2, 7, 9)", (g.normal(size=(2, 2, 7, 9)),)),
        Case("H with two batch dimensions, shape (2, 3, 4, 5, 3)", (g.normal(size=(2, 3, 4, 5, 3)),)),
        Case("a single head, H of shape (1, 6, 8)", (g.normal(size=(1, 6, 8)),)),
        Case("an integer H of shape (2, 3, 4)", (g.integers(-9, 10, size=(2, 3, 4)),)),
    ]


def _merge_no_transpose(R, H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    return H.reshape(*batch, T, h * d_h)


def _merge_interleaved(R, H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    return np.moveaxis(H, -3, -1).reshape(*batch, T, h * d_h)      # (..., T, d_h, h) flattened


def _merge_along_rows(R, H):
    H = np.asarray(H, dtype=float)
    *batch, h, T, d_h = H.shape
    return H.reshape(*batch, h * T, d_h)


register(Spec(
    name="merge_heads",
    cases=merge_heads_cases,
    outputs=("merged",),
    rtol=0.0,
    atol=0.0,
    bugs=(
        Bug("the heads are reshaped straight to (..., T, h·d_h) without first moving the head "
            "axis next to d_h: swap the h and T axes, then reshape",
            _merge_no_transpose),
        Bug("the heads are interleaved (column c comes from head c % h) instead of being laid "
            "side by side: head i must end up in columns i*d_h:(i+1)*d_h",
            _merge_interleaved),
        Bug("the heads are stacked under each other (more rows) instead of side by side "
            "(more columns)",
            _merge_along_rows),
    ),
))


# ---------------------------------------------------------------- multi_head_attention

def _weights(g, d_model, n_heads, d_h, scale=1.0):
    width = n_heads * d_h
    return (scale * g.normal(size=(d_model, width)), scale * g.normal(size=(d_model, width)),
            g.normal(size=(d_model, width)), g.normal(size=(width, d_model)))


def multi_head_attention_cases(g):
    causal4 = np.tril(np.ones((4, 4), dtype=bool))
    causal6 = np.tril(np.ones((6, 6), dtype=bool))
    per_sentence = visible_mask(g, (2, 5, 5), blind_rows=1)        # nothing visible for one row
    heads_equal_batch = visible_mask(g, (3, 4, 4), p=0.5)
    padding = padding_mask(g, 2, 6, empty=0)                       # both sentences padded
    return [
        Case("X of shape (5, 7) (d_model = 7), 3 heads of width 2, no mask",
             (g.normal(size=(5, 7)), *_weights(g, 7, 3, 2), 3)),
        Case("X of shape (6, 9), 2 heads of width 3 (n_heads·d_h = 6 ≠ d_model = 9), no mask",
             (g.normal(size=(6, 9)), *_weights(g, 9, 2, 3), 2)),
        Case("X of shape (4, 8), 4 heads of width 2, a causal (4, 4) mask",
             (g.normal(size=(4, 8)), *_weights(g, 8, 4, 2), 4, causal4)),
        Case("a batch of 3 sentences X (3, 4, 5) with 3 heads of width 3 and one (4, 4) mask per "
             "sentence (batch size = number of heads)",
             (g.normal(size=(3, 4, 5)), *_weights(g, 5, 3, 3), 3, heads_equal_batch)),
        Case("a batch X of shape (2, 5, 6), 3 heads of width 2, one (5, 5) mask per sentence "
             "with a fully masked row",
             (g.normal(size=(2, 5, 6)), *_weights(g, 6, 3, 2), 3), {"mask": per_sentence}),
        Case("a batch X of shape (2, 6, 8), 2 heads of width 9, a key-padding mask of shape (2, 1, 6)",
             (g.normal(size=(2, 6, 8)), *_weights(g, 8, 2, 9), 2), {"mask": padding}),
        Case("X of shape (5, 4) with a single head of width 6",
             (g.normal(size=(5, 4)), *_weights(g, 4, 1, 6), 1)),
        Case("X with two batch dimensions, shape (2, 3, 6, 10), 5 heads of width 2, one causal "
             "(6, 6) mask for all",
             (g.normal(size=(2, 3, 6, 10)), *_weights(g, 10, 5, 2), 5), {"mask": causal6}),
        Case("X of shape (4, 6) with large entries (scores in the thousands), 2 heads of width 6",
             (20 * g.normal(size=(4, 6)), *_weights(g, 6, 2, 6, scale=2.0), 2)),
        Case("integer X (3, 4) and integer weights, 2 heads of width 2",
             (g.integers(-2, 3, size=(3, 4)), g.integers(-2, 3, size=(4, 4)),
              g.integers(-2, 3, size=(4, 4)), g.integers(-2, 3, size=(4, 4)),
              g.integers(-2, 3, size=(4, 4)), 2)),
    ]


def _mha_variant(R, X, W_Q, W_K, W_V, W_O, n_heads, mask=None, *, scale=None, split=None,
                 merge=None, use_W_O=True, head_axis_for_mask=True, softmax_then_zero=False):
    """The reference computation with one step done the wrong way (for naming bugs)."""
    split = split or R.split_heads
    merge = merge or R.merge_heads
    X = np.asarray(X, dtype=float)
    W_Q, W_K, W_V, W_O = (np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V, W_O))
    Q, K, V = (split(X @ W, n_heads) for W in (W_Q, W_K, W_V))          # (..., h, T, d_h)
    d = Q.shape[-1] if scale is None else scale(X, W_Q, n_heads)
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)                     # (..., h, T, T)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if head_axis_for_mask and mask.ndim >= 2:
            mask = np.expand_dims(mask, -3)
        if softmax_then_zero:
            A = R.softmax(scores) * mask
        else:
            A = R.masked_softmax(scores, mask)
    else:
        A = R.softmax(scores)
    heads = A @ V
    O = merge(heads)
    return (O @ W_O if use_W_O else O), A


def _bug(**how):
    return lambda R, *args, **kwargs: _mha_variant(R, *args, **kwargs, **how)


register(Spec(
    name="multi_head_attention",
    substitutes=("split_heads", "merge_heads"),
    cases=multi_head_attention_cases,
    outputs=("O", "A"),
    bugs=(
        Bug("the scores are divided by √d_model (the width of X) instead of √d_h, the width of one head",
            _bug(scale=lambda X, W_Q, h: X.shape[-1])),
        Bug("the scores are divided by √(n_heads·d_h), the width of all heads together, instead of "
            "√d_h, the width of one head",
            _bug(scale=lambda X, W_Q, h: W_Q.shape[-1])),
        Bug("the heads' outputs are merged but never multiplied by W_O",
            _bug(use_W_O=False)),
        Bug("the projections are split into heads by a plain reshape to (..., h, T, d_h), "
            "without swapping the T and h axes",
            _bug(split=lambda X, h: _split_no_transpose(None, X, h))),
        Bug("each head takes interleaved columns (every h-th one) instead of its block "
            "i*d_h:(i+1)*d_h",
            _bug(split=lambda X, h: _split_interleaved(None, X, h))),
        Bug("the heads are merged by interleaving their columns instead of laying them side by side",
            _bug(merge=lambda H: _merge_interleaved(None, H))),
        Bug("the mask is not given a head axis, so a (B, T, T) mask lines its batch axis up with "
            "the heads: insert the head axis first (mask[..., None, :, :])",
            _bug(head_axis_for_mask=False)),
        Bug("the mask is applied after the softmax (weights zeroed but not renormalised)",
            _bug(softmax_then_zero=True)),
    ),
))
