"""The hidden reference (instructor/reference/attention_reference): softmax, masks, the attention
forward passes, scaling, and the no-mutation rule for every graded function.

Companions: test_reference_seeds.py (COURSE.md's worked examples), test_reference_gradients.py
(backward passes), test_reference_heads_tiled.py (multi-head and tiled attention).

Every warning is an error here (``pytestmark``); ``strict()`` also makes numpy's overflow,
divide-by-zero and invalid-value conditions raise. Underflow stays silent: exp of a very negative
number rounding to 0 is what a stable softmax relies on, and numpy ignores it by default.
"""
import contextlib
import copy
import warnings

import numpy as np
import pytest
import scipy.special

import attention_reference as R
from conftest import STRICT_WARNINGS

pytestmark = STRICT_WARNINGS


# ---------------------------------------------------------------- helpers

@contextlib.contextmanager
def strict():
    """Turn every warning and numpy floating-point error (except underflow) into an exception."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
            yield


def randn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def rand_mask(seed, *shape, p=0.6):
    return np.random.default_rng(seed).random(shape) < p


def visible_softmax(scores, visible):
    """Softmax of one 1-D row over its visible entries only (zeros elsewhere), by hand."""
    out = np.zeros(len(scores))
    if visible.any():
        e = np.exp(scores[visible] - scores[visible].max())
        out[visible] = e / e.sum()
    return out


def naive_attention(Q, K, V, mask=None):
    """2-D attention written entry by entry: an independent check of the vectorised reference."""
    T_q, T_k = len(Q), len(K)
    mask = np.ones((T_q, T_k), bool) if mask is None else np.broadcast_to(mask, (T_q, T_k))
    A = np.zeros((T_q, T_k))
    for i in range(T_q):
        scores = np.array([sum(Q[i, c] * K[j, c] for c in range(K.shape[1])) for j in range(T_k)])
        A[i] = visible_softmax(scores / np.sqrt(K.shape[1]), mask[i])
    O = np.array([[sum(A[i, j] * V[j, c] for j in range(T_k)) for c in range(V.shape[1])]
                  for i in range(T_q)]).reshape(T_q, V.shape[1])
    return O, A


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


def assert_batch_is_loop(fn, batched, batch_shape, shared=()):
    """``fn(*batched, *shared)`` equals calling ``fn`` on each batch element in a Python loop."""
    full = as_tuple(fn(*batched, *shared))
    for idx in np.ndindex(*batch_shape):
        one = as_tuple(fn(*(b[idx] for b in batched), *shared))
        assert len(one) == len(full)
        for f, o in zip(full, one):
            np.testing.assert_allclose(f[idx], o, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- softmax

@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_sums_to_one_along_axis(axis):
    p = R.softmax(randn(0, 3, 4, 5) * 3, axis=axis)
    assert p.shape == (3, 4, 5) and (p > 0).all()
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=0, atol=1e-14)
    assert not np.allclose(p.sum(axis=(axis + 1) % 3), 1.0)   # really normalised along `axis`


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_matches_scipy(axis):
    x = randn(1, 3, 4, 5) * 5
    np.testing.assert_allclose(R.softmax(x, axis=axis), scipy.special.softmax(x, axis=axis),
                               rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_invariant_to_a_constant_per_slice(axis):
    x = randn(2, 3, 4, 5)
    shape = [3, 4, 5]
    shape[axis] = 1
    shift = randn(3, *shape) * 1000                       # a different constant for every slice
    np.testing.assert_allclose(R.softmax(x + shift, axis=axis), R.softmax(x, axis=axis),
                               rtol=1e-10, atol=1e-14)


def test_softmax_large_logits_no_overflow_no_warning():
    x = np.array([[1e4, -1e4, 0.0], [1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4 + 2.0]])
    with strict():
        p = R.softmax(x)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p[0], [1.0, 0.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(p[1], [*R.softmax([1.0, 0.0]), 0.0], rtol=1e-12)
    np.testing.assert_allclose(p[2], R.softmax([0.0, 0.0, 2.0]), rtol=1e-12)


def test_softmax_neg_inf_entries_get_zero_weight():
    x = np.array([0.3, -np.inf, 1.2, -np.inf, -0.4])
    with strict():
        p = R.softmax(x)
    assert p[1] == 0.0 and p[3] == 0.0
    np.testing.assert_allclose(p[[0, 2, 4]], R.softmax([0.3, 1.2, -0.4]), rtol=1e-14)


def test_softmax_all_neg_inf_row_is_zeros():
    x = np.array([[1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf]])
    with strict():
        p = R.softmax(x)
    assert not np.isnan(p).any()
    np.testing.assert_array_equal(p[1], 0.0)
    np.testing.assert_allclose(p[0].sum(), 1.0)


def test_softmax_promotes_integers_and_returns_float64():
    ints = np.array([[1, 2, 3], [0, 0, 5]])
    p = R.softmax(ints)
    assert p.dtype == np.float64
    np.testing.assert_allclose(p, scipy.special.softmax(ints.astype(float), axis=-1), rtol=1e-14)
    assert R.softmax([1, 2]).dtype == np.float64
    assert R.softmax(np.ones(3, np.float32)).dtype == np.float64


# ---------------------------------------------------------------- masks

@pytest.mark.parametrize("T", [1, 4, 7])
def test_causal_mask_is_bool_lower_triangular_with_diagonal(T):
    m = R.causal_mask(T)
    assert m.dtype == np.bool_ and m.shape == (T, T)
    i, j = np.indices((T, T))
    np.testing.assert_array_equal(m, j <= i)


def test_masked_softmax_true_means_may_attend():
    scores, mask = randn(4, 5, 6) * 2, rand_mask(5, 5, 6)
    mask[:, 0] = True                                      # every row sees something
    A = R.masked_softmax(scores, mask)
    assert (A[~mask] == 0).all() and (A[mask] > 0).all()
    for i in range(5):
        np.testing.assert_allclose(A[i], visible_softmax(scores[i], mask[i]), rtol=1e-13)


def test_mask_applied_before_softmax_not_after():
    scores, mask = randn(6, 4, 5), rand_mask(7, 4, 5)
    mask[:, 1] = True
    mask[:, 2] = False                                     # every row loses something
    A = R.masked_softmax(scores, mask)
    zeroed_after = R.softmax(scores) * mask
    assert not np.allclose(A, zeroed_after)                # zeroing afterwards is a different thing
    assert (zeroed_after.sum(-1) < 1 - 1e-3).all()
    renormalised = zeroed_after / zeroed_after.sum(-1, keepdims=True)
    np.testing.assert_allclose(A, renormalised, rtol=1e-12)
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-14)


MASK_SHAPES = [(6,), (4, 6), (3, 1, 6), (3, 4, 6)]          # B=3, T_q=4, T_k=6


@pytest.mark.parametrize("mask_shape", MASK_SHAPES, ids=str)
def test_masked_softmax_broadcasts_mask(mask_shape):
    scores, mask = randn(8, 3, 4, 6), rand_mask(9, *mask_shape)
    full = np.broadcast_to(mask, (3, 4, 6))
    with strict():
        A = R.masked_softmax(scores, mask)
    assert A.shape == (3, 4, 6)
    for b, i in np.ndindex(3, 4):
        np.testing.assert_allclose(A[b, i], visible_softmax(scores[b, i], full[b, i]), rtol=1e-13)


@pytest.mark.parametrize("mask_shape", MASK_SHAPES, ids=str)
def test_attention_broadcasts_mask(mask_shape):
    Q, K, V = randn(10, 3, 4, 5), randn(11, 3, 6, 5), randn(12, 3, 6, 2)
    mask = rand_mask(13, *mask_shape)
    full = np.broadcast_to(mask, (3, 4, 6))
    with strict():
        O, A = R.scaled_dot_product_attention(Q, K, V, mask)
    for b in range(3):
        O_b, A_b = naive_attention(Q[b], K[b], V[b], full[b])
        np.testing.assert_allclose(A[b], A_b, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(O[b], O_b, rtol=1e-12, atol=1e-15)


def test_fully_masked_row_gives_zero_weights_and_zero_output():
    Q, K, V = randn(14, 2, 3, 4), randn(15, 2, 5, 4), randn(16, 2, 5, 3)
    mask = np.ones((2, 3, 5), bool)
    mask[0, 1] = False
    mask[1, 2] = False
    with strict():
        A_only = R.masked_softmax(Q @ np.swapaxes(K, -1, -2), mask)
        O, A = R.scaled_dot_product_attention(Q, K, V, mask)
    for weights in (A_only, A):
        assert not np.isnan(weights).any()
        np.testing.assert_array_equal(weights[0, 1], 0.0)
        np.testing.assert_array_equal(weights[1, 2], 0.0)
        np.testing.assert_allclose(weights[0, 0].sum(), 1.0)
    assert not np.isnan(O).any()
    np.testing.assert_array_equal(O[0, 1], 0.0)
    np.testing.assert_array_equal(O[1, 2], 0.0)


def test_masked_softmax_with_large_logits_and_integer_scores():
    scores = np.array([[1e4, -1e4, 3], [2, 5, -7]])
    mask = np.array([[False, True, True], [True, False, False]])
    with strict():
        A = R.masked_softmax(scores, mask)
    assert A.dtype == np.float64
    np.testing.assert_allclose(A, [[0, 0, 1], [1, 0, 0]], atol=1e-300)


# ---------------------------------------------------------------- attention forward

@pytest.mark.parametrize("d_k", [6, 9])
def test_attention_matches_naive_with_awkward_shapes(d_k):
    T_q, T_k, d_v = 3, 7, 4                                # T_q != T_k, d_k != d_v
    Q, K, V = randn(20, T_q, d_k), randn(21, T_k, d_k), randn(22, T_k, d_v)
    O, A = R.scaled_dot_product_attention(Q, K, V)
    assert O.shape == (T_q, d_v) and A.shape == (T_q, T_k)
    assert O.dtype == A.dtype == np.float64
    O_n, A_n = naive_attention(Q, K, V)
    np.testing.assert_allclose(A, A_n, rtol=1e-12)
    np.testing.assert_allclose(O, O_n, rtol=1e-12, atol=1e-15)


def test_attention_scale_uses_d_k_of_keys():
    Q, K, V = randn(23, 2, 9), randn(24, 5, 9), randn(25, 5, 2)   # d_k = 9: scale 1/3
    _, A = R.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(A, scipy.special.softmax(Q @ K.T / 3.0, axis=-1), rtol=1e-13)


def test_attention_accepts_integers():
    Q = np.array([[1, 0], [0, 2]])
    K, V = np.array([[1, 1], [0, 3], [2, 0]]), np.array([[1], [2], [3]])
    O, A = R.scaled_dot_product_attention(Q, K, V)
    assert O.dtype == A.dtype == np.float64
    O_n, A_n = naive_attention(Q.astype(float), K.astype(float), V.astype(float))
    np.testing.assert_allclose(A, A_n, rtol=1e-13)
    np.testing.assert_allclose(O, O_n, rtol=1e-13)


def test_project_shapes_and_values():
    X, W_Q, W_K, W_V = randn(26, 5, 4), randn(27, 4, 6), randn(28, 4, 6), randn(29, 4, 3)
    Q, K, V = R.project(X, W_Q, W_K, W_V)
    assert (Q.shape, K.shape, V.shape) == ((5, 6), (5, 6), (5, 3))
    for got, W in ((Q, W_Q), (K, W_K), (V, W_V)):
        np.testing.assert_allclose(got, X @ W, rtol=1e-14)
    # row form equals seed 000's column form q_i = W_Qᵀ x_i
    np.testing.assert_allclose(Q[2], W_Q.T @ X[2], rtol=1e-14)


def test_self_attention_is_attention_of_projections():
    X, W_Q, W_K, W_V = randn(30, 5, 4), randn(31, 4, 6), randn(32, 4, 6), randn(33, 4, 3)
    O, A = R.self_attention(X, W_Q, W_K, W_V)
    O_n, A_n = naive_attention(X @ W_Q, X @ W_K, X @ W_V)
    np.testing.assert_allclose(A, A_n, rtol=1e-12)
    np.testing.assert_allclose(O, O_n, rtol=1e-12, atol=1e-15)


def test_causal_self_attention_masks_the_future():
    X, W_Q, W_K, W_V = randn(34, 6, 4), randn(35, 4, 9), randn(36, 4, 9), randn(37, 4, 3)
    O, A = R.causal_self_attention(X, W_Q, W_K, W_V)
    assert (A[np.triu_indices(6, 1)] == 0).all()
    O_n, A_n = naive_attention(X @ W_Q, X @ W_K, X @ W_V, np.tril(np.ones((6, 6), bool)))
    np.testing.assert_allclose(A, A_n, rtol=1e-12)
    np.testing.assert_allclose(O, O_n, rtol=1e-12, atol=1e-15)
    # leak test: changing the last token changes nothing before it
    X2 = X.copy()
    X2[-1] += 10.0
    O2, _ = R.causal_self_attention(X2, W_Q, W_K, W_V)
    np.testing.assert_array_equal(O2[:-1], O[:-1])
    assert not np.allclose(O2[-1], O[-1])


def test_contextualize_is_attention_with_identity_projections():
    X = randn(38, 5, 3)
    Y, A = R.contextualize(X)
    O_n, A_n = naive_attention(X, X, X)
    np.testing.assert_allclose(A, A_n, rtol=1e-12)
    np.testing.assert_allclose(Y, O_n, rtol=1e-12, atol=1e-15)


BATCH = (2, 3)


def test_batch_contextualize_and_project():
    X = randn(40, *BATCH, 5, 4)
    W = randn(41, 4, 6), randn(42, 4, 6), randn(43, 4, 3)
    assert_batch_is_loop(R.contextualize, [X], BATCH)
    assert_batch_is_loop(R.project, [X], BATCH, shared=W)


@pytest.mark.parametrize("fn", [R.self_attention, R.causal_self_attention],
                         ids=["self_attention", "causal_self_attention"])
def test_batch_self_attention(fn):
    X = randn(44, *BATCH, 5, 4)
    W = randn(45, 4, 6), randn(46, 4, 6), randn(47, 4, 3)
    assert_batch_is_loop(fn, [X], BATCH, shared=W)


@pytest.mark.parametrize("masked", [False, True])
def test_batch_scaled_dot_product_attention(masked):
    Q, K, V = randn(48, *BATCH, 4, 9), randn(49, *BATCH, 7, 9), randn(50, *BATCH, 7, 2)
    mask = rand_mask(51, *BATCH, 4, 7) if masked else None
    if masked:
        mask[0, 1, 2] = False                                 # a fully masked row in the batch
        assert_batch_is_loop(R.scaled_dot_product_attention, [Q, K, V, mask], BATCH)
    else:
        assert_batch_is_loop(R.scaled_dot_product_attention, [Q, K, V], BATCH)


# ---------------------------------------------------------------- scaling

@pytest.mark.parametrize("d_k", [4, 64, 512])
def test_dot_product_variance_is_d_k(d_k):
    v = R.dot_product_variance(d_k, n_samples=100_000)
    assert isinstance(v, float)
    assert abs(v - d_k) < 0.03 * d_k


def test_dot_product_variance_seeded():
    assert R.dot_product_variance(8, 5_000, seed=3) == R.dot_product_variance(8, 5_000, seed=3)
    assert R.dot_product_variance(8, 5_000, seed=3) != R.dot_product_variance(8, 5_000, seed=4)
    # the documented draw: q then k from default_rng(seed), population variance
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((5_000, 8)), rng.standard_normal((5_000, 8))
    expected = np.var((q * k).sum(axis=1))
    assert R.dot_product_variance(8, 5_000, seed=3) == pytest.approx(expected, rel=1e-12)


def finite_difference_jacobian(f, z, h=1e-5):
    return np.column_stack([(f(z + h * e) - f(z - h * e)) / (2 * h) for e in np.eye(len(z))])


def test_softmax_jacobian():
    z = randn(52, 6)
    p = R.softmax(z)
    J = R.softmax_jacobian(p)
    assert J.shape == (6, 6)
    expected = np.array([[p[i] * ((i == j) - p[j]) for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(J, expected, rtol=1e-14, atol=1e-17)
    J_fd = finite_difference_jacobian(R.softmax, z)
    assert np.linalg.norm(J - J_fd) / np.linalg.norm(J) < 1e-7
    np.testing.assert_allclose(J.sum(axis=1), 0.0, atol=1e-15)
    np.testing.assert_array_equal(J, J.T)


@pytest.mark.parametrize("bad", [np.full((1, 3), 1 / 3), np.ones((1, 1)), np.float64(1.0),
                                 np.ones((1, 1, 2)) / 2], ids=["1x3", "1x1", "0-d", "1x1x2"])
def test_softmax_jacobian_rejects_non_1d(bad):
    with pytest.raises(ValueError):
        R.softmax_jacobian(bad)


# ---------------------------------------------------------------- inputs are never mutated

def mutation_cases():
    """Fresh inputs for one call of every graded function (rebuilt per test: no shared state)."""
    X, W_O = randn(60, 2, 5, 4), randn(64, 6, 4)
    W_Q, W_K, W_V = randn(61, 4, 6), randn(62, 4, 6), randn(63, 4, 6)
    Q, K, V = randn(65, 2, 5, 6), randn(66, 2, 5, 6), randn(67, 2, 5, 3)
    dO, mask = randn(68, 2, 5, 3), rand_mask(69, 2, 5, 5)
    A = R.softmax(randn(70, 2, 5, 5))
    return {
        "softmax": (R.softmax, (Q,)),
        "masked_softmax": (R.masked_softmax, (randn(71, 2, 5, 5), mask)),
        "contextualize": (R.contextualize, (X,)),
        "causal_mask": (R.causal_mask, (5,)),
        "project": (R.project, (X, W_Q, W_K, W_V)),
        "self_attention": (R.self_attention, (X, W_Q, W_K, W_V)),
        "dot_product_variance": (R.dot_product_variance, (4, 100, 1)),
        "scaled_dot_product_attention": (R.scaled_dot_product_attention, (Q, K, V, mask)),
        "softmax_jacobian": (R.softmax_jacobian, (A[0, 0],)),
        "causal_self_attention": (R.causal_self_attention, (X, W_Q, W_K, W_V)),
        "softmax_backward": (R.softmax_backward, (randn(72, 2, 5, 5), A)),
        "attention_backward": (R.attention_backward, (dO, Q, K, V, mask)),
        "numerical_gradient": (R.numerical_gradient, (lambda x: np.sum(x ** 2), X[0])),
        "self_attention_backward": (R.self_attention_backward,
                                    (randn(73, 2, 5, 6), X, W_Q, W_K, W_V, mask)),
        "split_heads": (R.split_heads, (Q, 2)),
        "merge_heads": (R.merge_heads, (randn(74, 2, 3, 5, 2),)),
        "multi_head_attention": (R.multi_head_attention, (X, W_Q, W_K, W_V, W_O, 3, mask)),
        "tiled_attention": (R.tiled_attention, (Q, K, V, 2, True)),
    }


# Lessons 07 and 09 take dicts of parameters and a Generator: their references are tested in
# test_reference_capstone.py and test_reference_gpt.py, not here.
OWN_MODULES = ("attention_reference.lesson07_capstone", "attention_reference.lesson09_small_gpt")


def test_mutation_cases_cover_every_graded_function():
    assert sorted(mutation_cases()) == sorted(name for name in R.__all__
                                              if getattr(R, name).__module__ not in OWN_MODULES)


@pytest.mark.parametrize("name", sorted(mutation_cases()))
def test_inputs_are_not_mutated(name):
    fn, args = mutation_cases()[name]
    before = copy.deepcopy(args)
    fn(*args)
    for got, want in zip(args, before):
        if isinstance(got, np.ndarray):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
