"""Whether a function leaves NumPy's global random generator alone.

An exercise that draws random numbers takes its own generator, ``np.random.default_rng(seed)``:
reseeding the global one (``np.random.seed``) would reset the random numbers of every other cell.
The visible check asks ``moves_the_global_generator``; the hidden test has the grader's probe
measure the same thing around its own call (``spec.Call.global_generator``); both say the same
sentence (``GLOBAL_GENERATOR_PROBLEM``).
"""
import numpy as np

GLOBAL_GENERATOR_PROBLEM = (
    "{function} reseeds or draws from NumPy's global generator (np.random.seed, np.random.normal, ...). "
    "Draw from a generator of its own, g = np.random.default_rng(seed), and leave the global one to the "
    "other cells: reseeding it resets the random numbers of everything else in the notebook.")


def _same_state(a, b):
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and tuple(a[2:]) == tuple(b[2:])


def moves_the_global_generator(fn, *args, **kwargs):
    """True when ``fn(*args, **kwargs)`` reseeds NumPy's global generator or draws from it.

    The call starts from a fresh state drawn from the operating system, so that no seed the
    function sets can happen to equal it; the caller's state is put back afterwards."""
    saved = np.random.get_state()
    try:
        np.random.seed(None)
        before = np.random.get_state()
        fn(*args, **kwargs)
        return not _same_state(before, np.random.get_state())
    finally:
        np.random.set_state(saved)
