"""The hidden reference against every worked example COURSE.md lists, to the decimals it gives."""
import numpy as np
import pytest

import attention_reference as R
from conftest import STRICT_WARNINGS

pytestmark = STRICT_WARNINGS


SEED004_X = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.2, 0.3, 0]])   # The, cat, sat, it
SEED004_W = (np.array([[0, 1], [2, 0], [0, 1]]),                          # W_Q
             np.array([[0.5, 0], [4, 0], [0, 2]]),                        # W_K
             np.array([[1, 0], [0, 1], [0.5, 0.5]]))                      # W_V

SEED000_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
SEED000_W = (np.eye(2), np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([[2.0, 0.0], [0.0, 1.0]]))


def test_seed001_cat_dog_phone():
    Y, A = R.contextualize([[1.0, 0.5], [0.8, 0.6], [-0.5, 1.0]])
    np.testing.assert_array_equal(np.round(A[0], 3), [0.432, 0.389, 0.179])
    np.testing.assert_array_equal(np.round(Y[0], 3), [0.654, 0.628])


def test_seed003_bank_mortgage_softmax():
    p = R.softmax([0.2, 2.4, 1.1, 0.3, 0.5])
    np.testing.assert_array_equal(np.round(p, 3), [0.067, 0.604, 0.165, 0.074, 0.090])


def test_seed000_three_positions_row_2():
    O, A = R.self_attention(SEED000_X, *SEED000_W)
    np.testing.assert_array_equal(np.round(A[1], 6), [0.248255, 0.248255, 0.503490])
    np.testing.assert_array_equal(np.round(O[1], 6), [1.503490, 0.751745])


def test_seed000_causal_row_2_is_exact():
    O, A = R.causal_self_attention(SEED000_X, *SEED000_W)
    np.testing.assert_array_equal(A[1], [0.5, 0.5, 0.0])
    np.testing.assert_array_equal(O[1], [1.0, 0.5])


def test_seed_raw_scores_vs_softmax():
    values = np.array([10.0, 20.0])
    assert np.dot([2, 1], values) == 40 and np.dot([102, 101], values) == 3040
    for scores in ([2.0, 1.0], [102.0, 101.0]):
        w = R.softmax(scores)
        np.testing.assert_array_equal(np.round(w, 6), [0.731059, 0.268941])
        assert round(float(w @ values), 6) == 12.689414


def test_seed004_it_example():
    O, A = R.causal_self_attention(SEED004_X, *SEED004_W)
    np.testing.assert_array_equal(np.round(A, 3), [[1, 0, 0, 0],
                                                   [0.007, 0.993, 0, 0],
                                                   [0.164, 0.164, 0.673, 0],
                                                   [0.127, 0.559, 0.136, 0.178]])
    np.testing.assert_array_equal(np.round(O, 3),
                                  [[1, 0], [0.007, 0.993], [0.5, 0.5], [0.23, 0.681]])


def test_seed004_score_matrix_memory():
    n_bytes = 128_000 ** 2 * np.dtype(np.float16).itemsize
    assert n_bytes == 32_768_000_000
    assert f"{n_bytes:.1e}" == "3.3e+10" and round(n_bytes / 1e9) == 33
