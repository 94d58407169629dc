"""Generation: the tokens a generate loop returns, what it passes on, the rows it computes, its cache's
memory."""
import numpy as np

from .. import forms
from ..checks import CheckFailed, _quietly, call, check_earlier, check_returns, check_shape, cmp
from .block import block_expected, example_block, layer_norm_expected, mha_loop, sinusoids, split_heads_expected


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
    from ..long_context import peak_memory

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
