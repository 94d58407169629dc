"""The visible checks of lesson 09 (a small GPT): worked examples and the wrong answers they recognise.

Each ``..._mistakes`` function returns ``(what was done, what it gives)`` pairs, computed from
their definitions on the example at hand, for ``checks.cmp_known_mistakes``: a message names a
mistake only when the learner's output equals what that mistake gives, and no other mistake's
does. What a check expects is computed here from the lesson's definitions (layer norm, attention,
the block, the full causal pass), never from the learner's other functions; where the function
checked calls an earlier one, ``checks.check_earlier`` confirms that one first on the inputs the
check will hand it (``generate_earlier_examples``). The hidden tests name mistakes from the same
definitions, and say a wrong form in the same words (``attention_course.forms``).
"""
import numpy as np

from . import forms
from .checks import CheckFailed, _quietly, call, check_earlier, check_returns, check_shape, cmp


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


# ---------------------------------------------------------------- sampling

def sampling_probabilities(logits, temperature, top_k, *, after_softmax=False, times=False, ignore_temperature=False,
                           exact_k=False, keep_k_plus_1=False, ignore_top_k=False):
    """The distribution a sampler draws from, and (with a flag) the one a known mistake draws from."""
    z = np.asarray(logits, dtype=float)
    V = z.shape[-1]
    if times:
        z = z * temperature
    elif not (after_softmax or ignore_temperature):
        z = z / temperature
    if top_k is not None and top_k < V and not ignore_top_k:
        keep = np.zeros(V, dtype=bool)
        if exact_k or keep_k_plus_1:
            # the k (or k + 1) largest, ties broken toward the later index, or (exact_k="first") the earlier one
            order = np.lexsort((np.arange(V) * (-1 if exact_k == "first" else 1), z))
            keep[order[-(top_k + (1 if keep_k_plus_1 else 0)):]] = True
        else:
            keep = z >= np.sort(z)[-top_k]
        z = np.where(keep, z, -np.inf)
    e = np.exp(z - z.max())
    p = e / e.sum()
    if after_softmax:
        p = p / temperature
        p = p / p.sum()
    return p


#: (what was done, the flags of ``sampling_probabilities``); mistakes that draw from the same
#: distribution share one explanation, since no count of draws can tell them apart.
_TEMPERATURE_UNUSED = ("the temperature never reaches the logits (dividing the probabilities after the softmax and "
                       "renormalising changes nothing, as if it were left out): divide the logits by it before the softmax")
SAMPLING_MISTAKES = (
    (_TEMPERATURE_UNUSED, dict(after_softmax=True)),
    (_TEMPERATURE_UNUSED, dict(ignore_temperature=True)),
    ("the temperature multiplies the logits; divide them by it", dict(times=True)),
    ("top-k keeps exactly k tokens (argsort), dropping one that ties with the k-th largest logit: keep "
     "every token whose logit is at least the k-th largest", dict(exact_k=True)),
    ("top-k keeps exactly k tokens (argsort), dropping one that ties with the k-th largest logit: keep "
     "every token whose logit is at least the k-th largest", dict(exact_k="first")),
    ("top-k keeps k + 1 tokens (an off-by-one in the cut)", dict(keep_k_plus_1=True)),
    ("top_k is not used", dict(ignore_top_k=True)),
)


def _fit(counts, p, n, sigmas=5.0):
    """None when ``counts`` of ``n`` draws fit ``p``, else the worst token and its count."""
    spread = np.sqrt(n * p * (1 - p))
    gap = np.abs(counts - n * p)
    bad = ((p == 0) & (counts > 0)) | (gap > sigmas * spread + 1.0)
    if not bad.any():
        return None
    t = int(np.flatnonzero(bad)[np.argmax((gap / (spread + 1.0))[bad])])
    return t


def sampling_mistakes_that_fit(counts, logits, temperature, top_k, n, fits):
    """The explanations of the catalogued sampling mistakes whose distribution ``counts`` fit
    (``fits(counts, q, n)`` is true) although it differs from the right one."""
    p = sampling_probabilities(logits, temperature, top_k)
    return {explanation for explanation, how in SAMPLING_MISTAKES
            if not np.allclose(q := sampling_probabilities(logits, temperature, top_k, **how), p, atol=1e-3)
            and fits(counts, q, n)}


