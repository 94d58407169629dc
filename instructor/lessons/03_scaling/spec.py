"""Hidden tests of lesson 03: ``dot_product_variance``, ``softmax_jacobian`` and
``scaled_dot_product_attention``."""
import numpy as np

from attention_course.forms import float_problem
from attention_course.randomness import GLOBAL_GENERATOR_PROBLEM

from ..spec import Bug, Call, Case, Spec, register
from .masks import key_mask, padding_mask, visible_mask

# ------------------------------------------------------------------ dot_product_variance
#
# A simulation cannot be compared bit for bit: a learner may draw k before q, draw both at
# once, loop, or use ddof=1. So each case only asks for a float within 5 standard errors of
# d_k. For x = qᵀk with q, k standard normal in d_k dimensions, E[x²] = d_k and
# E[x⁴] = 3 d_k² + 6 d_k, so the sample variance of n draws has standard error
# sqrt((2 d_k² + 6 d_k) / n). Determinism for a seed, dependence on it and on n_samples are
# judged from six more calls (``determinism_calls``); in the last, the probe reports whether the call
# reseeded or drew from NumPy's global generator (``np.random.seed``, ``Call.global_generator``).

WITHIN = 5.0


def variance_cases(g):
    def seed():
        return int(g.integers(1, 10_000))

    def n(low, high):
        return int(g.integers(low, high)) * 100

    return [
        Case("d_k = 4 with the default n_samples and seed", (4,)),
        Case("d_k = 64 with n_samples given", (64,), {"n_samples": n(150, 250)}),
        Case("d_k = 9 with n_samples and seed given", (9,), {"n_samples": n(40, 60), "seed": seed()}),
        Case("d_k = 512 with a small n_samples and a seed", (512,), {"n_samples": n(15, 25), "seed": seed()}),
        Case("d_k = 1 with a large n_samples and a seed", (1,), {"n_samples": n(400, 600), "seed": seed()}),
        Case("d_k = 6 with n_samples and seed given by position", (6, n(8, 12), seed())),
    ]


def standard_error(d_k, n_samples):
    """Standard error of the sample variance of n draws of qᵀk (q, k standard normal in d_k dims)."""
    return float(np.sqrt((2.0 * d_k ** 2 + 6.0 * d_k) / n_samples))


def _case_numbers(case):
    names = ("d_k", "n_samples", "seed")
    given = dict(zip(names, case.args), **case.kwargs)
    return given["d_k"], given.get("n_samples", 100_000)


# What a mistake gives on average (its expected value), with its explanation.
_VARIANCE_MISTAKES = (
    (lambda d: 0.0, "it returns the mean of qᵀk (about 0) instead of its variance"),
    (lambda d: np.sqrt(d), "it returns the standard deviation √d_k instead of the variance d_k"),
    (lambda d: 1.0, "it measures the scaled score qᵀk/√d_k, or a single product q_r k_r, whose "
                    "variance is 1; the sum of d_k products has variance d_k"),
    (lambda d: 7.0 * d / 144.0, "q and k are uniform on [0, 1) (rng.random) instead of standard normal"),
)


def compare_variance(R, case, mine):
    d_k, n = _case_numbers(case)
    problem = float_problem("dot_product_variance", mine)
    if problem:
        return problem
    if not np.isfinite(mine):
        return f"your variance is {mine}."
    se = standard_error(d_k, n)
    if abs(mine - d_k) <= WITHIN * se:
        return None
    message = (f"your variance is {mine:.5g}, but qᵀk has variance d_k = {d_k}: a sample of "
               f"{n} should land within {WITHIN:g} standard errors (5 × {se:.3g}) of it.")
    if d_k > 1:
        for expected, why in _VARIANCE_MISTAKES:
            target = expected(d_k)
            if abs(mine - target) <= max(WITHIN * se, 0.05 * abs(target)) and abs(target - d_k) > WITHIN * se:
                return message + f" This is what happens when {why}.", why
    return message


