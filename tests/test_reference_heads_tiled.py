"""The hidden reference: multi-head attention and tiled (online-softmax) attention."""
import json
import warnings

import numpy as np
import pytest
import scipy.special

import attention_reference as R
from conftest import STRICT_WARNINGS, fresh_python

pytestmark = STRICT_WARNINGS


def randn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


# ---------------------------------------------------------------- split / merge heads

def test_split_heads_shape_and_placement():
    X = np.arange(2 * 5 * 12, dtype=float).reshape(2, 5, 12)       # (B, T, h·d_h), h=3, d_h=4
    H = R.split_heads(X, 3)
    assert H.shape == (2, 3, 5, 4)                                  # (..., h, T, d_h)
    assert H[1, 2, 3, 1] == X[1, 3, 2 * 4 + 1]                      # head 2, position 3, column 9
    for i in range(3):
        np.testing.assert_array_equal(H[:, i], X[:, :, i * 4:(i + 1) * 4])
    assert not np.array_equal(H, X.reshape(2, 3, 5, 4))             # not a plain reshape


def test_merge_heads_shape_and_round_trip():
    X, H = randn(0, 2, 3, 5, 12), randn(1, 4, 6, 2)                 # extra batch dims; (h, T, d_h)
    np.testing.assert_array_equal(R.merge_heads(R.split_heads(X, 4)), X)
    assert R.merge_heads(H).shape == (6, 8)
    np.testing.assert_array_equal(R.split_heads(R.merge_heads(H), 4), H)
    np.testing.assert_array_equal(R.merge_heads(H)[:, 2:4], H[1])   # head 1 back in its corner


def test_split_heads_rejects_indivisible_width():
    with pytest.raises(ValueError):
        R.split_heads(np.zeros((3, 10)), 4)


# ---------------------------------------------------------------- multi-head attention

def visible_softmax(scores, visible):
    """Softmax of one row over its visible entries, zeros elsewhere (and for an empty row)."""
    out = np.zeros(len(scores))
    if visible.any():
        out[visible] = scipy.special.softmax(scores[visible])
    return out


