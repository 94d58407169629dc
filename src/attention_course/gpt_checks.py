"""The visible checks of lesson 09 (a small GPT): worked examples and the wrong answers they recognise.

Each ``..._mistakes`` function returns ``(what was done, what it gives)`` pairs, computed from
their definitions on the example at hand, for ``checks.cmp_known_mistakes``: a message names a
mistake only when the learner's output equals what that mistake gives. Functions that need the
model's other pieces take the learner's own (already checked) functions as arguments.
"""
import numpy as np

from .checks import CheckFailed, _quietly, call, cmp, cmp_known_mistakes


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
        raise CheckFailed("This check uses your numerical_gradient, and it does not give central differences "
                          f"on a known example (f(y) = Σ c·y³). Fix numerical_gradient first ({where}).")
    print("✓ your numerical_gradient gives central differences on a known example; now it checks your backward")


def check_returns(fn, value, names, float64=()):
    """``value`` is the tuple ``names`` that ``fn`` must return (a list would not do: the hidden tests
    ask for a tuple too), and the outputs named in ``float64`` are float64 arrays."""
    what = getattr(fn, "__name__", "this function")
    if not isinstance(value, tuple) or len(value) != len(names):
        got = (f"a {type(value).__name__} of {len(value)} values" if isinstance(value, (list, tuple))
               else type(value).__name__)
        raise CheckFailed(f"{what} should return a tuple ({', '.join(names)}), but it returned {got}: "
                          f"return {', '.join(names)} (Python makes that a tuple).")
    for name, item in zip(names, value):
        if name in float64 and (not isinstance(item, np.ndarray) or item.dtype != np.float64):
            kind = f"dtype {item.dtype}" if isinstance(item, np.ndarray) else type(item).__name__
            raise CheckFailed(f"{what}'s {name} should be a float64 array, but it is {kind}: the course works "
                              "in float64 throughout.")
    print(f"✓ {what} returns ({', '.join(names)})")
    return value


def check_calls(fn, required, *args, **kwargs):
    """Call ``fn`` and count its calls of the earlier functions it is asked to build on
    (``required``: ``{name: at least how many}``), as the hidden tests do."""
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
    times = {0: "not at all", 1: "once", 2: "twice"}
    missing = [name for name, least in required.items() if counts[name] < least]
    if missing:
        wanted = " and ".join(f"{name} ({'at least ' if least > 1 else ''}{times.get(least, f'{least} times')})"
                              for name, least in required.items())
        made = ", ".join(f"{name} {times.get(counts[name], f'{counts[name]} times')}" for name in missing)
        raise CheckFailed(f"{getattr(fn, '__name__', 'this function')} should call your {wanted}; it called "
                          f"{made}. Build it from them: the hidden tests ask for the same calls.")
    print(f"✓ {getattr(fn, '__name__', 'this function')} calls your "
          + " and ".join(f"{name} ({counts[name]}×)" for name in required))
    return result


def confirm(name, fn, args, expected, where, atol=1e-9):
    """Before a check relies on your earlier function ``name``, confirm it on a known answer; if it
    is wrong, say so and where its own check is, rather than blaming the function checked now."""
    try:
        got = _quietly(fn, *args)
    except NotImplementedError:
        raise CheckFailed(f"This check uses your {name}, which is not written yet ({where}).") from None
    except Exception as exc:
        raise CheckFailed(f"This check uses your {name}, and it raised {type(exc).__name__}: {exc}. "
                          f"Fix {name} first ({where}).") from None
    pairs = list(zip(got, expected)) if isinstance(expected, tuple) else [(got, expected)]
    if isinstance(expected, tuple) and not (isinstance(got, tuple) and len(got) == len(expected)):
        pairs = [(None, None)]
    for ours, right in pairs:
        ours = np.asarray(ours) if ours is not None else None
        if ours is None or ours.shape != np.shape(right) or ours.dtype.kind not in "biuf" or \
                not np.allclose(ours, right, rtol=0, atol=atol):
            raise CheckFailed(f"This check uses your {name}, and it is wrong on a known example. Fix {name} "
                              f"first ({where}); then run this cell again.")
    print(f"✓ your {name}, which this check uses, gives the known answer on an example")


