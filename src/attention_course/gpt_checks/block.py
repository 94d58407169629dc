"""Positional encoding, layer norm (forward and backward) and the transformer block: their worked
examples and the wrong answers they recognise."""
import numpy as np

from .. import forms
from ..checks import CheckFailed, _quietly, call


# ---------------------------------------------------------------- positional encoding

def sinusoids(T, d, *, swap=False, exponent=None, halves=False, start=0, sign=-1.0):
    """The sinusoidal encoding, or (with a flag) a common wrong version of it (the hidden tests name
    the same mistakes from the same definitions)."""
    T, d = int(T), int(d)
    t = np.arange(start, start + T, dtype=float)[:, None]
    j = np.arange(d)
    if halves:
        half = (d + 1) // 2
        i = np.where(j < half, j, j - half)
        angles = t * 10000.0 ** (sign * 2.0 * i / d)
        return np.where(j < half, np.sin(angles), np.cos(angles))
    power = exponent(j, d) if exponent else 2.0 * (j // 2) / d
    angles = t * 10000.0 ** (sign * power)
    return np.where((j % 2 == 0) != swap, np.sin(angles), np.cos(angles))


def positional_encoding_expected(T, d):
    """The encoding the lesson defines (for the visible checks)."""
    return sinusoids(T, d)


def positional_encoding_mistakes(T, d):
    return [
        ("sine and cosine are swapped: even columns (0, 2, …) take the sine, odd ones the cosine",
         sinusoids(T, d, swap=True)),
        ("column j's frequency uses j / d instead of 2⌊j/2⌋ / d: a sine and the cosine beside it must "
         "share one frequency", sinusoids(T, d, exponent=lambda j, d: j / d)),
        ("the sines fill the first half of the columns and the cosines the second; here they alternate, "
         "column by column", sinusoids(T, d, halves=True)),
        ("positions start at 1; the first token is position 0 (its row is sin 0 = 0, cos 0 = 1)",
         sinusoids(T, d, start=1)),
        ("the frequencies are 10000^(+2⌊j/2⌋/d): the exponent needs a minus sign, so that later columns "
         "turn more slowly", sinusoids(T, d, sign=1.0)),
    ]


# ---------------------------------------------------------------- layer norm

def layer_norm_variant(x, gamma, beta, eps, *, axis=-1, ddof=0, eps_place="inside", naive=False, swap=False):
    """Layer norm, or (with a flag) a common wrong version of it."""
    x, gamma, beta = (np.asarray(a, dtype=float) for a in (x, gamma, beta))
    if swap:
        gamma, beta = beta, gamma
    mu = x.mean(axis=axis, keepdims=True)
    var = (x ** 2).mean(axis=axis, keepdims=True) - mu ** 2 if naive else x.var(axis=axis, keepdims=True, ddof=ddof)
    with np.errstate(all="ignore"):
        scale = {"inside": np.sqrt(var + eps), "outside": np.sqrt(var) + eps, "none": np.sqrt(var)}[eps_place]
        return gamma * (x - mu) / scale + beta


def layer_norm_expected(x, gamma, beta, eps=1e-5):
    """Layer norm as the lesson defines it (for the visible checks)."""
    return layer_norm_variant(x, gamma, beta, eps)


def layer_norm_mistakes(x, gamma, beta, eps=1e-5):
    return [
        ("the mean and variance run down the columns (axis=0) instead of along each row (axis=-1)",
         layer_norm_variant(x, gamma, beta, eps, axis=0)),
        ("eps is added outside the square root, √σ² + eps; it belongs inside, √(σ² + eps)",
         layer_norm_variant(x, gamma, beta, eps, eps_place="outside")),
        ("eps is left out: a constant row then divides 0 by 0", layer_norm_variant(x, gamma, beta, eps, eps_place="none")),
        ("the variance divides by d − 1 (np.var(..., ddof=1)); layer norm divides by d",
         layer_norm_variant(x, gamma, beta, eps, ddof=1)),
        ("the variance is mean(x²) − mean(x)², which cancels catastrophically when the entries share a "
         "large offset: subtract the mean first, then square", layer_norm_variant(x, gamma, beta, eps, naive=True)),
        ("gamma and beta are swapped: gamma multiplies, beta is added", layer_norm_variant(x, gamma, beta, eps, swap=True)),
        ("the eps passed in is not used (1e-5 every time): take the eps argument", layer_norm_variant(x, gamma, beta, 1e-5)),
    ]


def layer_norm_backward_variant(dy, x, gamma, eps, *, centre=True, project=True, use_gamma=True, reduce=True,
                                gamma_times_x=False):
    """Layer norm's backward pass ``(dx, dgamma, dbeta)``, or (with a flag) a common wrong version of it."""
    dy, x, gamma = (np.asarray(a, dtype=float) for a in (dy, x, gamma))
    mu = x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) * rstd
    dxhat = dy * gamma if use_gamma else dy
    dx = dxhat
    if centre:
        dx = dx - dxhat.mean(axis=-1, keepdims=True)
    if project:
        dx = dx - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    lead = tuple(range(dy.ndim - 1))
    dgamma, dbeta = dy * (x if gamma_times_x else xhat), dy
    if reduce:
        dgamma, dbeta = dgamma.sum(axis=lead), dbeta.sum(axis=lead)
    return rstd * dx, dgamma, dbeta