def check_token(value, function="sample_next"):
    """``value`` is one token id, an int, as the hidden tests require (in their words)."""
    problem = forms.token_problem(function, value)
    if problem:
        raise CheckFailed(problem)
    print(f"✓ {function} returned the int {value}")


def check_sampler(name, sample_next, logits, temperature, top_k, n=4000, seed=0):
    """Draw ``n`` tokens with ``sample_next`` (twice, from the same seed) and test the counts against
    the distribution it should follow; name a mistake only when the counts fit that mistake's
    distribution and no other's."""
    from .small_gpt import draw_samples

    logits = np.asarray(logits, dtype=float)
    problem = forms.token_problem("sample_next", call(sample_next, logits, temperature, top_k, np.random.default_rng(seed)))
    if problem:
        raise CheckFailed(f"{name}: {problem}")
    draws = _quietly(draw_samples, sample_next, logits, temperature, top_k, seed, n)
    V = len(logits)
    if draws.min() < 0 or draws.max() >= V:
        raise CheckFailed(f"{name}: sample_next returned a token id outside 0..{V - 1}: return an index into the logits.")
    if not np.array_equal(draws[0], draws[1]):
        raise CheckFailed(f"{name}: two runs with Generators made from the same seed drew different tokens: draw with "
                          "the rng you are given (rng.choice(V, p=p)), not with np.random.")
    counts = np.bincount(draws[0], minlength=V)
    p = sampling_probabilities(logits, temperature, top_k)
    worst = _fit(counts, p, n)
    if worst is None:
        shares = " ".join(f"{c / n:.3f}" for c in counts)
        print(f"✓ {name}: the shares of {n} draws ({shares}) fit the probabilities "
              f"({' '.join(f'{q:.3f}' for q in p)})")
        return                                        # a check prints its verdict; a value would show under the cell
    named = sampling_mistakes_that_fit(counts, logits, temperature, top_k, n, lambda c, q, k: _fit(c, q, k) is None)
    if len(named) == 1:
        raise CheckFailed(f"{name}: your draws are exactly what you get when {named.pop()}.")
    raise CheckFailed(f"{name}: token {worst} came up {counts[worst]} times in {n} draws; with probability "
                      f"{p[worst]:.3f} it should come up about {n * p[worst]:.0f} times. Divide the logits by the "
                      "temperature, cut to the top k (ties kept), then softmax and draw with rng.")


# ---------------------------------------------------------------- generation

def tokens_problem(tokens, prompt, n_new):
    """Why ``tokens`` is not the prompt followed by ``n_new`` new token ids in an integer array, or None
    (the visible check and the hidden test say it alike)."""
    P = len(prompt)
    if not isinstance(tokens, np.ndarray) or tokens.dtype.kind not in "iu" or tokens.shape != (P + n_new,):
        return (f"tokens should be an integer array of shape ({P + n_new},): the prompt's {P} tokens then the "
                f"{n_new} new ones; yours is {forms.describe(tokens)}.")
    if not np.array_equal(tokens[:P], prompt):
        return "tokens should start with the prompt, unchanged."
    return None


def passing_on_problem(draws, n_new):
    """Why the calls of ``sample_next`` a ``generate`` made do not draw each of its ``n_new`` new
    tokens with one call that passes on the temperature, top_k and rng it was given, or None.
    ``draws``: one ``(same temperature, same top_k, the rng given, in the state the previous
    draw left it)`` triple of booleans per call (the visible check and the hidden test say it alike)."""
    if len(draws) != n_new:
        return (f"generate should draw each of its {n_new} new tokens with one call of sample_next, but it called "
                f"sample_next {forms._times(len(draws))}.")
    for i, (temperature, top_k, rng) in enumerate(draws):
        what = ("temperature" if not temperature else "top_k" if not top_k else
                "rng (or something else drew from it first)" if not rng else None)
        if what:
            return (f"new token {i} was drawn by sample_next with another {what} than the one generate was given: "
                    "pass on the temperature, top_k and rng you were given, and draw from the rng nothing else.")
    return None


