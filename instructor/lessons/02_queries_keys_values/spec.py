"""Hidden tests of lesson 02: ``project`` and ``self_attention``."""
import numpy as np

from ..spec import Bug, Case, Spec, register


def _weights(g, d_model, d_k, d_v, integer=False):
    if integer:
        return tuple(g.integers(-2, 3, size=(d_model, d)) for d in (d_k, d_k, d_v))
    return tuple(g.normal(size=(d_model, d)) for d in (d_k, d_k, d_v))


def project_cases(g):
    return [
        Case("square weights (6, 6), where a transposed matrix still has the right shape",
             (g.normal(size=(4, 6)), *_weights(g, 6, 6, 6))),
        Case("X (5, 4) with W_Q, W_K (4, 3) and W_V (4, 2)", (g.normal(size=(5, 4)), *_weights(g, 4, 3, 2))),
        Case("X (7, 4) with d_k = 9 and d_v = 5", (g.normal(size=(7, 4)), *_weights(g, 4, 9, 5))),
        Case("a batch X of shape (3, 5, 4) sharing one set of weights (d_k = 2, d_v = 6)",
             (g.normal(size=(3, 5, 4)), *_weights(g, 4, 2, 6))),
        Case("two batch dimensions, X of shape (2, 3, 5, 4), sharing one set of weights (d_k = 6, d_v = 3)",
             (g.normal(size=(2, 3, 5, 4)), *_weights(g, 4, 6, 3))),
        Case("integer X (4, 3) and integer weights (d_k = 2, d_v = 5)",
             (g.integers(-3, 4, size=(4, 3)), *_weights(g, 3, 2, 5, integer=True))),
        Case("a single token X (1, 6) (d_k = 3, d_v = 4)", (g.normal(size=(1, 6)), *_weights(g, 6, 3, 4))),
    ]


def _swapped(R, X, W_Q, W_K, W_V):
    Q, K, V = R.project(X, W_Q, W_K, W_V)
    return Q, V, K


register(Spec(
    name="project",
    cases=project_cases,
    outputs=("Q", "K", "V"),
    bugs=(
        Bug("every weight matrix is transposed (X @ Wᵀ instead of X @ W)",
            lambda R, X, W_Q, W_K, W_V: R.project(X, np.transpose(W_Q), np.transpose(W_K), np.transpose(W_V))),
        Bug("K and V come back in the wrong order (the return must be Q, K, V)", _swapped),
        Bug("W_Q is used for all three projections",
            lambda R, X, W_Q, W_K, W_V: R.project(X, W_Q, W_Q, W_Q)),
        Bug("W_K is used for the values as well as the keys",
            lambda R, X, W_Q, W_K, W_V: R.project(X, W_Q, W_K, W_K)),
    ),
))


def self_attention_cases(g):
    big = 60.0 * g.normal(size=(4, 3))
    return [
        Case("X (5, 4) with d_k = 3 and d_v = 2", (g.normal(size=(5, 4)), *_weights(g, 4, 3, 2))),
        Case("X (6, 4) with d_k = 6 and d_v = 3", (g.normal(size=(6, 4)), *_weights(g, 4, 6, 3))),
        Case("X (4, 5) with d_k = 9 and d_v = 2", (g.normal(size=(4, 5)), *_weights(g, 5, 9, 2))),
        Case("a batch X of shape (3, 4, 5) (d_k = 2, d_v = 3)", (g.normal(size=(3, 4, 5)), *_weights(g, 5, 2, 3))),
        Case("two batch dimensions, X of shape (2, 5, 3, 4) (d_k = 6, d_v = 3)",
             (g.normal(size=(2, 5, 3, 4)), *_weights(g, 4, 6, 3))),
        Case("large inputs whose scores reach about ±1e4 (d_k = 5)", (big, *_weights(g, 3, 5, 2))),
        Case("integer X (5, 3) and integer weights (d_k = 2, d_v = 4)",
             (g.integers(-3, 4, size=(5, 3)), *_weights(g, 3, 2, 4, integer=True))),
        Case("four tokens, the first three of them unit vectors, as in the 'it' sentence (d_model = 3, "
             "d_k = d_v = 2)", (np.vstack([np.eye(3), g.normal(size=(1, 3))]), *_weights(g, 3, 2, 2))),
    ]


def _attend(R, X, W_Q, W_K, W_V, divisor=None, axis=-1, scores_transposed=False,
            weights_transposed=False, stable=True):
    """Self-attention with one deliberate change (a Bug's output)."""
    Q, K, V = R.project(X, W_Q, W_K, W_V)                             # (..., T, d_k|d_v)
    d = divisor(X, Q, K, V) if divisor else np.sqrt(K.shape[-1])
    S = (K @ np.swapaxes(Q, -1, -2) if scores_transposed else Q @ np.swapaxes(K, -1, -2)) / d
    if stable:
        A = R.softmax(S, axis=axis)                                     # (..., T, T)
    else:
        e = np.exp(S)
        A = e / e.sum(axis=axis, keepdims=True)
    O = (np.swapaxes(A, -1, -2) if weights_transposed else A) @ V      # (..., T, d_v)
    return O, A


register(Spec(
    name="self_attention",
    substitutes=("project",),
    cases=self_attention_cases,
    outputs=("O", "A"),
    bugs=(
        Bug("the scores are not divided by √d_k",
            lambda R, *a: _attend(R, *a, divisor=lambda X, Q, K, V: 1.0)),
        Bug("the scores are divided by √d_model (the width of X) instead of √d_k (the width of K)",
            lambda R, *a: _attend(R, *a, divisor=lambda X, Q, K, V: np.sqrt(np.shape(X)[-1]))),
        Bug("the scores are divided by d_k instead of √d_k",
            lambda R, *a: _attend(R, *a, divisor=lambda X, Q, K, V: K.shape[-1])),
        Bug("the scores are divided by √d_v (the width of V) instead of √d_k",
            lambda R, *a: _attend(R, *a, divisor=lambda X, Q, K, V: np.sqrt(V.shape[-1]))),
        Bug("d_k is read from a fixed axis, K.shape[1], which is not the width of the keys once "
            "there are batch dimensions: use K.shape[-1]",
            lambda R, *a: _attend(R, *a, divisor=lambda X, Q, K, V: np.sqrt(K.shape[1]))),
        Bug("the softmax runs down the columns (axis -2) instead of along each row",
            lambda R, *a: _attend(R, *a, axis=-2)),
        Bug("the scores are K Qᵀ instead of Q Kᵀ, so row i holds what the others think of token i",
            lambda R, *a: _attend(R, *a, scores_transposed=True)),
        Bug("O is computed as Aᵀ V instead of A V",
            lambda R, *a: _attend(R, *a, weights_transposed=True)),
        Bug("exp() is taken without subtracting each row's max, so large scores overflow",
            lambda R, *a: _attend(R, *a, stable=False)),
    ),
))