def layer_norm_backward_mistakes(dy, x, gamma, eps=1e-5):
    """``{output name: [(what was done, that output)]}`` for dx, dgamma and dbeta."""
    variants = [
        ("dx leaves out the path through the variance: subtract x̂ · mean(dx̂ ⊙ x̂) too", dict(project=False)),
        ("dx leaves out the path through the mean: subtract mean(dx̂) too", dict(centre=False)),
        ("dx treats the mean and the variance as constants (γ ⊙ dy / √(σ² + eps) alone): both depend on "
         "every entry of the row", dict(centre=False, project=False)),
        ("dx starts from dy instead of dx̂ = γ ⊙ dy", dict(use_gamma=False)),
        ("dgamma and dbeta are not summed over the leading axes: one γ is shared by every row, so its "
         "gradient is the sum over all of them", dict(reduce=False)),
        ("dgamma multiplies dy by x instead of by the normalised x̂", dict(gamma_times_x=True)),
    ]
    out = {"dx": [], "dgamma": [], "dbeta": []}
    for explanation, how in variants:
        for name, value in zip(out, layer_norm_backward_variant(dy, x, gamma, eps, **how)):
            out[name].append((explanation, value))
    return out


def confirm_numerical_gradient(numerical_gradient, where):
    """Your ``numerical_gradient`` (lesson 05) on f(y) = Σ c ⊙ y³ at a known point, before it judges
    anything else: its central differences there are 3 c x² + c h² exactly."""
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]])
    c = np.array([[1.0, 2.0, -1.0], [0.5, 3.0, 1.0]])
    h = 1e-3
    try:
        got = _quietly(numerical_gradient, lambda y: float(np.sum(c * y ** 3)), x.copy(), h)
    except NotImplementedError:
        raise CheckFailed(f"numerical_gradient is not written yet: paste your lesson 05 function {where}.") from None
    except Exception as exc:
        raise CheckFailed(f"Your numerical_gradient raised {type(exc).__name__}: {exc}. Fix it first ({where}).") from None
    right = 3 * c * x ** 2 + c * h ** 2
    if not isinstance(got, np.ndarray) or got.shape != x.shape or not np.allclose(got, right, rtol=1e-6, atol=1e-8):
        failed = CheckFailed("This check uses your numerical_gradient, and it does not give central differences "
                             f"on a known example (f(y) = Σ c·y³). Fix numerical_gradient first ({where}).")
        failed.names_the_function = True
        raise failed
    print("✓ your numerical_gradient gives central differences on a known example; now it checks your backward")


def check_calls(fn, required, *args, **kwargs):
    """Call ``fn`` and count its calls of the earlier functions it is asked to build on
    (``required``: ``{name: at least how many}``), as the hidden tests do, in their words."""
    space = getattr(fn, "__globals__", {})
    saved = {name: space.get(name) for name in required}
    counts = dict.fromkeys(required, 0)

    def counting(name, inner):
        def counted(*a, **k):
            counts[name] += 1
            return inner(*a, **k)
        return counted

    try:
        for name, inner in saved.items():
            if inner is not None:
                space[name] = counting(name, inner)
        result = call(fn, *args, **kwargs)
    finally:
        space.update(saved)
    problem = forms.calls_problem(getattr(fn, "__name__", "this function"), required, counts)
    if problem:
        raise CheckFailed(problem)
    print(f"✓ {getattr(fn, '__name__', 'this function')} calls your "
          + " and ".join(f"{name} ({counts[name]}×)" for name in required))
    return result


def mha_loop(X, W_Q, W_K, W_V, W_O, n_heads, mask=None, scale_width=None):
    """Multi-head attention one sequence and one head at a time (lesson 06's loop), ``(O, A)``;
    leading batch axes of ``X`` (and of ``mask``) are looped over too. ``scale_width``: divide the
    scores by √scale_width instead of √d_h (a mistake's attention)."""
    X = np.asarray(X, dtype=float)
    if X.ndim > 2:
        T = X.shape[-2]
        masks = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), X.shape[:-2] + (T, T))
        parts = [mha_loop(X[i], W_Q, W_K, W_V, W_O, n_heads, None if masks is None else masks[i], scale_width)
                 for i in range(X.shape[0])]
        return np.stack([o for o, _ in parts]), np.stack([a for _, a in parts])
    d_h = np.shape(W_Q)[1] // n_heads
    outs, maps = [], []
    for i in range(n_heads):
        cols = slice(i * d_h, (i + 1) * d_h)
        Q, K, V = (X @ np.asarray(W, dtype=float)[:, cols] for W in (W_Q, W_K, W_V))
        s = Q @ K.T / np.sqrt(scale_width or d_h)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        outs.append(w @ V)
        maps.append(w)
    return np.concatenate(outs, axis=-1) @ np.asarray(W_O, dtype=float), np.stack(maps)