#: The earlier functions a ``generate`` hands token vectors, with the most rows each may get per token
#: and per block when every token goes through every block once (``rows_problem``).
ROWS_PER_TOKEN = {"layer_norm": 2, "transformer_block": 1, "multi_head_attention": 1}


def token_rows(shape):
    """How many token vectors an input of this shape holds: everything but its last axis."""
    return int(np.prod(shape[:-1])) if len(shape) else 1


def rows_problem(rows, n_blocks, n_tokens):
    """Why the token rows a ``generate`` handed the earlier functions (``rows``: ``{name: rows in
    all}``) show that it reruns tokens it already processed, or that it does not use its
    ``layer_norm`` for the layer norms, or None. With a KV cache each of the ``n_tokens`` tokens of
    the final sequence (the prompt and the new ones) goes through each of the ``n_blocks`` blocks
    once: both layer norms of a block (and the final one) normalise it once, every token but the
    last drawn one at least (the visible check and the hidden test say it alike)."""
    for name, per_token in ROWS_PER_TOKEN.items():
        most = (per_token * n_blocks + (name == "layer_norm")) * n_tokens
        if rows.get(name, 0) > most:
            return (f"generate handed {name} {rows[name]} token rows in all, for {n_tokens} tokens and {n_blocks} "
                    f"block{'s' if n_blocks != 1 else ''}; with a KV cache each token goes through each block once, "
                    f"{most} rows at most: it reruns the tokens already processed. Keep each block's keys and "
                    "values in a cache and push only the new token through.")
    least = 2 * n_blocks * (n_tokens - 1)
    if rows.get("layer_norm", 0) < least:
        return (f"generate handed your layer_norm {rows.get('layer_norm', 0)} token rows, fewer than the {least} "
                "of both layer norms of every block for every token but the last: use your layer_norm for every "
                "layer norm, as the exercise asks.")
    return None


def full_pass(params, tokens, *, shift=0, no_pe=False, pe_after=False, unmasked_prefix=0, scale_width=None):
    """The logits of the last position of a full causal pass over ``tokens``, from the lesson's
    formulas; the flags give the passes that common cached-generation mistakes amount to (the
    first ``unmasked_prefix`` tokens reading each other without the mask, say)."""
    tokens = np.asarray(tokens)
    T = len(tokens)
    wte = np.asarray(params["wte"], dtype=float)
    positions = np.arange(T)
    positions[-1] += shift
    pe = sinusoids(int(positions.max()) + 1, wte.shape[1])[np.maximum(positions, 0)]
    x = wte[tokens] + (0.0 if (no_pe or pe_after) else pe)
    mask = np.tril(np.ones((T, T), dtype=bool))
    mask[:unmasked_prefix, :unmasked_prefix] = True
    for block in params["blocks"]:
        width = None
        if scale_width == "d_model":
            width = wte.shape[1] // int(block["n_heads"])
        x, _ = block_expected(x, block, mask, scale_width=width)
    if pe_after:
        x = x + pe
    return layer_norm_expected(x, params["ln_f_gamma"], params["ln_f_beta"])[-1] @ np.asarray(params["W_out"], float)


#: The cached-generation mistakes ``check_generation`` recognises: (what was done, flags of ``full_pass``).
GENERATION_MISTAKES = (
    ("the prompt goes through the blocks without the causal mask: its cached keys and values then carry what "
     "later prompt tokens said (attention to the future)", dict(unmasked_prefix="prompt")),
    ("the new token gets the position encoding of the position before it (off by one)", dict(shift=-1)),
    ("the new token gets the position encoding of the position after it (off by one)", dict(shift=1)),
    ("no position encoding is added to the tokens", dict(no_pe=True)),
    ("the position encoding is added after the blocks instead of to the embeddings", dict(pe_after=True)),
    ("the scores are divided by √(d / n_heads) instead of √d_h, the width of one head (W_Q.shape[1] // n_heads)",
     dict(scale_width="d_model")),
)