def mha_loop(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    """Multi-head attention of one sequence, one head at a time (lesson 06's loop), ``(O, A)``."""
    X = np.asarray(X, dtype=float)
    d_h = np.shape(W_Q)[1] // n_heads
    outs, maps = [], []
    for i in range(n_heads):
        cols = slice(i * d_h, (i + 1) * d_h)
        Q, K, V = (X @ np.asarray(W, dtype=float)[:, cols] for W in (W_Q, W_K, W_V))
        s = Q @ K.T / np.sqrt(d_h)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        outs.append(w @ V)
        maps.append(w)
    return np.concatenate(outs, axis=-1) @ np.asarray(W_O, dtype=float), np.stack(maps)


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


def block_outputs(x, p, mask, layer_norm, multi_head_attention):
    """``(y, A)`` of a pre-norm block and ``[(what was done, y)]`` of its usual wrong versions, built
    from your (already checked) ``layer_norm`` and ``multi_head_attention``."""
    f = {k: (np.asarray(v, dtype=float) if k != "n_heads" else int(v)) for k, v in p.items()}
    x = np.asarray(x, dtype=float)

    def ln(z, which):
        return _quietly(layer_norm, z, f[f"{which}_gamma"], f[f"{which}_beta"])

    def mha(z, m):
        return _quietly(multi_head_attention, z, f["W_Q"], f["W_K"], f["W_V"], f["W_O"], f["n_heads"], m)

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


SAMPLING_MISTAKES = (
    ("the temperature divides the probabilities after the softmax (renormalised, that changes nothing); "
     "divide the logits before it", dict(after_softmax=True)),
    ("the temperature multiplies the logits; divide them by it", dict(times=True)),
    ("the temperature is not used", dict(ignore_temperature=True)),
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


def check_sampler(name, sample_next, logits, temperature, top_k, n=4000, seed=0):
    """Draw ``n`` tokens with ``sample_next`` (twice, from the same seed) and test the counts against
    the distribution it should follow; name a mistake only when the counts fit that mistake."""
    from .small_gpt import draw_samples

    logits = np.asarray(logits, dtype=float)
    first = call(sample_next, logits, temperature, top_k, np.random.default_rng(seed))
    if isinstance(first, (bool, np.bool_)) or not isinstance(first, (int, np.integer)):
        raise CheckFailed(f"{name}: sample_next should return one token id, an int (int(...)), but it returned "
                          f"{type(first).__name__}{' of shape ' + str(first.shape) if isinstance(first, np.ndarray) else ''}.")
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
        return counts
    for explanation, how in SAMPLING_MISTAKES:
        q = sampling_probabilities(logits, temperature, top_k, **how)
        if not np.allclose(q, p, atol=0.02) and _fit(counts, q, n) is None:
            raise CheckFailed(f"{name}: your draws are exactly what you get when {explanation}.")
    raise CheckFailed(f"{name}: token {worst} came up {counts[worst]} times in {n} draws; with probability "
                      f"{p[worst]:.3f} it should come up about {n * p[worst]:.0f} times. Divide the logits by the "
                      "temperature, cut to the top k (ties kept), then softmax and draw with rng.")


# ---------------------------------------------------------------- generation

def full_pass(params, tokens, transformer_block, layer_norm, positional_encoding, *, shift=0, no_pe=False,
              pe_after=False, unmasked_prefix=0):
    """The logits of the last position of a full causal pass over ``tokens``, built from your (checked)
    functions; the flags give the passes that common cached-generation mistakes amount to."""
    tokens = np.asarray(tokens)
    T = len(tokens)
    wte = np.asarray(params["wte"], dtype=float)
    positions = np.arange(T)
    positions[-1] += shift
    pe = _quietly(positional_encoding, int(positions.max()) + 1, wte.shape[1])[np.maximum(positions, 0)]
    x = wte[tokens] + (0.0 if (no_pe or pe_after) else pe)
    mask = np.tril(np.ones((T, T), dtype=bool))
    mask[:unmasked_prefix, :unmasked_prefix] = True
    for block in params["blocks"]:
        x, _ = _quietly(transformer_block, x, block, mask)
    if pe_after:
        x = x + pe
    return _quietly(layer_norm, x, params["ln_f_gamma"], params["ln_f_beta"])[-1] @ np.asarray(params["W_out"], float)


def check_generation(generate, params, prompt, n_new, transformer_block, layer_norm, positional_encoding,
                     sample_next, temperature=1.0, top_k=None, seed=0):
    """Generate, then compare each step's logits with a full causal pass over the tokens before it, and
    the tokens with what ``sample_next`` draws from those logits with the same seed."""
    tokens, logits = check_returns(generate, call(generate, params, prompt, n_new, temperature, top_k,
                                                  np.random.default_rng(seed)), ("tokens", "logits"))
    P, V = len(prompt), np.shape(params["wte"])[0]
    if not isinstance(tokens, np.ndarray) or tokens.shape != (P + n_new,) or tokens.dtype.kind not in "iu":
        raise CheckFailed(f"tokens should be an integer array of shape ({P + n_new},) (the prompt, then the new "
                          f"tokens), got {getattr(tokens, 'shape', type(tokens).__name__)}.")
    if not np.array_equal(tokens[:P], prompt):
        raise CheckFailed("tokens should start with the prompt, unchanged.")
    if not isinstance(logits, np.ndarray) or logits.shape != (n_new, V):
        raise CheckFailed(f"logits should have shape ({n_new}, {V}): one row per new token, got "
                          f"{getattr(logits, 'shape', type(logits).__name__)}.")
    if logits.dtype != np.float64:
        raise CheckFailed(f"logits should be float64, but they are {logits.dtype}: the course works in float64.")
    pieces = (transformer_block, layer_norm, positional_encoding)
    for i in range(n_new):
        prefix = tokens[:P + i]
        right = full_pass(params, prefix, *pieces)
        if np.allclose(logits[i], right, rtol=1e-7, atol=1e-9):
            continue
        where = ("the prompt's own step (the logits of the first new token)" if i == 0 else f"new token {i}")
        variants = [("the prompt goes through the blocks without the causal mask: its cached keys and values "
                     "then carry what later prompt tokens said (attention to the future)",
                     dict(unmasked_prefix=P)),
                    ("the new token gets the position encoding of the position before it (off by one)", dict(shift=-1)),
                    ("the new token gets the position encoding of the position after it (off by one)", dict(shift=1)),
                    ("no position encoding is added to the tokens", dict(no_pe=True)),
                    ("the position encoding is added after the blocks instead of to the embeddings",
                     dict(pe_after=True))]
        for explanation, how in variants:
            if np.allclose(logits[i], full_pass(params, prefix, *pieces, **how), rtol=1e-7, atol=1e-9):
                raise CheckFailed(f"the logits of {where} are exactly what you get when {explanation}.")
        cmp(f"the logits of {where} against a full causal pass over the {P + i} tokens before it", logits[i], right,
            atol=1e-9, hint="Each step must give exactly what running the whole sequence through the model gives: "
            "the new token at its own position, reading every cached key and value and its own.")
    print(f"✓ the logits of all {n_new} new tokens equal a full causal pass over the tokens before each")
    replay = np.random.default_rng(seed)
    drawn = [_quietly(sample_next, logits[i], temperature, top_k, replay) for i in range(n_new)]
    if not np.array_equal(tokens[P:], drawn):
        raise CheckFailed(f"the new tokens are not those sample_next draws from these logits with temperature "
                          f"{temperature} and top_k = {top_k}: draw each one with one call of sample_next(logits, "
                          "temperature, top_k, rng), passing on the temperature, top_k and rng you were given.")
    print(f"✓ the new tokens are those sample_next draws (temperature {temperature}, top_k = {top_k})")
    return tokens, logits


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