def split_heads_expected(X, n_heads):
    """Lesson 06's split: head ``i`` holds columns ``i*d_h:(i+1)*d_h``, ``(..., h, T, d_h)``."""
    X = np.asarray(X, dtype=float)
    return np.stack(np.split(X, n_heads, axis=-1), axis=-3)


def merge_heads_expected(H):
    """Lesson 06's merge, the inverse of the split: ``(..., h, T, d_h)`` to ``(..., T, h·d_h)``."""
    H = np.asarray(H, dtype=float)
    return np.concatenate([H[..., i, :, :] for i in range(H.shape[-3])], axis=-1)


# ---------------------------------------------------------------- the block

def example_block(seed=9, d=6, n_heads=2, d_hidden=10):
    """A small block's parameters (for the visible checks and the demonstrations)."""
    g = np.random.default_rng(seed)
    width = d
    return {"n_heads": n_heads,
            "ln1_gamma": 1 + 0.3 * g.normal(size=d), "ln1_beta": 0.3 * g.normal(size=d),
            "W_Q": g.normal(size=(d, width)) / np.sqrt(d), "W_K": g.normal(size=(d, width)) / np.sqrt(d),
            "W_V": g.normal(size=(d, width)) / np.sqrt(d), "W_O": g.normal(size=(width, d)) / np.sqrt(width),
            "ln2_gamma": 1 + 0.3 * g.normal(size=d), "ln2_beta": 0.3 * g.normal(size=d),
            "W_1": g.normal(size=(d, d_hidden)) / np.sqrt(d), "b_1": 0.5 * g.normal(size=d_hidden),
            "W_2": g.normal(size=(d_hidden, d)) / np.sqrt(d_hidden), "b_2": 0.3 * g.normal(size=d)}


def _floats(p):
    return {k: (np.asarray(v, dtype=float) if k != "n_heads" else int(v)) for k, v in p.items()}


def block_expected(x, p, mask, scale_width=None):
    """``(y, A)`` of the pre-norm block the lesson defines, from its formulas."""
    f, x = _floats(p), np.asarray(x, dtype=float)
    h = layer_norm_expected(x, f["ln1_gamma"], f["ln1_beta"])
    a, A = mha_loop(h, f["W_Q"], f["W_K"], f["W_V"], f["W_O"], f["n_heads"], mask, scale_width)
    x1 = x + a
    h2 = layer_norm_expected(x1, f["ln2_gamma"], f["ln2_beta"])
    return x1 + np.maximum(h2 @ f["W_1"] + f["b_1"], 0.0) @ f["W_2"] + f["b_2"], A


def block_outputs(x, p, mask):
    """``(y, A)`` of a pre-norm block and ``[(what was done, y)]`` of its usual wrong versions,
    computed from the lesson's formulas."""
    f, x = _floats(p), np.asarray(x, dtype=float)

    def ln(z, which):
        return layer_norm_expected(z, f[f"{which}_gamma"], f[f"{which}_beta"])

    def mha(z, m):
        return mha_loop(z, f["W_Q"], f["W_K"], f["W_V"], f["W_O"], f["n_heads"], m)

    def mlp(z, relu=True, after=False):
        u = z @ f["W_1"] + f["b_1"]
        if after:
            return np.maximum(u @ f["W_2"] + f["b_2"], 0.0)
        return (np.maximum(u, 0.0) if relu else u) @ f["W_2"] + f["b_2"]

    h = ln(x, "ln1")
    a, A = mha(h, mask)
    x1 = x + a
    h2 = ln(x1, "ln2")
    right = x1 + mlp(h2)
    post = ln(x + mha(x, mask)[0], "ln1")
    mistakes = [
        ("the block is post-norm (layer norm applied to each residual sum); pre-norm normalises the input "
         "of each sub-layer and leaves the residual stream alone", ln(post + mlp(post), "ln2")),
        ("the residual around attention adds the normalised h, not the block's input x", h + a + mlp(ln(h + a, "ln2"))),
        ("there is no residual around attention: x1 = x + attention(…), keep the x", a + mlp(ln(a, "ln2"))),
        ("there is no residual around the MLP: y = x1 + MLP(…), keep the x1", mlp(h2)),
        ("the residual around the MLP adds the normalised h2 instead of x1", h2 + mlp(h2)),
        ("the MLP has no ReLU between its two layers", x1 + mlp(h2, relu=False)),
        ("the ReLU comes after the MLP's second layer; it belongs between the two", x1 + mlp(h2, after=True)),
        ("the second layer norm uses ln1_gamma and ln1_beta; it has its own, ln2_gamma and ln2_beta",
         x1 + mlp(ln(x1, "ln1"))),
        ("the MLP reads x1 itself instead of its layer norm h2", x1 + mlp(x1)),
        ("attention reads x itself instead of layer_norm(x)", (x + mha(x, mask)[0]) + mlp(ln(x + mha(x, mask)[0], "ln2"))),
        ("the mask is not passed on to multi_head_attention", (x + mha(h, None)[0]) + mlp(ln(x + mha(h, None)[0], "ln2"))),
    ]
    return (right, A), mistakes