def check_generation(generate, params, prompt, n_new, sample_next, temperature=1.0, top_k=None, seed=0):
    """Generate, then compare each step's logits with a full causal pass over the tokens before it
    (the lesson's formulas), and the tokens with what your ``sample_next`` (already confirmed)
    draws from those logits with the same seed."""
    prompt = np.asarray(prompt)
    given = np.random.default_rng(seed)
    with _recording_draws(generate, sample_next, given) as draws, _counting_rows(generate) as rows:
        result = call(generate, params, prompt, n_new, temperature, top_k, given)
    P, V = len(prompt), np.shape(params["wte"])[0]
    tokens, logits = check_returns("generate", result, ("tokens", "logits"), shapes=((P + n_new,), (n_new, V)))
    problem = tokens_problem(tokens, prompt, n_new)
    if problem:
        raise CheckFailed(problem)
    check_shape("logits (one row per new token)", logits, (n_new, V))
    for i in range(n_new):
        prefix = tokens[:P + i]
        right = full_pass(params, prefix)
        if np.allclose(logits[i], right, rtol=1e-7, atol=1e-9):
            continue
        where = ("the prompt's own step (the logits of the first new token)" if i == 0 else f"new token {i}")
        named = {explanation for explanation, how in GENERATION_MISTAKES
                 if not np.allclose(wrong := full_pass(params, prefix, **{
                     k: (P if v == "prompt" else v) for k, v in how.items()}), right, rtol=1e-7, atol=1e-9)
                 and np.allclose(logits[i], wrong, rtol=1e-7, atol=1e-9)}
        if len(named) == 1:
            raise CheckFailed(f"the logits of {where} are exactly what you get when {named.pop()}.")
        cmp(f"the logits of {where} against a full causal pass over the {P + i} tokens before it", logits[i], right,
            atol=1e-9, hint="Each step must give exactly what running the whole sequence through the model gives: "
            "the new token at its own position, reading every cached key and value and its own.")
    print(f"✓ the logits of all {n_new} new tokens equal a full causal pass over the tokens before each")
    problem = rows_problem(rows, len(params["blocks"]), P + n_new)
    if problem:
        raise CheckFailed(problem)
    print(f"✓ each token went through each block once (token rows handed to {', '.join(f'{k} {v}' for k, v in rows.items())})")
    problem = passing_on_problem([(t == temperature, k == top_k, r) for t, k, r in draws], n_new)
    if problem:
        raise CheckFailed(problem)
    replay = np.random.default_rng(seed)
    drawn = [_quietly(sample_next, logits[i], temperature, top_k, replay) for i in range(n_new)]
    if not np.array_equal(tokens[P:], drawn):
        raise CheckFailed(f"the new tokens are not those sample_next draws from these logits with temperature "
                          f"{temperature} and top_k = {top_k}: draw each one with one call of sample_next(logits, "
                          "temperature, top_k, rng), passing on the temperature, top_k and rng you were given.")
    print(f"✓ the new tokens are those sample_next draws (temperature {temperature}, top_k = {top_k})")
    return tokens, logits


def check_greedy(generate, params, prompt, n_new, sample_next):
    """``generate`` with ``top_k = 1`` and ``rng = None``: it makes its own generator (a draw from
    None has nowhere to come from) and each new token is the argmax of its logits. Returns
    ``(tokens, logits)``."""
    given = []

    def recorded(*args, **kwargs):
        import inspect

        try:
            given.append(inspect.signature(sample_next).bind(*args, **kwargs).arguments.get("rng"))
        except (TypeError, ValueError):
            pass
        return sample_next(*args, **kwargs)

    space = getattr(generate, "__globals__", {})
    saved = space.get("sample_next")
    none_passed_on = CheckFailed("Called with rng=None, generate handed None on to sample_next: make a generator "
                                 "first (rng = np.random.default_rng() when rng is None), as the exercise asks.")
    try:
        if saved is not None:
            space["sample_next"] = recorded
        result = call(generate, params, prompt, n_new, 1.0, 1, None)
    except CheckFailed:
        if any(rng is None for rng in given):
            raise none_passed_on from None
        raise
    finally:
        if saved is not None:
            space["sample_next"] = saved
    if any(rng is None for rng in given):
        raise none_passed_on
    tokens, logits = check_returns("generate", result, ("tokens", "logits"),
                                   shapes=((len(prompt) + n_new,), (n_new, np.shape(params["wte"])[0])))
    problem = tokens_problem(tokens, np.asarray(prompt), n_new)
    if problem:
        raise CheckFailed(problem)
    if not np.array_equal(tokens[len(prompt):], np.asarray(logits).argmax(axis=-1)):
        raise CheckFailed("with top_k = 1 each new token should be the argmax of its logits: pass top_k on to sample_next.")
    print("✓ with top_k = 1 and rng = None (generate makes its own generator) every new token is the argmax of its logits")
    return tokens, logits


