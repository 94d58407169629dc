"""What lesson 09's hidden tests share: the reference's GPT module, the functions lent to the kernel, a block's
random parameters."""
import numpy as np


LENT = ("multi_head_attention", "split_heads", "merge_heads")


def _gpt(R):
    import importlib

    return importlib.import_module(R.__name__ + ".lesson09_small_gpt")


def block_params(g, d, n_heads, d_h, d_hidden, spread=1.0):
    width = n_heads * d_h
    return {
        "n_heads": int(n_heads),
        "ln1_gamma": 1.0 + 0.3 * g.normal(size=d), "ln1_beta": 0.3 * g.normal(size=d),
        "W_Q": spread * g.normal(size=(d, width)) / np.sqrt(d),
        "W_K": spread * g.normal(size=(d, width)) / np.sqrt(d),
        "W_V": g.normal(size=(d, width)) / np.sqrt(d),
        "W_O": g.normal(size=(width, d)) / np.sqrt(width),
        "ln2_gamma": 1.0 + 0.3 * g.normal(size=d), "ln2_beta": 0.3 * g.normal(size=d),
        "W_1": g.normal(size=(d, d_hidden)) / np.sqrt(d), "b_1": 0.5 * g.normal(size=d_hidden),
        "W_2": g.normal(size=(d_hidden, d)) / np.sqrt(d_hidden), "b_2": 0.3 * g.normal(size=d),
    }


def _rng(g):
    """A generator for the learner's function, seeded from the case's."""
    return np.random.default_rng(int(g.integers(0, 2**31)))
