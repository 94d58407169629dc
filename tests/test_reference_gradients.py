"""The hidden reference: backward passes and the finite-difference checker.

Each analytic gradient is compared with float64 central differences of the forward pass, through
the reference ``numerical_gradient`` and, at least once per backward function, through an
independent inline loop, so a bug in the checker cannot hide a bug in the gradient.
Losses are ``L = sum(G * output)`` for a fixed random ``G``, so that ``∂L/∂output = G``.
"""
import numpy as np
import pytest

import attention_reference as R
from conftest import STRICT_WARNINGS

pytestmark = STRICT_WARNINGS

TOL = 1e-7            # per operation (COURSE.md)
TOL_COMPOSITE = 1e-6  # self-attention: projections + attention


def randn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape)


def rel_error(analytic, numeric):
    """``‖a − n‖ / max(‖a‖, ‖n‖)``; 0 when both are exactly zero."""
    scale = max(np.linalg.norm(analytic), np.linalg.norm(numeric))
    return 0.0 if scale == 0 else np.linalg.norm(analytic - numeric) / scale


def inline_gradient(f, x, h=1e-5):
    """Central differences written independently of the reference ``numerical_gradient``."""
    grad = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        step = np.zeros(x.shape)
        step[idx] = h
        grad[idx] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def attention_loss(G, mask=None):
    """``(Q, K, V) -> sum(G * O)`` and the three single-argument slices of it."""
    def loss(Q, K, V):
        return float(np.sum(G * R.scaled_dot_product_attention(Q, K, V, mask)[0]))
    return loss


def assert_attention_grads(Q, K, V, G, mask=None, gradient=R.numerical_gradient):
    dQ, dK, dV = R.attention_backward(G, Q, K, V, mask)
    assert (dQ.shape, dK.shape, dV.shape) == (Q.shape, K.shape, V.shape)
    loss = attention_loss(G, mask)
    numeric = (gradient(lambda q: loss(q, K, V), Q),
               gradient(lambda k: loss(Q, k, V), K),
               gradient(lambda v: loss(Q, K, v), V))
    for name, a, n in zip("QKV", (dQ, dK, dV), numeric):
        assert rel_error(a, n) < TOL, f"d{name}: relative error {rel_error(a, n):.2e}"
    return dQ, dK, dV


# ---------------------------------------------------------------- softmax_backward

@pytest.mark.parametrize("gradient", [R.numerical_gradient, inline_gradient],
                         ids=["reference_checker", "inline_checker"])
def test_softmax_backward_matches_finite_differences(gradient):
    S, G = randn(0, 2, 3, 5) * 2, randn(1, 2, 3, 5)
    dS = R.softmax_backward(G, R.softmax(S))
    assert dS.shape == S.shape
    numeric = gradient(lambda s: float(np.sum(G * R.softmax(s))), S)
    assert rel_error(dS, numeric) < TOL


def test_softmax_backward_is_jacobian_times_upstream():
    S, G = randn(2, 4, 6), randn(3, 4, 6)
    A = R.softmax(S)
    dS = R.softmax_backward(G, A)
    for i in range(4):
        np.testing.assert_allclose(dS[i], R.softmax_jacobian(A[i]).T @ G[i], rtol=1e-12, atol=1e-16)


def test_softmax_backward_through_mask():
    S, G = randn(4, 3, 5), randn(5, 3, 5)
    mask = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], bool)
    dS = R.softmax_backward(G, R.masked_softmax(S, mask))
    assert not np.isnan(dS).any()
    assert (dS[~mask] == 0).all()          # masked scores and the empty row: exactly 0
    numeric = R.numerical_gradient(lambda s: float(np.sum(G * R.masked_softmax(s, mask))), S)
    assert rel_error(dS, numeric) < TOL


# ---------------------------------------------------------------- attention_backward

@pytest.mark.parametrize("d_k", [6, 9])
def test_attention_backward_batch_awkward_shapes(d_k):
    # T_q != T_k, d_k != d_v
    Q, K, V = randn(10, 2, 3, d_k), randn(11, 2, 5, d_k), randn(12, 2, 5, 4)
    assert_attention_grads(Q, K, V, randn(13, 2, 3, 4))


def test_attention_backward_independent_checker():
    Q, K, V = randn(14, 3, 6), randn(15, 4, 6), randn(16, 4, 2)
    assert_attention_grads(Q, K, V, randn(17, 3, 2), gradient=inline_gradient)


def test_attention_backward_masked():
    Q, K, V, G = randn(18, 2, 4, 6), randn(19, 2, 5, 6), randn(20, 2, 5, 3), randn(21, 2, 4, 3)
    mask = randn(22, 2, 4, 5) > -0.3
    mask[:, :, 3] = False                        # key/value 3: no query can see it
    mask[0, 2] = False                           # query 2 of batch 0: sees nothing
    mask[:, [0, 1, 3], 1] = True                 # the other rows all see something
    dQ, dK, dV = assert_attention_grads(Q, K, V, G, mask)
    np.testing.assert_array_equal(dK[:, 3], 0.0)
    np.testing.assert_array_equal(dV[:, 3], 0.0)
    np.testing.assert_array_equal(dQ[0, 2], 0.0)
    assert np.abs(dK[:, 1]).min() > 0 and np.abs(dV[:, 1]).min() > 0