def determinism_calls(g):
    """Six more calls at one width and sample size: the same seed twice, by keyword and by
    position, another seed, another sample size with the first seed, and the first call once more,
    watched for whether it reseeds or draws from NumPy's global generator (the probe reports it)."""
    d_k, n, seed = int(g.integers(5, 13)), int(g.integers(20, 40)) * 100, int(g.integers(1, 10_000))
    more = n + int(g.integers(1, 10)) * 100
    return [Call((d_k,), {"n_samples": n, "seed": seed}), Call((d_k,), {"n_samples": n, "seed": seed}),
            Call((d_k, n, seed)), Call((d_k,), {"n_samples": n, "seed": seed + 1}),
            Call((d_k,), {"n_samples": more, "seed": seed}),
            Call((d_k,), {"n_samples": n, "seed": seed}, global_generator=True)]


def judge_variance(R, calls, results):
    """Why the six determinism calls fail, or None."""
    d_k, n = calls[0].args[0], calls[0].kwargs["n_samples"]
    if any("raised" in r for r in results):
        raised = next(r["raised"] for r in results if "raised" in r)
        return f"dot_product_variance({d_k}, n_samples={n}, seed=...) raised {raised}"
    first, again, positional, other, longer, _ = (r["value"] for r in results)
    problem = float_problem("dot_product_variance", first)
    if problem:
        return problem
    if first != again:
        return ("Two calls with the same seed gave different variances. Draw every random number from "
                "np.random.default_rng(seed), so that the seed fixes the result.")
    if first != positional:
        return (f"dot_product_variance({d_k}, {n}, s) and dot_product_variance({d_k}, n_samples={n}, seed=s) "
                "differ: keep the parameter order (d_k, n_samples, seed).")
    if first == other:
        return ("Two different seeds gave exactly the same variance: the seed argument is ignored. "
                "Create the generator with np.random.default_rng(seed).")
    if first == longer:
        return (f"n_samples = {n} and n_samples = {calls[4].kwargs['n_samples']} gave exactly the same variance "
                "with the same seed: the n_samples argument is ignored. Draw arrays of shape (n_samples, d_k).")
    if results[5].get("global_generator_moved") is not False:
        return GLOBAL_GENERATOR_PROBLEM.format(function="dot_product_variance")
    return None


def _variance_with(R, d_k, n_samples=100_000, seed=0, statistic=np.var, scale=False, uniform=False):
    """The reference's draws with one deliberate change (a Bug's output)."""
    g = np.random.default_rng(seed)
    draw = g.random if uniform else g.standard_normal
    q, k = draw((n_samples, d_k)), draw((n_samples, d_k))
    dots = np.einsum("nd,nd->n", q, k) / (np.sqrt(d_k) if scale else 1.0)
    return float(statistic(dots))


register(Spec(
    name="dot_product_variance",
    cases=variance_cases,
    outputs=("variance",),
    compare=compare_variance,
    extra_calls=determinism_calls,
    judge_extra=judge_variance,
    bugs=(
        Bug("it returns the mean of qᵀk instead of its variance",
            lambda R, *a, **k: _variance_with(R, *a, **k, statistic=np.mean)),
        Bug("it returns the standard deviation instead of the variance",
            lambda R, *a, **k: _variance_with(R, *a, **k, statistic=np.std)),
        Bug("it measures the scaled score qᵀk/√d_k",
            lambda R, *a, **k: _variance_with(R, *a, **k, scale=True)),
        Bug("q and k are uniform on [0, 1) instead of standard normal",
            lambda R, *a, **k: _variance_with(R, *a, **k, uniform=True)),
    ),
))

# ------------------------------------------------------------------ softmax_jacobian


def _softmax(z):
    from ..reference import reference

    return reference().softmax(np.asarray(z, dtype=float))


