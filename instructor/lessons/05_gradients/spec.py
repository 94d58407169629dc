"""Hidden tests of lesson 05: ``softmax_backward``, ``attention_backward``,
``numerical_gradient`` and ``self_attention_backward``.

Gradients are compared with the reference in float64: relative tolerance 1e-7 for one
operation (softmax, attention), 1e-6 for the composite (projections + attention). The
scalar functions handed to ``numerical_gradient`` are small callable classes built from
seeded parameters; they stay in the grader, and the learner's function calls them through a
stand-in (``spec.Callback``).
"""
import numpy as np

from ..spec import Bug, Case, Spec, register
from .lesson05_forward import _weights
from .lesson05_numerical_gradient import NUMERICAL_GRADIENT   # its own module (its loss functions)
from .masks import key_mask, padding_mask, visible_mask


# ---------------------------------------------------------------- softmax_backward

def softmax_backward_cases(g):
    masked_scores = g.normal(size=(4, 6))
    mask = g.random(size=(4, 6)) > 0.4
    mask[:, 0] = True
    mask[2] = False                                                    # a fully masked row
    huge = g.choice([-1e4, 1e4], size=(3, 5)) + g.normal(size=(3, 5))
    return [
        Case("a single row of 6 weights", (g.normal(size=6), _weights(2 * g.normal(size=6)))),
        Case("weights of shape (4, 7)", (g.normal(size=(4, 7)), _weights(g.normal(size=(4, 7))))),
        Case("a batch of weights of shape (2, 3, 5)",
             (g.normal(size=(2, 3, 5)), _weights(1.5 * g.normal(size=(2, 3, 5))))),
        Case("two batch dimensions, weights of shape (2, 2, 3, 4)",
             (g.normal(size=(2, 2, 3, 4)), _weights(g.normal(size=(2, 2, 3, 4))))),
        Case("(4, 6) weights with masked (zero) entries and one fully masked row",
             (g.normal(size=(4, 6)), _weights(masked_scores, mask))),
        Case("one-hot weights from logits of ±1e4, shape (3, 5)", (g.normal(size=(3, 5)), _weights(huge))),
        Case("an integer upstream gradient dA of shape (2, 4, 3)",
             (g.integers(-3, 4, size=(2, 4, 3)), _weights(g.normal(size=(2, 4, 3))))),
    ]


def _inner(dA, A, axis=-1):
    return np.sum(np.asarray(dA, float) * np.asarray(A, float), axis=axis, keepdims=True)


register(Spec(
    name="softmax_backward",
    cases=softmax_backward_cases,
    outputs=("dS",),
    rtol=1e-7,
    atol=1e-10,
    bugs=(
        Bug("the subtraction of ⟨a, dA⟩ is left out (only the diagonal part a ⊙ dA of the Jacobian product)",
            lambda R, dA, A: np.asarray(A, float) * np.asarray(dA, float)),
        Bug("the plain row sum of dA is subtracted instead of the weighted sum ⟨a, dA⟩",
            lambda R, dA, A: np.asarray(A, float) * (np.asarray(dA, float)
                                                     - np.sum(np.asarray(dA, float), axis=-1, keepdims=True))),
        Bug("only the diagonal of the Jacobian, a(1 − a), multiplies dA",
            lambda R, dA, A: np.asarray(A, float) * (1 - np.asarray(A, float)) * np.asarray(dA, float)),
        Bug("the weighted sum ⟨a, dA⟩ runs down the columns (axis -2) instead of along each row",
            lambda R, dA, A: np.asarray(A, float) * (np.asarray(dA, float) - _inner(dA, A, axis=-2))),
        Bug("⟨a, dA⟩ is summed over the whole array instead of row by row",
            lambda R, dA, A: np.asarray(A, float) * (np.asarray(dA, float) - np.sum(np.asarray(dA, float) * A))),
        Bug("the result is not multiplied by a (dA − ⟨a, dA⟩ alone)",
            lambda R, dA, A: np.asarray(dA, float) - _inner(dA, A)),
    ),
))


# ---------------------------------------------------------------- attention_backward

