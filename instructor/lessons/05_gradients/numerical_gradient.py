"""Hidden test of lesson 05's ``numerical_gradient``: the scalar functions it is handed (small callable classes built
from seeded parameters, kept in the grader and called through a stand-in, ``spec.Callback``), its cases and
its known mistakes. The lesson's ``spec.py`` registers it, in the lesson's order."""
import numpy as np
from attention_course.probes import NOT_RESTORED, probe_problem

from ..judge import compare_outputs
from ..spec import Bug, Callback, Case, Spec
from .lesson05_forward import _attention, _weights


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
