"""Hidden tests of lesson 05: ``softmax_backward``, ``attention_backward``,
``numerical_gradient`` and ``self_attention_backward``.

Gradients are compared with the reference in float64: relative tolerance 1e-7 for one
operation (softmax, attention), 1e-6 for the composite (projections + attention). The
scalar functions handed to ``numerical_gradient`` are small callable classes built from
seeded parameters; they stay in the grader, and the learner's function calls them through a
stand-in (``spec.Callback``).
"""
import numpy as np
from attention_course.probes import NOT_RESTORED, probe_problem

from ..judge import compare_outputs
from ..spec import Bug, Callback, Case, Spec, register
from .masks import key_mask, padding_mask, visible_mask


# ---------------------------------------------------------------- the reference's forward pass

def _reference():
    from ..reference import reference

    return reference()


def _attention(Q, K, V, mask=None):
    """``O = softmax(Q Kᵀ/√d_k, masked) V`` (the reference's) for the loss functions below."""
    return _reference().scaled_dot_product_attention(Q, K, V, mask)[0]     # (..., T_q, d_v)


def _weights(scores, mask=None):
    """The reference's softmax weights of given scores, masked positions (False) exactly 0."""
    R = _reference()
    return R.softmax(scores) if mask is None else R.masked_softmax(scores, mask)


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


# ---------------------------------------------------------------- numerical_gradient

class SineLoss:
    """f(y) = Σ c ⊙ sin(y) + Σ b ⊙ y², curved enough that one-sided differences show."""

    def __init__(self, g, shape):
        self.c, self.b = 2.0 * g.normal(size=shape), g.normal(size=shape)

    def __call__(self, y):
        return float(np.sum(self.c * np.sin(y) + self.b * y ** 2))


class QuadraticLoss:
    """f(y) = Σ (c ⊙ y² + b ⊙ y): central differences are exact for any step h."""

    def __init__(self, g, shape):
        self.c, self.b = g.normal(size=shape), g.normal(size=shape)

    def __call__(self, y):
        return float(np.sum(self.c * y ** 2 + self.b * y))


class CubicLoss:
    """f(y) = Σ c ⊙ y³: central differences are off by c·h² per entry, so the step h shows."""

    def __init__(self, g, shape):
        self.c = 3.0 * g.normal(size=shape)

    def __call__(self, y):
        return float(np.sum(self.c * y ** 3))


class AttentionLoss:
    """f(Q) = Σ G ⊙ attention(Q, K, V, mask) with fixed seeded K, V and upstream G."""

    def __init__(self, g, batch, T_q, T_k, d_k, d_v, causal=False):
        self.K = g.normal(size=(*batch, T_k, d_k))
        self.V = g.normal(size=(*batch, T_k, d_v))
        self.G = g.normal(size=(*batch, T_q, d_v))
        self.mask = np.tril(np.ones((T_q, T_k), dtype=bool)) if causal else None

    def __call__(self, Q):
        return float(np.sum(self.G * _attention(Q, self.K, self.V, self.mask)))


class SoftmaxLoss:
    """f(S) = Σ G ⊙ softmax(S) row by row."""

    def __init__(self, g, shape):
        self.G = g.normal(size=shape)

    def __call__(self, S):
        return float(np.sum(self.G * _weights(S)))


class InPlaceSoftmaxLoss:
    """f(S) = Σ G ⊙ softmax(S), with a softmax that overwrites its argument (a careless f)."""

    def __init__(self, g, shape):
        self.G = g.normal(size=shape)

    def __call__(self, S):
        S -= S.max(axis=-1, keepdims=True)
        np.exp(S, out=S)
        S /= S.sum(axis=-1, keepdims=True)
        return float(np.sum(self.G * S))


class Heard:
    """A loss that notes each point the kernel calls it at, until the judge stops listening: how
    the learner probed (``attention_course.probes``). The reference and the catalogued bugs, which
    the judge runs afterwards, are not heard."""

    def __init__(self, loss):
        self.loss, self.points, self.listening = loss, [], True

    def __call__(self, y):
        if self.listening:
            self.points.append(np.array(y, dtype=float))
        return self.loss(y)

    def stop_listening(self):
        self.listening = False
        return self.points


def numerical_gradient_cases(g):
    """The losses stay in the grader: the kernel's f is a stand-in the grader evaluates, and notes
    the points it is asked at."""
    return [Case(c.label, (Callback(Heard(c.args[0])), *c.args[1:]), c.kwargs) for c in _gradient_check_cases(g)]


def _not_restored_by_arithmetic(g, shape, h=1e-5):
    """Normal entries, each redrawn until x + h − 2h + h differs from x in floating point, so that
    an answer that restores by arithmetic instead of saving the value shows it."""
    x = g.normal(size=shape)
    for _ in range(100):
        exact = ((x + h) - 2 * h) + h == x
        if not exact.any():
            break
        x[exact] = g.normal(size=int(exact.sum()))
    return x