class _counting_rows:
    """While ``generate`` runs, the token rows it hands each function of ``ROWS_PER_TOKEN`` (its
    first argument, everything but the last axis), as ``{name: rows in all}``."""

    def __init__(self, generate):
        self.space, self.rows, self.saved = getattr(generate, "__globals__", {}), {}, {}

    def __enter__(self):
        for name in ROWS_PER_TOKEN:
            if callable(self.space.get(name)):
                self.saved[name] = self.space[name]
                self.space[name] = self._counted(name, self.saved[name])
        return self.rows

    def _counted(self, name, inner):
        def counted(*args, **kwargs):
            given = args[0] if args else kwargs.get("x", kwargs.get("X"))
            self.rows[name] = self.rows.get(name, 0) + token_rows(np.shape(given))
            return inner(*args, **kwargs)
        return counted

    def __exit__(self, *exc):
        self.space.update(self.saved)
        return False


class _recording_draws:
    """While ``generate`` runs, its ``sample_next`` records ``(temperature, top_k, whether rng is the
    Generator given, in the state the previous draw left)`` for each call."""

    def __init__(self, generate, sample_next, given):
        self.space, self.sample_next, self.given = getattr(generate, "__globals__", {}), sample_next, given
        self.draws, self.saved = [], None

    def __enter__(self):
        import inspect

        state = [self.given.bit_generator.state]
        inner = self.sample_next

        def recorded(*args, **kwargs):
            try:
                bound = inspect.signature(inner).bind(*args, **kwargs).arguments
                temperature, top_k, rng = (bound.get(name) for name in ("temperature", "top_k", "rng"))
            except (TypeError, ValueError):
                temperature = top_k = rng = None
            chained = rng is self.given and rng.bit_generator.state == state[0]
            try:
                return inner(*args, **kwargs)
            finally:
                if rng is self.given:
                    state[0] = rng.bit_generator.state
                self.draws.append((temperature, top_k, chained))

        self.saved = self.space.get("sample_next")
        if self.saved is not None:
            self.space["sample_next"] = recorded
        return self.draws

    def __exit__(self, *exc):
        if self.saved is not None:
            self.space["sample_next"] = self.saved
        return False


def _sampler_examples(sample_next):
    """Known answers of ``sample_next`` that hold whatever way it draws: top_k = 1 gives the largest
    logit, a token id is an int, and two Generators made from one seed give the same token."""
    def argmax(z):
        def problem(got):
            wrong = forms.token_problem("sample_next", got)
            if wrong:
                return "it" + wrong.split("sample_next", 1)[1].rstrip(".")
            return None if got == int(np.argmax(z)) else "with top_k = 1 it did not return the token with the largest logit"
        return problem

    def reproducible(z, temperature, seed):
        def problem(got):
            again = _quietly(sample_next, z, temperature, None, np.random.default_rng(seed))
            return None if got == again else ("two Generators made from the same seed gave different tokens: it must "
                                              "draw with the rng it is given, not with np.random")
        return problem

    g = np.random.default_rng(17)
    examples = []
    for _ in range(2):
        z = g.normal(size=12)
        examples.append(((z, 1.0, 1, np.random.default_rng(0)), argmax(z)))
    for seed in range(4):
        z = 0.1 * g.normal(size=40)                                 # nearly flat: a draw is hard to repeat by luck
        examples.append(((z, 1.0, None, np.random.default_rng(seed)), reproducible(z, 1.0, seed)))
    return examples


#: The names of the values each function of this lesson and of lesson 06 returns, where it returns several.
RETURNED = {"multi_head_attention": ("O", "A"), "transformer_block": ("y", "A"),
            "layer_norm_backward": ("dx", "dgamma", "dbeta"), "generate": ("tokens", "logits")}