def jacobian_cases(g):
    n = int(g.integers(3, 8))
    return [
        Case("p = softmax of 5 random logits", (_softmax(g.normal(size=5)),)),
        Case("p = softmax of 9 logits with spread 3", (_softmax(3 * g.normal(size=9)),)),
        Case("a uniform p", (np.full(n, 1.0 / n),)),
        Case("a nearly one-hot p (one logit 30 above the others)",
             (_softmax(g.permutation(np.r_[30.0, 2 * g.normal(size=3)])),)),
        Case("an exactly one-hot p from logits around ±1e4",
             (_softmax(g.permutation([1e4, -1e4, 0.0]) + g.normal(size=3)),)),
        Case("a single entry p = [1.0]", (np.array([1.0]),)),
        Case("p given as a Python list of 3 floats", (_softmax(g.normal(size=3)).tolist(),)),
        Case("a one-hot p of 4 integers", (np.eye(4, dtype=int)[int(g.integers(4))],)),
    ]


register(Spec(
    name="softmax_jacobian",
    cases=jacobian_cases,
    outputs=("J",),
    rtol=1e-9,
    atol=1e-12,
    bugs=(
        Bug("the sign is flipped: p pᵀ − diag(p) instead of diag(p) − p pᵀ",
            lambda R, p: -R.softmax_jacobian(p)),
        Bug("only the diagonal p_i(1 − p_i) is kept; the off-diagonal entries −p_i p_j are missing",
            lambda R, p: np.diag(np.asarray(p, float) * (1 - np.asarray(p, float)))),
        Bug("the identity stands where diag(p) belongs: I − p pᵀ",
            lambda R, p: np.eye(len(p)) - np.outer(p, p)),
        Bug("every entry is p_i(1 − p_j): the Kronecker delta was dropped from p_i(δ_ij − p_j)",
            lambda R, p: np.outer(p, 1 - np.asarray(p, float))),
    ),
))

# ------------------------------------------------------------------ scaled_dot_product_attention


def attention_cases(g):

    def qkv(batch, T_q, T_k, d_k, d_v, scale=1.0):
        return (scale * g.normal(size=(*batch, T_q, d_k)), scale * g.normal(size=(*batch, T_k, d_k)),
                g.normal(size=(*batch, T_k, d_v)))

    square = np.tril(np.ones((5, 5), dtype=bool))
    with_blind_row = visible_mask(g, (4, 6))
    with_blind_row[2] = False                                   # row 2 sees nothing
    full = visible_mask(g, (2, 4, 6), p=0.5, blind_rows=2)      # blind rows, in either sequence
    return [
        Case("no mask: Q (4, 6), K (5, 6), V (5, 3)", qkv((), 4, 5, 6, 3)),
        Case("no mask, batch: Q (2, 3, 4, 9), K (2, 3, 7, 9), V (2, 3, 7, 2)", qkv((2, 3), 4, 7, 9, 2)),
        Case("no mask, scores of about ±1e4: Q (3, 4), K (6, 4), V (6, 5)", qkv((), 3, 6, 4, 5, scale=70.0)),
        Case("a key mask of shape (T_k,) = (5,) with Q (4, 6), K (5, 6), V (5, 3)",
             qkv((), 4, 5, 6, 3), {"mask": key_mask(g, 5)}),
        Case("a (T_q, T_k) = (4, 6) mask whose row 2 is all False", qkv((), 4, 6, 5, 2), {"mask": with_blind_row}),
        Case("a causal (5, 5) mask given by position, d_k = 3 and d_v = 4", (*qkv((), 5, 5, 3, 4), square)),
        Case("a (B, 1, T_k) = (3, 1, 5) padding mask, one sequence fully padded",
             qkv((3,), 4, 5, 6, 3), {"mask": padding_mask(g, 3, 5)}),
        Case("a (B, T_q, T_k) = (2, 4, 6) mask with blind rows and scores of about ±1e4",
             qkv((2,), 4, 6, 9, 3, scale=60.0), {"mask": full}),
        Case("integer Q (4, 2), K (3, 2), V (3, 3) with a (4, 3) mask",
             (g.integers(-3, 4, size=(4, 2)), g.integers(-3, 4, size=(3, 2)), g.integers(-3, 4, size=(3, 3))),
             {"mask": visible_mask(g, (4, 3))}),
        Case("a (3, 4) mask that hides everything", qkv((), 3, 4, 6, 2), {"mask": np.zeros((3, 4), dtype=bool)}),
    ]


