"""The worked examples of the source articles, returned as fresh float64 arrays.

Numbers the articles *quote* (rounded weights, outputs) are kept beside their inputs
so a lesson can show that it reproduces them; every other number is computed.
"""
import numpy as np


def cat_dog_phone():
    """Seed 001: three 2-D token vectors; cat and dog are close, phone is off on its own."""
    X = np.array([[1.0, 0.5],
                  [0.8, 0.6],
                  [-0.5, 1.0]])
    return X, ["cat", "dog", "phone"]


#: Seed 001 quotes cat's attention weights and its new vector, rounded.
CAT_WEIGHTS_QUOTED = (0.432, 0.389, 0.179)
CAT_OUTPUT_QUOTED = (0.654, 0.628)


def bank_mortgage_scores():
    """Seed 003: already-scaled scores of the query at "mortgage" for the five visible tokens."""
    return np.array([0.2, 2.4, 1.1, 0.3, 0.5]), ["The", "bank", "approved", "my", "mortgage"]


#: Seed 003 quotes the softmax of those scores to three decimals.
BANK_MORTGAGE_SHARES_QUOTED = (0.067, 0.604, 0.165, 0.074, 0.090)


def three_positions():
    """Seed 000: three positions, two dimensions, hand-picked projections (row form)."""
    X = np.array([[1.0, 0.0],
                  [0.0, 1.0],
                  [1.0, 1.0]])
    W_Q = np.eye(2)
    W_K = np.array([[1.0, 1.0],
                    [0.0, 1.0]])
    W_V = np.array([[2.0, 0.0],
                    [0.0, 1.0]])
    return X, W_Q, W_K, W_V


#: Seed 000 quotes row 2 (index 1) of the weights and its output, full and causal.
ROW2_WEIGHTS_QUOTED = (0.248255, 0.248255, 0.503490)
ROW2_OUTPUT_QUOTED = (1.503490, 0.751745)
ROW2_CAUSAL_WEIGHTS_QUOTED = (0.5, 0.5, 0.0)
ROW2_CAUSAL_OUTPUT_QUOTED = (1.0, 0.5)


def the_cat_sat_it():
    """Seed 004: "The cat sat it" with C = 3, one head of width d = 2."""
    X = np.array([[1.0, 0.0, 0.0],
                  [0.0, 1.0, 0.0],
                  [0.0, 0.0, 1.0],
                  [0.2, 0.3, 0.0]])
    W_Q = np.array([[0.0, 1.0],
                    [2.0, 0.0],
                    [0.0, 1.0]])
    W_K = np.array([[0.5, 0.0],
                    [4.0, 0.0],
                    [0.0, 2.0]])
    W_V = np.array([[1.0, 0.0],
                    [0.0, 1.0],
                    [0.5, 0.5]])
    return X, W_Q, W_K, W_V, ["The", "cat", "sat", "it"]


#: Seed 004 prints the causal weight matrix and outputs to three decimals.
IT_WEIGHTS_QUOTED = ((1.0, 0.0, 0.0, 0.0),
                     (0.007, 0.993, 0.0, 0.0),
                     (0.164, 0.164, 0.673, 0.0),
                     (0.127, 0.559, 0.136, 0.178))
IT_OUTPUTS_QUOTED = ((1.0, 0.0), (0.007, 0.993), (0.5, 0.5), (0.23, 0.681))


def raw_mixing_example():
    """Seed 000: scores (2, 1) and (102, 101) on the scalar values (10, 20)."""
    return np.array([2.0, 1.0]), np.array([102.0, 101.0]), np.array([10.0, 20.0])


#: Seed 000 quotes the raw mixes 40 and 3040 and the softmax read ≈ 12.689414 for both.
RAW_MIXES_QUOTED = (40.0, 3040.0)
SOFTMAX_READ_QUOTED = 12.689414
