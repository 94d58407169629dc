"""Hidden tests of lesson 01: ``softmax`` and ``contextualize``."""
import numpy as np

from ..spec import Bug, Case, Spec, register


def _with_minus_inf(g, shape):
    """Normal logits with some entries -inf, at least one finite entry left in every row."""
    x = g.normal(size=shape)
    hidden = g.random(shape) < 0.35
    hidden[np.arange(shape[0]), g.integers(shape[1], size=shape[0])] = False
    x[hidden] = -np.inf
    return x


def softmax_cases(g):
    wide = g.normal(size=(2, 3, 5))
    far_apart = np.vstack([g.normal(size=4) + 1e4, g.normal(size=4) - 1e4, g.normal(size=4)])
    return [
        Case("a 1-D vector of 5 logits", (g.normal(size=5),)),
        Case("a (4, 7) matrix, axis=-1", (g.normal(size=(4, 7)),), {"axis": -1}),
        Case("a (2, 3, 5) array with axis=0", (wide,), {"axis": 0}),
        Case("a (2, 3, 5) array with axis=1", (wide,), {"axis": 1}),
        Case("a (2, 3, 5) array with the default axis", (wide,)),
        Case("two batch dimensions: a (2, 3, 4, 5) array with the default axis", (g.normal(size=(2, 3, 4, 5)),)),
        Case("a transposed (5, 4) matrix (a view, not C-ordered) with axis=0", (g.normal(size=(4, 5)).T,),
             {"axis": 0}),
        Case("logits around ±1e4 in a (3, 6) matrix", (g.choice([-1e4, 1e4], size=(3, 6)) + g.normal(size=(3, 6)),)),
        Case("rows whose logits sit near +1e4, -1e4 and 0", (far_apart,)),
        Case("a (3, 6) matrix with some -inf entries", (_with_minus_inf(g, (3, 6)),)),
        Case("an integer (2, 3) matrix", (g.integers(-4, 6, size=(2, 3)),)),
        Case("a Python list of 5 logits", ([float(v) for v in g.normal(size=5)],)),
        Case("a nested Python list, 2 rows of 3 integer logits, with axis=0",
             ([[int(v) for v in row] for row in g.integers(-3, 4, size=(2, 3))],), {"axis": 0}),
    ]


def _no_max_shift(R, x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)


def _global_max_shift(R, x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


register(Spec(
    name="softmax",
    cases=softmax_cases,
    outputs=("weights",),
    bugs=(
        Bug("the softmax ignores `axis` and always normalises the last axis",
            lambda R, x, axis=-1: R.softmax(x, axis=-1)),
        Bug("the softmax normalises over axis 0 instead of the requested axis",
            lambda R, x, axis=-1: R.softmax(x, axis=0)),
        Bug("exp() is taken without subtracting the max first, so large logits overflow",
            _no_max_shift),
        Bug("one global max is subtracted instead of the max of each slice, so far-apart slices underflow",
            _global_max_shift),
        Bug("it divides by the sum of the whole array instead of each slice's sum",
            lambda R, x, axis=-1: np.exp(np.asarray(x, float) - np.max(x, axis=axis, keepdims=True))
            / np.exp(np.asarray(x, float) - np.max(x, axis=axis, keepdims=True)).sum()),
    ),
))


def contextualize_cases(g):
    return [
        Case("X of shape (5, 3)", (g.normal(size=(5, 3)),)),
        Case("X of shape (7, 9) (d = 9)", (g.normal(size=(7, 9)),)),
        Case("X of shape (4, 6) with large entries (scores in the hundreds)", (20 * g.normal(size=(4, 6)),)),
        Case("a batch X of shape (2, 4, 6)", (g.normal(size=(2, 4, 6)),)),
        Case("two batch dimensions, X of shape (2, 3, 4, 5)", (g.normal(size=(2, 3, 4, 5)),)),
        Case("an integer X of shape (3, 2)", (g.integers(-3, 4, size=(3, 2)),)),
    ]


def _contextualize_with(R, X, scale, axis=-1, transpose_weights=False):
    X = np.asarray(X, dtype=float)
    A = R.softmax(X @ np.swapaxes(X, -1, -2) * scale(X.shape[-1]), axis=axis)
    Y = (np.swapaxes(A, -1, -2) if transpose_weights else A) @ X
    return Y, A


register(Spec(
    name="contextualize",
    cases=contextualize_cases,
    substitutes=("softmax",),
    outputs=("Y", "A"),
    bugs=(
        Bug("the scores are not divided by √d",
            lambda R, X: _contextualize_with(R, X, lambda d: 1.0)),
        Bug("the scores are divided by d instead of √d",
            lambda R, X: _contextualize_with(R, X, lambda d: 1.0 / d)),
        Bug("the softmax runs down the columns (axis 0) instead of along each row",
            lambda R, X: _contextualize_with(R, X, lambda d: d ** -0.5, axis=-2)),
        Bug("Y is computed as Aᵀ X instead of A X",
            lambda R, X: _contextualize_with(R, X, lambda d: d ** -0.5, transpose_weights=True)),
    ),
))
