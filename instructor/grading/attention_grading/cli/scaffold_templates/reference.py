"""Reference of lesson __NUMBER__ (written by ``make new-lesson``: rewrite it)."""
import numpy as np


def __FUNCTION__(x):
    """``x`` (..., n) minus the mean of each row, as float64; ``x`` is not changed."""
    x = np.asarray(x, dtype=float)                     # (..., n)
    return x - np.mean(x, axis=-1, keepdims=True)     # (..., n)