def generate_earlier_examples(sample_next=None):
    """``{name: (examples, where its own check is)}`` for ``checks.check_earlier``: each function
    of this lesson and of lesson 06 that a ``generate`` may call, on the shapes the checks of
    ``generate`` hand it (widths 6, 8 and 64; one token or a prompt; 2 or 64 heads)."""
    g = np.random.default_rng(23)
    block = example_block(seed=24, d=8, n_heads=2, d_hidden=16)
    x5, causal5 = g.normal(size=(5, 8)), np.tril(np.ones((5, 5), dtype=bool))
    gamma8, beta8, gamma64, beta64 = (1 + 0.3 * g.normal(size=8), g.normal(size=8), 1 + 0.3 * g.normal(size=64),
                                      g.normal(size=64))
    rows = [g.normal(size=shape) for shape in ((8,), (1, 8), (11, 8), (64,), (1, 64))]
    splits = [(g.normal(size=shape), n) for shape, n in (((1, 8), 2), ((11, 8), 2), ((1, 6), 2), ((1, 64), 64))]
    W = [block[w] for w in ("W_Q", "W_K", "W_V", "W_O")]
    found = {
        "positional_encoding": ([((T, d), sinusoids(T, d)) for T, d in ((1, 8), (12, 8), (50, 64))],
                                "the cell after Exercise 1"),
        "layer_norm": ([((x, gamma8, beta8) if x.shape[-1] == 8 else (x, gamma64, beta64),
                         layer_norm_expected(x, *((gamma8, beta8) if x.shape[-1] == 8 else (gamma64, beta64))))
                        for x in rows], "the cell after Exercise 2"),
        "split_heads": ([((X, n), split_heads_expected(X, n)) for X, n in splits], "section 4"),
        "merge_heads": ([((split_heads_expected(X, n),), np.asarray(X, dtype=float)) for X, n in splits], "section 4"),
        "multi_head_attention": ([((x5, *W, 2, causal5), mha_loop(x5, *W, 2, causal5))], "section 4"),
        "transformer_block": ([((x5, block, causal5), block_expected(x5, block, causal5))], "the cell after Exercise 4"),
    }
    if sample_next is not None:
        found["sample_next"] = (_sampler_examples(sample_next), "the cell after Exercise 5")
    return found


def check_generate_pieces(generate, pieces):
    """Before judging ``generate``: each earlier function it calls (``pieces``: ``{name: your
    function}``) gives the known answers on the inputs the checks below hand it."""
    known = generate_earlier_examples(pieces.get("sample_next"))
    for name, fn in pieces.items():
        examples, where = known[name]
        check_earlier(generate, fn, examples, where=where, names=RETURNED.get(name))


def check_cache_memory(generate, params, prompt, steps=(12, 24, 48)):
    """Peak memory of ``generate`` at three lengths: a cache grows like T, rerunning the whole sequence
    builds (heads, T, T) weights at every step (bytes per pair of tokens = the T² coefficient c of the
    parabola a + b·T + c·T² through the three measurements)."""
    from .long_context import peak_memory

    peaks = []
    for n in steps:
        best = None
        for _ in range(2):
            _, peak = peak_memory(_quietly, generate, params, prompt, n, 1.0, 1, np.random.default_rng(0))
            best = peak if best is None else min(best, peak)
        peaks.append(best)
    (x1, x2, x3), (p1, p2, p3) = [n + len(prompt) for n in steps], peaks
    per_pair = ((p3 - p2) / (x3 - x2) - (p2 - p1) / (x2 - x1)) / (x3 - x1)
    shown = ", ".join(f"{p / 1e3:.0f} kB for {n} new tokens" for p, n in zip(peaks, steps))
    if per_pair > 400.0:       # one float64 (64, T, T) array is 512 bytes a pair of tokens; a cache holds none
        raise CheckFailed(f"generate's peak memory grows like the square of the length ({shown}; about "
                          f"{per_pair:.0f} bytes per pair of tokens): it reruns the whole sequence at every step. "
                          "Keep each layer's keys and values in a cache and push only the new token through.")
    print(f"✓ generate's peak memory grows like the length, not its square ({shown})")
    return peaks