def _gradient_check_cases(g):
    transposed = g.normal(size=(3, 5)).T                               # a (5, 3) view, not C-ordered
    return [
        Case("f(y) = Σ c·sin(y) + Σ b·y² at x of shape (3, 4)",
             (SineLoss(g, (3, 4)), _not_restored_by_arithmetic(g, (3, 4)))),
        Case("the quadratic f(y) = Σ (c·y² + b·y) at x of shape (2, 5) with a large step h given, where "
             "central differences are exact", (QuadraticLoss(g, (2, 5)), g.normal(size=(2, 5))),
             {"h": float(g.uniform(0.2, 0.8))}),
        Case("the cubic f(y) = Σ c·y³ at x of shape (4,) with a step h of about 0.01 given",
             (CubicLoss(g, (4,)), g.normal(size=4)), {"h": float(g.uniform(0.005, 0.02))}),
        Case("the attention loss f(Q) = Σ G ⊙ attention(Q, K, V, causal mask) at Q of shape (2, 3, 6)",
             (AttentionLoss(g, (2,), 3, 3, 6, 2, causal=True), g.normal(size=(2, 3, 6)))),
        Case("the softmax loss f(S) = Σ G ⊙ softmax(S) at a transposed (not C-ordered) S of shape (5, 3)",
             (SoftmaxLoss(g, (5, 3)), transposed)),
        Case("an integer x of shape (2, 3) with f(y) = Σ c·sin(y) + Σ b·y²",
             (SineLoss(g, (2, 3)), g.integers(-3, 4, size=(2, 3)))),
        Case("f(S) = Σ G ⊙ softmax(S) computed by a softmax that overwrites its argument, at S of "
             "shape (3, 4)", (InPlaceSoftmaxLoss(g, (3, 4)), g.normal(size=(3, 4)))),
    ]


def _probe_loop(f, x, h, *, kind="central", restore=True, dtype=float, hand_over=np.copy):
    """Variants of the finite-difference loop that learners write."""
    probe = np.array(x, dtype=dtype, order="C")
    grad = np.zeros(probe.shape)
    for index in np.ndindex(probe.shape):
        original = probe[index]
        if kind == "central":
            probe[index] = original + h
            f_plus = f(hand_over(probe))
            probe[index] = original - h
            f_minus = f(hand_over(probe))
            grad[index] = (f_plus - f_minus) / (2 * h)
        elif kind == "forward":
            f_here = f(probe.copy())
            probe[index] = original + h
            grad[index] = (f(probe.copy()) - f_here) / h
        elif kind == "backward":
            f_here = f(probe.copy())
            probe[index] = original - h
            grad[index] = (f_here - f(probe.copy())) / h
        if restore:
            probe[index] = original
    return grad


def _integer_copy(R, f, x, h=1e-5):
    if np.asarray(x).dtype.kind not in "iu":
        raise ValueError("only an integer x shows this mistake")
    return _probe_loop(f, x, h, dtype=np.asarray(x).dtype)


def compare_gradient(R, case, mine):
    """The values against the reference's, then how the kernel probed f (each entry put back
    exactly; the default step when no h is given)."""
    heard = case.args[0].stop_listening() if isinstance(case.args[0], Heard) else []
    problem = compare_outputs(NUMERICAL_GRADIENT, mine, R.numerical_gradient(*case.args, **case.kwargs))
    if problem:
        return problem
    problem = probe_problem("your numerical_gradient", case.args[1], heard, case.kwargs.get("h"))
    if problem and NOT_RESTORED in problem:
        return problem, NOT_RESTORED               # named: no catalogued bug is asked to reproduce it
    return (problem, "not by the default step h = 1e-5") if problem else None


NUMERICAL_GRADIENT = Spec(
    name="numerical_gradient",
    cases=numerical_gradient_cases,
    outputs=("gradient",),
    compare=compare_gradient,
    # The learner and the reference evaluate f at the same points, so correct central
    # differences agree far below this; one-sided differences miss it by ~h·f''.
    rtol=1e-6,
    atol=1e-8,
    bugs=(
        Bug("a forward difference (f(x + h) − f(x)) / h is used instead of the central one",
            lambda R, f, x, h=1e-5: _probe_loop(f, x, h, kind="forward")),
        Bug("a backward difference (f(x) − f(x − h)) / h is used instead of the central one",
            lambda R, f, x, h=1e-5: _probe_loop(f, x, h, kind="backward")),
        Bug("the central difference is divided by h instead of 2h",
            lambda R, f, x, h=1e-5: 2 * R.numerical_gradient(f, x, h)),
        Bug("the step h passed in is ignored (the default 1e-5 is always used)",
            lambda R, f, x, h=1e-5: R.numerical_gradient(f, x)),
        Bug("each perturbed entry is left at x − h instead of being restored, so later entries are "
            "probed at the wrong point",
            lambda R, f, x, h=1e-5: _probe_loop(f, x, h, restore=False)),
        Bug("the copy of x stays an integer array, so x ± h is truncated back to an integer",
            _integer_copy),
        Bug("f is handed the working array itself rather than a fresh copy, and this f overwrites "
            "its argument",
            lambda R, f, x, h=1e-5: _probe_loop(f, x, h, hand_over=lambda probe: probe)),
        Bug("the gradient comes back flattened instead of shaped like x",
            lambda R, f, x, h=1e-5: R.numerical_gradient(f, x, h).reshape(-1)),
    ),
)
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