def mha_loop(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    """Multi-head attention for one 2-D sequence, one head at a time, written from the contract."""
    T = len(X)
    d_h, d_hv = W_Q.shape[1] // n_heads, W_V.shape[1] // n_heads
    visible = np.ones((T, T), bool) if mask is None else np.broadcast_to(mask, (T, T))
    heads, weights = [], []
    for i in range(n_heads):
        q, k = X @ W_Q[:, i * d_h:(i + 1) * d_h], X @ W_K[:, i * d_h:(i + 1) * d_h]
        v = X @ W_V[:, i * d_hv:(i + 1) * d_hv]
        scores = q @ k.T / np.sqrt(d_h)
        a = np.array([visible_softmax(s, m) for s, m in zip(scores, visible)])
        heads.append(a @ v)
        weights.append(a)
    return np.concatenate(heads, axis=-1) @ W_O, np.stack(weights)


def mha_params(seed, d_model=5, n_heads=3, d_h=3, d_hv=2):
    rng = np.random.default_rng(seed)
    shapes = [(d_model, n_heads * d_h)] * 2 + [(d_model, n_heads * d_hv), (n_heads * d_hv, d_model)]
    return tuple(rng.standard_normal(shape) for shape in shapes)       # W_Q, W_K, W_V, W_O


def test_multi_head_matches_per_head_loop():
    X, Ws = randn(10, 4, 5), mha_params(11)
    O, A = R.multi_head_attention(X, *Ws, n_heads=3)
    assert O.shape == (4, 5) and A.shape == (3, 4, 4)
    O_n, A_n = mha_loop(X, *Ws, 3)
    np.testing.assert_allclose(A, A_n, rtol=1e-12)
    np.testing.assert_allclose(O, O_n, rtol=1e-12, atol=1e-14)


def test_multi_head_scale_is_per_head():
    X, Ws = randn(12, 4, 5), mha_params(13, n_heads=4, d_h=2, d_hv=2)   # d_h=2, width 8, d_model 5
    _, A = R.multi_head_attention(X, *Ws, n_heads=4)
    q, k = X @ Ws[0][:, 2:4], X @ Ws[1][:, 2:4]                          # head 1
    np.testing.assert_allclose(A[1], scipy.special.softmax(q @ k.T / np.sqrt(2), axis=-1),
                               rtol=1e-12)
    assert not np.allclose(A[1], scipy.special.softmax(q @ k.T / np.sqrt(5), axis=-1))


@pytest.mark.parametrize("mask_kind",
                         ["none", "causal", "batch", "fully_masked_row", "key_padding"])
def test_multi_head_batch_and_mask_match_loop(mask_kind):
    B, T = 2, 5
    X, Ws = randn(14, B, T, 5), mha_params(15)
    mask = {"none": None, "causal": R.causal_mask(T), "batch": randn(16, B, T, T) > -0.5,
            "fully_masked_row": np.tile(R.causal_mask(T), (B, 1, 1)),
            "key_padding": np.array([True, True, True, False, False])}[mask_kind]
    if mask_kind == "fully_masked_row":
        mask[1, 2] = False
    with warnings.catch_warnings(), np.errstate(over="raise", divide="raise", invalid="raise"):
        warnings.simplefilter("error")
        O, A = R.multi_head_attention(X, *Ws, n_heads=3, mask=mask)
    assert O.shape == (B, T, 5) and A.shape == (B, 3, T, T)
    assert not np.isnan(O).any()
    for b in range(B):
        mask_b = None if mask is None else np.broadcast_to(mask, (B, T, T))[b]
        O_n, A_n = mha_loop(X[b], *Ws, 3, mask_b)
        np.testing.assert_allclose(A[b], A_n, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(O[b], O_n, rtol=1e-12, atol=1e-14)
        if mask_b is not None:
            assert (A[b][:, ~mask_b] == 0).all()                        # shared by every head
    if mask_kind == "fully_masked_row":
        np.testing.assert_array_equal(A[1, :, 2], 0.0)
        np.testing.assert_array_equal(O[1, 2], 0.0)


def test_multi_head_one_head_is_self_attention_then_W_O():
    X, (W_Q, W_K, W_V, W_O) = randn(17, 2, 4, 5), mha_params(18, n_heads=1, d_h=6, d_hv=3)
    for mask in (None, R.causal_mask(4)):
        O, A = R.multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads=1, mask=mask)
        fn = R.self_attention if mask is None else R.causal_self_attention
        O_s, A_s = fn(X, W_Q, W_K, W_V)
        np.testing.assert_allclose(A[:, 0], A_s, rtol=1e-12)
        np.testing.assert_allclose(O, O_s @ W_O, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- tiled attention

def assert_tiled_is_full(Q, K, V, block_size, causal):
    mask = R.causal_mask(Q.shape[-2]) if causal else None
    with warnings.catch_warnings(), np.errstate(over="raise", divide="raise", invalid="raise"):
        warnings.simplefilter("error")
        O = R.tiled_attention(Q, K, V, block_size=block_size, causal=causal)
    O_full, _ = R.scaled_dot_product_attention(Q, K, V, mask)
    assert O.shape == O_full.shape and O.dtype == np.float64
    assert np.abs(O - O_full).max() < 1e-10


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("block_size", [1, 3, 64, 10, 11])        # T = 10: 3 does not divide it
def test_tiled_equals_full_attention(block_size, causal):
    Q, K, V = randn(20, 2, 10, 6) * 3, randn(21, 2, 10, 6) * 3, randn(22, 2, 10, 5)
    assert_tiled_is_full(Q, K, V, block_size, causal)


@pytest.mark.parametrize("block_size", [1, 3, 64])
def test_tiled_T_q_differs_from_T_k(block_size):
    Q, K, V = randn(23, 3, 7, 9), randn(24, 3, 11, 9), randn(25, 3, 11, 4)
    assert_tiled_is_full(Q, K, V, block_size, causal=False)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_tiled_large_logits_and_rising_maximum(causal):
    # keys grow along the sequence, so each new block raises the running max: the rescaling path
    T = 13
    K = randn(26, T, 4) * np.linspace(1, 60, T)[:, None]
    Q, V = randn(27, T, 4) * 20, randn(28, T, 3)
    assert_tiled_is_full(Q, K, V, 3, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_tiled_all_scores_far_below_zero(causal):
    # scores near -5000: a running max started at 0 instead of -inf would underflow to nothing
    T = 9
    Q = np.full((T, 4), 50.0)
    K = -50.0 + 0.05 * randn(38, T, 4)
    assert_tiled_is_full(Q, K, randn(39, T, 3), 4, causal)


def test_tiled_batch_is_loop_and_broadcasts():
    Q, K, V = randn(29, 2, 3, 6, 4), randn(30, 2, 3, 8, 4), randn(31, 2, 3, 8, 2)
    O = R.tiled_attention(Q, K, V, block_size=3)
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(O[idx], R.tiled_attention(Q[idx], K[idx], V[idx], 3), rtol=1e-12)
    assert_tiled_is_full(Q, K[0, 0], V[0, 0], 3, causal=False)      # K, V shared by the batch


def test_tiled_causal_needs_square():
    with pytest.raises(ValueError):
        R.tiled_attention(randn(32, 4, 3), randn(33, 5, 3), randn(34, 5, 2),
                          block_size=2, causal=True)


# Peaks measured by tracemalloc in a fresh interpreter: in the pytest process, tracemalloc would also
# count what the background runs' threads allocate beside the call.
_PEAKS = """
import json, sys, tracemalloc
import numpy as np
import attention_reference as R
peaks = {}
for T in (1024, 4096):
    Q, K, V = (np.random.default_rng(seed).standard_normal((T, 64)) for seed in (35, 36, 37))
    tracemalloc.start()
    R.tiled_attention(Q, K, V, block_size=64, causal=sys.argv[1] == "causal")
    peaks[T] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
print(json.dumps(peaks))
"""


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_tiled_peak_memory_grows_like_T_not_T_squared(causal):
    peaks = {int(T): peak for T, peak in json.loads(fresh_python(_PEAKS, "causal" if causal else "full")).items()}
    T, d = 4096, 64
    Q, K, V = randn(35, T, d), randn(36, T, d), randn(37, T, d)
    O = R.tiled_attention(Q, K, V, block_size=64, causal=causal)
    score_bytes = T * T * 8
    growth = peaks[4096] / peaks[1024]
    assert growth < 6, f"peak memory grew {growth:.1f}× for 4× the length (like T² would be 16×)"
    assert peaks[4096] < score_bytes / 5, \
        f"peak {peaks[4096] / 1e6:.1f} MB vs the score matrix's {score_bytes / 1e6:.0f} MB"
    for i in (0, 1000, T - 1):                                      # spot-check rows without T×T
        n = i + 1 if causal else T
        w = scipy.special.softmax(K[:n] @ Q[i] / np.sqrt(d))
        np.testing.assert_allclose(O[i], w @ V[:n], rtol=1e-9, atol=1e-12)