def _sdpa(R, Q, K, V, mask=None, divisor=None, fill=None, after=False, flip=False):
    """Scaled dot-product attention with one deliberate change (a Bug's output)."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    d = divisor(Q, K, V) if divisor else np.sqrt(K.shape[-1])
    S = Q @ np.swapaxes(K, -1, -2) / d                                  # (..., T_q, T_k)
    if mask is None:
        return R.softmax(S) @ V, R.softmax(S)
    mask = np.asarray(mask, dtype=bool)
    mask = ~mask if flip else mask
    if after:                                                           # zero after the softmax
        A = R.softmax(S) * mask
    elif fill == "multiply":                                            # scores * mask
        A = R.softmax(S * mask)
    elif fill is not None:                                              # a finite or -inf fill
        filled = np.where(mask, S, fill)
        e = np.exp(filled - filled.max(axis=-1, keepdims=True))
        A = e / e.sum(axis=-1, keepdims=True)
    else:
        A = R.masked_softmax(S, mask)
    return A @ V, A


register(Spec(
    name="scaled_dot_product_attention",
    cases=attention_cases,
    outputs=("O", "A"),
    bugs=(
        Bug("the scores are not divided by √d_k",
            lambda R, *a, **k: _sdpa(R, *a, **k, divisor=lambda Q, K, V: 1.0)),
        Bug("the scores are divided by d_k instead of √d_k",
            lambda R, *a, **k: _sdpa(R, *a, **k, divisor=lambda Q, K, V: K.shape[-1])),
        Bug("the scores are divided by √d_v (V.shape[-1]) instead of √d_k (K.shape[-1])",
            lambda R, *a, **k: _sdpa(R, *a, **k, divisor=lambda Q, K, V: np.sqrt(V.shape[-1]))),
        Bug("the scores are divided by √K.shape[0] (a hard-coded axis: that is T_k, not d_k)",
            lambda R, *a, **k: _sdpa(R, *a, **k, divisor=lambda Q, K, V: np.sqrt(K.shape[0]))),
        Bug("d_k is read from a fixed axis, K.shape[1], which is not the width of the keys once "
            "there are batch dimensions: use K.shape[-1]",
            lambda R, *a, **k: _sdpa(R, *a, **k, divisor=lambda Q, K, V: np.sqrt(K.shape[1]))),
        Bug("the mask polarity is reversed: True must mean \"may attend\"",
            lambda R, *a, **k: _sdpa(R, *a, **k, flip=True)),
        Bug("the mask is applied after the softmax (weights zeroed, rows no longer sum to 1)",
            lambda R, *a, **k: _sdpa(R, *a, **k, after=True)),
        Bug("masked scores are filled with a large finite number such as -1e9, so a row with "
            "nothing visible becomes uniform instead of all zeros",
            lambda R, *a, **k: _sdpa(R, *a, **k, fill=-1e9)),
        Bug("masked scores are set to -inf but a row with nothing visible is not handled, so it is NaN",
            lambda R, *a, **k: _sdpa(R, *a, **k, fill=-np.inf)),
        Bug("the scores are multiplied by the mask, so a masked score becomes 0 instead of -inf",
            lambda R, *a, **k: _sdpa(R, *a, **k, fill="multiply")),
    ),
    # The lesson asks for no NaN and no NumPy warning on a row with nothing visible.
    warnings_fail=lambda label, warning: (
        f"On {label}, your scaled_dot_product_attention gives the right numbers but makes NumPy "
        f"warn (\"{warning}\"). A row with nothing visible must come out as zeros without ever "
        "computing -inf - (-inf) or 0/0 (cleaning the NaN up afterwards, with np.nan_to_num say, "
        "still warns): guard the max and the division, as the lesson's hint shows."),
))
