"""Hidden tests of lesson __NUMBER__: ``__FUNCTION__`` (written by ``make new-lesson``: rewrite it)."""
import numpy as np

from ..spec import Bug, Case, Spec, register


def __FUNCTION___cases(g):
    """Every input drawn from ``g`` (a new generator for each submission): awkward shapes, a batch,
    integers, large values."""
    return [
        Case("a 1-D row of 5 scores", (g.normal(size=5),)),
        Case("a (4, 7) matrix", (g.normal(size=(4, 7)),)),
        Case("a batch of shape (2, 3, 5)", (g.normal(size=(2, 3, 5)),)),
        Case("an integer (3, 4) matrix", (g.integers(-5, 6, size=(3, 4)),)),
        Case("scores around 1e4", (1e4 + g.normal(size=(3, 6)),)),
    ]


register(Spec(
    name="__FUNCTION__",
    cases=__FUNCTION___cases,
    outputs=("centred",),
    bugs=(
        Bug("the mean is taken over axis 0 instead of each row (axis -1)",
            lambda R, x: np.asarray(x, float) - np.mean(np.asarray(x, float), axis=0, keepdims=True)),
        Bug("one mean of the whole array is subtracted instead of each row's",
            lambda R, x: np.asarray(x, float) - np.mean(np.asarray(x, float))),
    ),
))