def attention_backward_cases(g):

    def qkv(batch, T_q, T_k, d_k, d_v, scale=1.0):
        return (g.normal(size=(*batch, T_q, d_v)), scale * g.normal(size=(*batch, T_q, d_k)),
                g.normal(size=(*batch, T_k, d_k)), g.normal(size=(*batch, T_k, d_v)))

    full = visible_mask(g, (2, 4, 5), p=0.55)
    unread = int(g.integers(5))
    full[:, :, unread] = False                                         # a key nobody may read
    full[:, :, (unread + 1) % 5] = True                                # (every other row sees one)
    full[int(g.integers(2)), int(g.integers(4))] = False               # one blind query row
    causal = np.tril(np.ones((5, 5), dtype=bool))
    return [
        Case("Q, K of shape (2, 4, 6) and V of shape (2, 4, 3), no mask", qkv((2,), 4, 4, 6, 3)),
        Case("T_q = 3, T_k = 5, d_k = 9, d_v = 4, no mask", qkv((), 3, 5, 9, 4)),
        Case("a key mask of shape (T_k,) with T_q = 4, T_k = 5",
             qkv((), 4, 5, 6, 2), {"mask": key_mask(g, 5)}),
        Case("a causal (T, T) mask on a batch of 2, T = 5, d_k = 6, d_v = 2",
             qkv((2,), 5, 5, 6, 2), {"mask": causal}),
        Case("a padding mask of shape (B, 1, T_k) = (3, 1, 4) with one batch item fully masked",
             qkv((3,), 2, 4, 6, 3), {"mask": padding_mask(g, 3, 4)}),
        Case("a (B, T_q, T_k) = (2, 4, 5) mask with a fully masked query row and a key nobody may read",
             qkv((2,), 4, 5, 9, 3), {"mask": full}),
        Case("two batch dimensions, Q of shape (2, 2, 3, 6), with a (T_q, T_k) = (3, 3) causal mask",
             qkv((2, 2), 3, 3, 6, 4), {"mask": np.tril(np.ones((3, 3), dtype=bool))}),
        Case("scores of about ±1e4, so the weights are one-hot", qkv((), 4, 6, 6, 3, scale=2.5e3)),
        Case("integer dO, Q, K and V", tuple(g.integers(-2, 3, size=s)
                                            for s in [(3, 2), (3, 4), (5, 4), (5, 2)])),
    ]


def _attention_backward_variant(R, dO, Q, K, V, mask=None, *, dv_transposed=True, subtract=True,
                                scale=lambda d: d ** -0.5, dk_transposed=True, dq_transposed=False,
                                use_mask=True):
    dO, Q, K, V = (np.asarray(a, dtype=float) for a in (dO, Q, K, V))
    _, A = R.scaled_dot_product_attention(Q, K, V, mask if use_mask else None)
    At = np.swapaxes(A, -1, -2)
    dV = (At if dv_transposed else A) @ dO
    dA = dO @ np.swapaxes(V, -1, -2)
    dS = R.softmax_backward(dA, A) if subtract else A * dA
    dS = dS * scale(K.shape[-1])
    dSt = np.swapaxes(dS, -1, -2)
    dQ = (dSt if dq_transposed else dS) @ K
    dK = (dSt if dk_transposed else dS) @ Q
    return dQ, dK, dV


register(Spec(
    name="attention_backward",
    cases=attention_backward_cases,
    substitutes=("softmax_backward",),
    outputs=("dQ", "dK", "dV"),
    rtol=1e-7,
    atol=1e-10,
    bugs=(
        Bug("dV is computed as A dO instead of Aᵀ dO",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, dv_transposed=False)),
        Bug("the softmax backward leaves out the subtraction of ⟨a, dA⟩",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, subtract=False)),
        Bug("the 1/√d_k scale is left out of dQ and dK",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, scale=lambda d: 1.0)),
        Bug("the scores' gradient is divided by d_k instead of √d_k",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, scale=lambda d: 1.0 / d)),
        Bug("dK is computed as dS Q instead of dSᵀ Q (a transpose is missing)",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, dk_transposed=False)),
        Bug("dQ is computed as dSᵀ K instead of dS K",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, dq_transposed=True)),
        Bug("the weights are recomputed without the mask, so masked positions get gradient",
            lambda R, *a, **k: _attention_backward_variant(R, *a, **k, use_mask=False)),
    ),
))


# ---------------------------------------------------------------- numerical_gradient (numerical_gradient.py)

register(NUMERICAL_GRADIENT)


# ---------------------------------------------------------------- self_attention_backward