def test_attention_backward_masked_inline_checker():
    Q, K, V, G = randn(23, 4, 6), randn(24, 4, 6), randn(25, 4, 3), randn(26, 4, 3)
    dQ, dK, dV = assert_attention_grads(Q, K, V, G, R.causal_mask(4), gradient=inline_gradient)
    np.testing.assert_array_equal(dQ[0], 0.0)    # query 0 reads only key 0: weight fixed at 1


def test_attention_backward_broadcast_key_values():
    Q, K, V, G = randn(27, 3, 2, 6), randn(28, 5, 6), randn(29, 5, 2), randn(30, 3, 2, 2)
    assert_attention_grads(Q, K, V, G)           # K, V shared by the batch: gradients summed


def test_attention_backward_batch_is_loop():
    Q, K, V, G = randn(31, 3, 4, 6), randn(32, 3, 5, 6), randn(33, 3, 5, 2), randn(34, 3, 4, 2)
    mask = randn(35, 3, 4, 5) > 0
    full = R.attention_backward(G, Q, K, V, mask)
    for b in range(3):
        for f, o in zip(full, R.attention_backward(G[b], Q[b], K[b], V[b], mask[b])):
            np.testing.assert_allclose(f[b], o, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- self_attention_backward

def self_attention_grads(G, X, Ws, mask, gradient):
    """Finite-difference gradients of ``sum(G * O)`` w.r.t. X and each of W_Q, W_K, W_V."""
    def loss(X_, Ws_):
        Q, K, V = R.project(X_, *Ws_)
        return float(np.sum(G * R.scaled_dot_product_attention(Q, K, V, mask)[0]))

    def replace(i, w):
        return tuple(w if j == i else W for j, W in enumerate(Ws))

    return (gradient(lambda x: loss(x, Ws), X),
            *(gradient(lambda w, i=i: loss(X, replace(i, w)), W) for i, W in enumerate(Ws)))


@pytest.mark.parametrize("case", ["plain", "causal_batch", "random_mask_batch", "inline_checker"])
def test_self_attention_backward(case):
    batch = () if case in ("plain", "inline_checker") else (2,)
    T, d_model, d_k, d_v = 4, 5, 6, 3
    X, G = randn(40, *batch, T, d_model), randn(41, *batch, T, d_v)
    Ws = randn(42, d_model, d_k), randn(43, d_model, d_k), randn(44, d_model, d_v)
    mask = {"plain": None, "inline_checker": None, "causal_batch": R.causal_mask(T),
            "random_mask_batch": randn(45, *batch, T, T) > -0.5}[case]
    gradient = inline_gradient if case == "inline_checker" else R.numerical_gradient
    analytic = R.self_attention_backward(G, X, *Ws, mask=mask)
    numeric = self_attention_grads(G, X, Ws, mask, gradient)
    for name, a, n, like in zip(["dX", "dW_Q", "dW_K", "dW_V"], analytic, numeric, (X, *Ws)):
        assert a.shape == like.shape, name
        assert rel_error(a, n) < TOL_COMPOSITE, f"{name}: relative error {rel_error(a, n):.2e}"


def test_self_attention_backward_sums_parameters_over_batch():
    X, G = randn(50, 3, 4, 5), randn(51, 3, 4, 2)
    Ws = randn(52, 5, 6), randn(53, 5, 6), randn(54, 5, 2)
    mask = R.causal_mask(4)
    dX, *dWs = R.self_attention_backward(G, X, *Ws, mask=mask)
    per_item = [R.self_attention_backward(G[b], X[b], *Ws, mask=mask) for b in range(3)]
    for b in range(3):
        np.testing.assert_allclose(dX[b], per_item[b][0], rtol=1e-12, atol=1e-15)
    for k, dW in enumerate(dWs):
        np.testing.assert_allclose(dW, sum(p[k + 1] for p in per_item), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- numerical_gradient

@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)], ids=str)
def test_numerical_gradient_shape_and_no_mutation(shape):
    x = randn(60, *shape)
    before = x.copy()
    seen = []

    def f(y):
        seen.append(y.shape)
        return float(np.sum(np.sin(y)))

    g = R.numerical_gradient(f, x)
    assert g.shape == x.shape and g.dtype == np.float64
    np.testing.assert_array_equal(x, before)
    assert set(seen) == {shape}
    np.testing.assert_allclose(g, np.cos(x), rtol=1e-8)


def test_numerical_gradient_exact_for_quadratic():
    x, c, b = randn(61, 3, 4), randn(62, 3, 4), randn(63, 3, 4)

    def f(y):
        return float(np.sum(c * y ** 2 + b * y))

    exact = 2 * c * x + b
    # central differences have no truncation error on a quadratic, even with a large step
    # (a one-sided difference would be off by c·h here)
    np.testing.assert_allclose(R.numerical_gradient(f, x, h=0.5), exact, rtol=0, atol=1e-12)
    np.testing.assert_allclose(R.numerical_gradient(f, x), exact, rtol=0, atol=1e-8)


@pytest.mark.parametrize("layout", ["transposed", "fortran", "strided"])
def test_numerical_gradient_any_memory_layout(layout):
    base = randn(64, 4, 6)
    x = {"transposed": base.T, "fortran": np.asfortranarray(base), "strided": base[:, ::2]}[layout]
    g = R.numerical_gradient(lambda y: float(np.sum(y ** 2)), x)
    np.testing.assert_allclose(g, 2 * x, rtol=0, atol=1e-8)