def self_attention_backward_cases(g):

    def inputs(batch, T, d_model, d_k, d_v, scale=1.0):
        return (g.normal(size=(*batch, T, d_v)), scale * g.normal(size=(*batch, T, d_model)),
                g.normal(size=(d_model, d_k)), g.normal(size=(d_model, d_k)), g.normal(size=(d_model, d_v)))

    random_mask = visible_mask(g, (2, 2, 4, 4), blind_rows=1)         # one blind query row
    return [
        Case("X of shape (5, 4), d_k = 6, d_v = 3, no mask", inputs((), 5, 4, 6, 3)),
        Case("a batch X of shape (2, 5, 4), d_k = 6, d_v = 3, with a causal (T, T) mask",
             inputs((2,), 5, 4, 6, 3), {"mask": np.tril(np.ones((5, 5), dtype=bool))}),
        Case("a batch X of shape (3, 4, 5), d_k = 9, d_v = 2, with a (B, 1, T) padding mask and one "
             "batch item fully masked", inputs((3,), 4, 5, 9, 2), {"mask": padding_mask(g, 3, 4)}),
        Case("two batch dimensions, X of shape (2, 2, 4, 3), d_k = 6, d_v = 5, with a (2, 2, 4, 4) mask "
             "holding a blind query row", inputs((2, 2), 4, 3, 6, 5), {"mask": random_mask}),
        Case("X of shape (6, 7), d_k = 9, d_v = 5, with a key mask of shape (T,)",
             inputs((), 6, 7, 9, 5), {"mask": key_mask(g, 6)}),
        Case("a batch X of shape (2, 3, 4) with large entries (nearly one-hot weights)",
             inputs((2,), 3, 4, 6, 3, scale=6.0)),
        Case("integer dO, X and weights", tuple(g.integers(-2, 3, size=s)
                                                for s in [(4, 2), (4, 3), (3, 6), (3, 6), (3, 2)])),
    ]


def _self_attention_backward_variant(R, dO, X, W_Q, W_K, W_V, mask=None, *, reduce="sum",
                                     paths=("q", "k", "v"), transposed_weights=False, use_mask=True,
                                     scale=True):
    dO, X = np.asarray(dO, dtype=float), np.asarray(X, dtype=float)
    Ws = [np.asarray(W, dtype=float) for W in (W_Q, W_K, W_V)]
    Q, K, V = (X @ W for W in Ws)
    if scale:
        grads = R.attention_backward(dO, Q, K, V, mask if use_mask else None)
    else:
        grads = _attention_backward_variant(R, dO, Q, K, V, mask, scale=lambda d: 1.0)
    Xt = np.swapaxes(X, -1, -2)
    dWs = []
    for dP, W in zip(grads, Ws):
        per_item = np.swapaxes(dP, -1, -2) @ X if transposed_weights else Xt @ dP
        per_item = per_item.reshape(-1, *per_item.shape[-2:])
        dWs.append({"sum": per_item.sum(axis=0), "mean": per_item.mean(axis=0),
                    "none": per_item.reshape(*X.shape[:-2], *per_item.shape[-2:])}[reduce])
    dX = sum(dP @ W.T for name, dP, W in zip("qkv", grads, Ws) if name in paths)
    return (dX, *dWs)


register(Spec(
    name="self_attention_backward",
    cases=self_attention_backward_cases,
    substitutes=("attention_backward", "softmax_backward"),
    outputs=("dX", "dW_Q", "dW_K", "dW_V"),
    rtol=1e-6,
    atol=1e-9,
    bugs=(
        Bug("the parameter gradients are not summed over the batch (one gradient per sequence is returned)",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, reduce="none")),
        Bug("the parameter gradients are averaged over the batch instead of summed",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, reduce="mean")),
        Bug("dX leaves out the path through the keys (dK W_Kᵀ)",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, paths=("q", "v"))),
        Bug("dX leaves out the path through the queries (dQ W_Qᵀ)",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, paths=("k", "v"))),
        Bug("dX keeps only the path through the values (dV W_Vᵀ)",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, paths=("v",))),
        Bug("the weight gradients are transposed (dQᵀ X instead of Xᵀ dQ)",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, transposed_weights=True)),
        Bug("the mask is ignored in the backward pass, so masked positions get gradient",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, use_mask=False)),
        Bug("the 1/√d_k scale is left out of the scores' gradient",
            lambda R, *a, **k: _self_attention_backward_variant(R, *a, **k, scale=False)),
    ),
))
