"""Hidden tests of lesson 09: ``positional_encoding``, ``layer_norm``, ``layer_norm_backward``,
``transformer_block``, ``sample_next`` and ``generate``.

The catalogued mistakes are computed from the same definitions as the visible checks
(``attention_course.gpt_checks``), so both name a mistake alike, and only when the evidence
singles it out (``judge.likely_bug``); a wrong form is told in the visible checks' words
(``attention_course.forms``). Everything is drawn from the generator each test is given: sizes,
widths (odd ones included), models, prompts, seeds; a case's label describes it without its
numbers. Two tests go beyond comparing one output:

- ``sample_next`` draws at random, so the grader (``sampling_driver``, outside the learner's
  reach) has it called a few thousand times with one seeded Generator, twice with the same seed
  (as the learner package's ``draw_samples`` does); the judge tests the counts against the reference distribution
  (a catalogued mistake is named when the counts fit its distribution and no other's), and the
  two runs against each other (the draws must come from the ``rng`` given);
- ``generate`` gets a Generator too (it crosses the wire by its state); ``sample_next`` is lent,
  so the tokens it draws are determined by the logits it is handed: they and the logits must be
  those of the reference, which recomputes the whole causal pass. Extra calls at two lengths let
  the grader measure, from outside the kernel, the memory each takes: a generator that reruns
  the whole sequence at every step builds a (T, T) matrix per layer and head, which a KV cache
  never does.
"""
import copy

import numpy as np

from attention_course import gpt_checks as mistake

from .. import kernel_probe
from ..judge import compare_arrays, describe, order_problem, returns_problem, token_problem
from ..spec import Bug, Call, Case, Learner, Shared, Spec, register

LENT = ("multi_head_attention", "split_heads", "merge_heads")


def _gpt(R):
    import importlib

    return importlib.import_module(R.__name__ + ".gpt")


# ---------------------------------------------------------------- positional_encoding

def positional_encoding_cases(g):
    def size(low, high):
        return int(g.integers(low, high))

    return [
        Case("an even width d (4 to 8) and T from 4 to 8", (size(4, 9), 2 * size(2, 5))),
        Case("an odd width d (5 to 11)", (size(3, 8), 2 * size(2, 6) + 1)),
        Case("a long sequence (T from 60 to 129)", (size(60, 130), 2 * size(4, 9))),
        Case("d = 1 (one sine column)", (size(3, 7), 1)),
        Case("T = 1", (1, size(3, 12))),
        Case("a small odd width (d = 3 or 5)", (size(9, 20), 2 * size(1, 3) + 1)),
        Case("T and d given as numpy integers", (np.int64(size(5, 9)), np.int64(2 * size(2, 4)))),
    ]


register(Spec(
    name="positional_encoding",
    cases=positional_encoding_cases,
    outputs=("PE",),
    rtol=1e-9,
    atol=1e-12,
    bugs=(
        Bug("sine and cosine are swapped: even columns take the sine, odd columns the cosine",
            lambda R, T, d: mistake.sinusoids(T, d, swap=True)),
        Bug("the frequency of column j uses j / d instead of 2⌊j/2⌋ / d, so a sine and its cosine do "
            "not share one frequency", lambda R, T, d: mistake.sinusoids(T, d, exponent=lambda j, d: j / d)),
        Bug("the sines fill the first half of the columns and the cosines the second, instead of "
            "alternating column by column", lambda R, T, d: mistake.sinusoids(T, d, halves=True)),
        Bug("positions start at 1 instead of 0", lambda R, T, d: mistake.sinusoids(T, d, start=1)),
        Bug("the frequencies are 10000^(+2⌊j/2⌋/d) instead of 10000^(−2⌊j/2⌋/d)",
            lambda R, T, d: mistake.sinusoids(T, d, sign=1.0)),
    ),
))


# ---------------------------------------------------------------- layer_norm

def _ln_inputs(g, shape, offset=0.0, spread=1.0):
    d = shape[-1]
    return (offset + spread * g.normal(size=shape), 1.0 + 0.5 * g.normal(size=d), g.normal(size=d))


def layer_norm_cases(g):
    d = int(g.integers(3, 9))
    constant = _ln_inputs(g, (4, d))
    constant[0][2] = float(g.normal())                    # a row with no spread at all
    return [
        Case("x of shape (5, d)", _ln_inputs(g, (5, d))),
        Case("one row x of shape (d,)", _ln_inputs(g, (d + 2,))),
        Case("a batch x of shape (2, 3, d)", _ln_inputs(g, (2, 3, d), spread=3.0)),
        Case("x of shape (4, d) with eps = 0.1 (the place of eps matters)",
             _ln_inputs(g, (4, d), spread=0.5), {"eps": 0.1}),
        Case("x of shape (4, d) where row 2 is constant (variance 0)", constant),
        Case("rows of x (3, d) with a common offset of 1e6 and spread 1 (subtract the mean before squaring)",
             _ln_inputs(g, (3, d), offset=1e6)),
        Case("rows of x (3, d) with a tiny spread (1e-3) and eps = 1e-3", _ln_inputs(g, (3, d), spread=1e-3),
             {"eps": 1e-3}),
        Case("integer x of shape (3, 4) with integer gamma and beta",
             (g.integers(-5, 6, size=(3, 4)), g.integers(1, 3, size=4), g.integers(-2, 3, size=4))),
        Case("two batch dimensions, x of shape (2, 2, 3, 6)", _ln_inputs(g, (2, 2, 3, 6))),
    ]


def _ln_bug(**how):
    return lambda R, x, gamma, beta, eps=1e-5: mistake.layer_norm_variant(x, gamma, beta, eps, **how)


register(Spec(
    name="layer_norm",
    cases=layer_norm_cases,
    outputs=("y",),
    rtol=1e-7,
    atol=1e-9,
    bugs=(
        Bug("the mean and variance are taken over the first axis (down the columns) instead of over "
            "each row's last axis", _ln_bug(axis=0)),
        Bug("eps is added outside the square root, √σ² + eps, instead of inside, √(σ² + eps)",
            _ln_bug(eps_place="outside")),
        Bug("eps is left out, so a constant row divides 0 by 0", _ln_bug(eps_place="none")),
        Bug("the variance is the unbiased one (divided by d − 1); layer norm uses the plain mean of "
            "the squared deviations (divided by d)", _ln_bug(ddof=1)),
        Bug("the variance is computed as mean(x²) − mean(x)², which loses every digit when the "
            "entries share a large offset: subtract the mean first", _ln_bug(naive=True)),
        Bug("gamma and beta are swapped (gamma scales, beta shifts)", _ln_bug(swap=True)),
        Bug("the eps passed in is not used (1e-5 every time)",
            lambda R, x, gamma, beta, eps=1e-5: mistake.layer_norm_variant(x, gamma, beta, 1e-5)),
    ),
))


# ---------------------------------------------------------------- layer_norm_backward

def layer_norm_backward_cases(g):
    def inputs(shape, spread=1.0):
        x, gamma, _ = _ln_inputs(g, shape, spread=spread)
        return (g.normal(size=shape), x, gamma)

    d = int(g.integers(3, 8))
    return [
        Case("x and dy of shape (5, d)", inputs((5, d))),
        Case("one row of d entries", inputs((d + 1,))),
        Case("a batch of shape (3, 4, d): dgamma and dbeta sum over both leading axes", inputs((3, 4, d))),
        Case("x of shape (4, d) with eps = 0.5", inputs((4, d), spread=0.7), {"eps": 0.5}),
        Case("two batch dimensions (2, 3, 2, 5)", inputs((2, 3, 2, 5), spread=4.0)),
        Case("integer dy, x and gamma of shape (3, 4)",
             (g.integers(-3, 4, size=(3, 4)), g.integers(-4, 5, size=(3, 4)), g.integers(1, 3, size=4))),
    ]


def _lnb_bug(**how):
    return lambda R, dy, x, gamma, eps=1e-5: mistake.layer_norm_backward_variant(dy, x, gamma, eps, **how)


register(Spec(
    name="layer_norm_backward",
    cases=layer_norm_backward_cases,
    outputs=("dx", "dgamma", "dbeta"),
    rtol=1e-7,
    atol=1e-10,
    bugs=(
        Bug("dx leaves out the term that comes through the variance, x̂ · mean(dx̂ ⊙ x̂)", _lnb_bug(project=False)),
        Bug("dx leaves out the term that comes through the mean, mean(dx̂)", _lnb_bug(centre=False)),
        Bug("dx treats the mean and the variance as constants: it is only γ ⊙ dy / √(σ² + eps)",
            _lnb_bug(centre=False, project=False)),
        Bug("dx forgets to multiply dy by gamma first (dx̂ = γ ⊙ dy)", _lnb_bug(use_gamma=False)),
        Bug("dgamma and dbeta are not summed over the leading axes (one per row is returned)",
            _lnb_bug(reduce=False)),
        Bug("dgamma multiplies dy by x instead of by the normalised x̂", _lnb_bug(gamma_times_x=True)),
        Bug("the eps passed in is not used (1e-5 every time)",
            lambda R, dy, x, gamma, eps=1e-5: mistake.layer_norm_backward_variant(dy, x, gamma, 1e-5)),
    ),
))


# ---------------------------------------------------------------- transformer_block

def block_params(g, d, n_heads, d_h, d_hidden, spread=1.0):
    width = n_heads * d_h
    return {
        "n_heads": int(n_heads),
        "ln1_gamma": 1.0 + 0.3 * g.normal(size=d), "ln1_beta": 0.3 * g.normal(size=d),
        "W_Q": spread * g.normal(size=(d, width)) / np.sqrt(d),
        "W_K": spread * g.normal(size=(d, width)) / np.sqrt(d),
        "W_V": g.normal(size=(d, width)) / np.sqrt(d),
        "W_O": g.normal(size=(width, d)) / np.sqrt(width),
        "ln2_gamma": 1.0 + 0.3 * g.normal(size=d), "ln2_beta": 0.3 * g.normal(size=d),
        "W_1": g.normal(size=(d, d_hidden)) / np.sqrt(d), "b_1": 0.5 * g.normal(size=d_hidden),
        "W_2": g.normal(size=(d_hidden, d)) / np.sqrt(d_hidden), "b_2": 0.3 * g.normal(size=d),
    }


def transformer_block_cases(g):
    def causal(T):
        return np.tril(np.ones((T, T), dtype=bool))

    d = int(g.integers(5, 9))
    per_sentence = g.random((2, 5, 5)) < 0.7
    per_sentence[:, :, 0] = True
    return [
        Case("x of shape (6, d), 2 heads of width 3, d_hidden = 10, a causal mask",
             (3.0 * g.normal(size=(6, d)), block_params(g, d, 2, 3, 10), causal(6))),
        Case("x of shape (5, 8), 4 heads of width 2, d_hidden = 32, no mask",
             (g.normal(size=(5, 8)), block_params(g, 8, 4, 2, 32), None)),
        Case("a batch x of shape (3, 4, 6), 3 heads of width 2, one causal (4, 4) mask for all",
             (g.normal(size=(3, 4, 6)), block_params(g, 6, 3, 2, 12), causal(4))),
        Case("a batch x of shape (2, 5, 7), one head of width 5, a (2, 5, 5) mask per sequence",
             (2.0 * g.normal(size=(2, 5, 7)), block_params(g, 7, 1, 5, 9), per_sentence)),
        Case("two batch dimensions, x of shape (2, 3, 4, d), 2 heads of width 3, one causal (4, 4) mask for all",
             (g.normal(size=(2, 3, 4, d)), block_params(g, d, 2, 3, 8), causal(4))),
        Case("x of shape (4, 6) with entries of size 100 (layer norm keeps the scores tame), 2 heads",
             (100.0 * g.normal(size=(4, 6)) + 50.0, block_params(g, 6, 2, 3, 8), causal(4))),
        Case("x of shape (7, 9), 3 heads of width 3, d_hidden = 5 (narrower than d)",
             (g.normal(size=(7, 9)), block_params(g, 9, 3, 3, 5, spread=2.0), causal(7))),
        Case("integer x of shape (3, 4), 2 heads of width 2",
             (g.integers(-3, 4, size=(3, 4)), block_params(g, 4, 2, 2, 6), causal(3))),
    ]


def _block_variant(R, x, p, mask=None, *, norm="pre", attn_residual="x", mlp_residual=True, relu=True,
                   ln2_params="ln2", mlp_input="h2", use_mask=True, relu_after=False):
    G = _gpt(R)
    f = lambda k: np.asarray(p[k], dtype=np.float64)      # noqa: E731
    x = np.asarray(x, dtype=np.float64)
    n_heads = int(p["n_heads"])
    mask = mask if use_mask else None
    act = (lambda u: np.maximum(u, 0.0)) if relu else (lambda u: u)

    def mlp(h):
        u = h @ f("W_1") + f("b_1")
        if relu_after:
            return act(u @ f("W_2") + f("b_2"))
        return act(u) @ f("W_2") + f("b_2")

    g2, b2 = (f("ln1_gamma"), f("ln1_beta")) if ln2_params == "ln1" else (f("ln2_gamma"), f("ln2_beta"))
    if norm == "post":
        a, A = R.multi_head_attention(x, f("W_Q"), f("W_K"), f("W_V"), f("W_O"), n_heads, mask)
        x1 = G.layer_norm(x + a, f("ln1_gamma"), f("ln1_beta"))
        return G.layer_norm(x1 + mlp(x1), g2, b2), A
    h = G.layer_norm(x, f("ln1_gamma"), f("ln1_beta")) if norm == "pre" else x
    a, A = R.multi_head_attention(h, f("W_Q"), f("W_K"), f("W_V"), f("W_O"), n_heads, mask)
    x1 = {"x": x + a, "h": h + a, "none": a}[attn_residual]
    h2 = G.layer_norm(x1, g2, b2)
    m = mlp(h2 if mlp_input == "h2" else x1)
    y = (h2 + m if mlp_residual == "h2" else x1 + m) if mlp_residual else m
    return y, A


def _block_bug(**how):
    return lambda R, x, p, mask=None: _block_variant(R, x, p, mask, **how)


register(Spec(
    name="transformer_block",
    cases=transformer_block_cases,
    outputs=("y", "A"),
    rtol=1e-7,
    atol=1e-9,
    substitutes=("layer_norm",),
    lent=LENT,
    calls_required={"layer_norm": 2, "multi_head_attention": 1},
    bugs=(
        Bug("the block is post-norm (layer norm after each residual sum, as in the 2017 Transformer) "
            "where pre-norm is asked: normalise the input of each sub-layer, not its sum",
            _block_bug(norm="post")),
        Bug("the residual around attention adds the normalised h instead of the block's input x",
            _block_bug(attn_residual="h")),
        Bug("there is no residual around attention (x1 = attention output alone)",
            _block_bug(attn_residual="none")),
        Bug("there is no residual around the MLP (y = MLP output alone)", _block_bug(mlp_residual=False)),
        Bug("the residual around the MLP adds the normalised h2 instead of x1", _block_bug(mlp_residual="h2")),
        Bug("the MLP has no ReLU between its two layers", _block_bug(relu=False)),
        Bug("the ReLU is applied after the second layer of the MLP instead of between the two",
            _block_bug(relu_after=True)),
        Bug("the second layer norm uses ln1_gamma and ln1_beta", _block_bug(ln2_params="ln1")),
        Bug("the MLP reads x1 instead of the normalised h2 = layer_norm(x1)", _block_bug(mlp_input="x1")),
        Bug("the attention reads x itself, not layer_norm(x)", _block_bug(norm="none")),
        Bug("the mask is not passed to multi_head_attention", _block_bug(use_mask=False)),
    ),
))


# ---------------------------------------------------------------- sample_next

#: Draws per run, and the number of standard deviations a count may stray from its expectation.
DRAWS, SIGMAS = 3000, 6.0


def sample_next_cases(g):
    def logits(V, spread=2.0):
        return spread * g.normal(size=V)

    def near_the_top(V, n, tie=False):
        """Logits whose ``n`` largest lie within 1.5 of each other (the last two tied with ``tie``),
        the rest below, in random places: a top-k cut near the ``n``-th keeps or drops a token
        holding a good share of the draws, so a cut in the wrong place shows far outside the
        counts' spread."""
        steps = np.cumsum(g.uniform(0.1, 1.5 / (n - 1), size=n - 1))
        if tie:
            steps[-1] = steps[-2]
        head = float(g.normal()) - np.concatenate([[0.0], steps])
        tail = head[-1] - g.uniform(0.3, 3.0, size=V - n)
        return np.concatenate([head, tail])[g.permutation(V)]

    V = int(g.integers(6, 10))
    # Two close winners far above the rest, the top one beyond 1.5 × 709.8, where exp of
    # logits / temperature overflows unless the max is subtracted first.
    top = float(g.uniform(2e3, 9e3))
    huge = top - 1.0 - np.abs(4e3 * g.normal(size=V))
    winners = g.choice(V, size=2, replace=False)
    huge[winners] = top, top - 1.0
    seed = lambda: int(g.integers(0, 2**31))           # noqa: E731
    sampler = Learner("sample_next")
    return [
        Case("temperature 1, no top-k", (sampler, logits(V), 1.0, None, seed(), DRAWS)),
        Case("temperature 0.5 (sharper)", (sampler, logits(V), 0.5, None, seed(), DRAWS)),
        Case("temperature 2.5 (flatter)", (sampler, logits(V), 2.5, None, seed(), DRAWS)),
        Case("top_k = 2, temperature 1.5", (sampler, near_the_top(V, 3), 1.5, 2, seed(), DRAWS)),
        Case("logits whose 3rd and 4th largest tie, top_k = 3 (every token tied with the 3rd is kept)",
             (sampler, near_the_top(V, 4, tie=True), 1.0, 3, seed(), DRAWS)),
        Case("top_k larger than the vocabulary (nothing is cut)", (sampler, logits(V), 1.0, V + 3, seed(), DRAWS)),
        Case("logits of size ±1e4, temperature 1.5 (exp of them overflows unless the max is subtracted)",
             (sampler, huge, 1.5, None, seed(), DRAWS)),
    ]


def sampling_driver(R, case):
    """What ``attention_course.small_gpt.draw_samples`` does, decided by the grader: ``n`` calls of
    the learner's ``sample_next(logits, temperature, top_k, rng)`` with one Generator made from the
    case's seed, then ``n`` more with a fresh Generator from the same seed: ``(2, n)`` token ids,
    or what a call raised. The two rows are equal when the draws come from ``rng``; their counts
    estimate the distribution. Each run is one batch whose calls share the logits and the
    Generator (``Shared``), made in turn in the kernel."""
    sampler, logits, temperature, top_k, seed, n = case.args
    runs = []
    for _ in range(2):
        shared_logits, rng = Shared(logits), Shared(np.random.default_rng(seed))
        results = yield [Call((shared_logits, temperature, top_k, rng), target=sampler) for _ in range(int(n))]
        for result in results:
            if "raised" in result:
                return {"raised": result["raised"]}
        runs.append([result.get("value") for result in results])
    try:
        return {"value": np.array(runs, dtype=np.int64)}
    except (TypeError, ValueError, OverflowError) as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:300]}


def _fits(counts, p, n):
    """Do ``counts`` (per token, over ``n`` draws) fit the distribution ``p``? (None) or why not."""
    impossible = np.flatnonzero((p == 0) & (counts > 0))
    if impossible.size:
        return f"token {int(impossible[0])} was drawn {int(counts[impossible[0]])} times, but it has probability 0"
    spread = np.sqrt(n * p * (1 - p))
    gap = np.abs(counts - n * p)
    bad = np.flatnonzero(gap > SIGMAS * spread + 1.0)
    if bad.size:
        t = int(bad[np.argmax(gap[bad] / (spread[bad] + 1.0))])
        return (f"token {t} came up {int(counts[t])} times in {n} draws, {gap[t] / max(spread[t], 1e-12):.0f} "
                f"standard deviations from what the reference probabilities give")
    return None


def _judge_samples(R, case, mine):
    _, logits, temperature, top_k, _, n = case.args
    V = np.shape(logits)[-1]
    if not isinstance(mine, np.ndarray) or mine.shape != (2, n) or mine.dtype.kind not in "iu":
        return (f"The grader could not collect {n} token ids from your sample_next (it got "
                f"{describe(mine)}): return one token id, an int, per call.")
    if mine.min() < 0 or mine.max() >= V:
        return f"Your sample_next returned the token id {int(mine.max() if mine.max() >= V else mine.min())}, outside 0..{V - 1}."
    if not np.array_equal(mine[0], mine[1]):
        return ("Two runs with Generators made from the same seed drew different tokens: your sample_next "
                "must draw its randomness from the rng it is given (rng.choice, rng.random), not from "
                "np.random's global state.", "the draws do not come from the rng argument")
    why = _fits(np.bincount(mine[0], minlength=V), R.next_token_probabilities(logits, temperature, top_k), n)
    return None if why is None else f"Your draws do not follow softmax(logits / temperature) over the top-k: {why}."


def _draws_fit(how):
    """Do the learner's draws on a case fit the distribution of the sampling mistake ``how`` (one
    that differs from the right distribution there)?"""
    def matches(R, case, mine):
        _, logits, temperature, top_k, _, n = case.args
        if not isinstance(mine, np.ndarray) or mine.shape != (2, n) or mine.dtype.kind not in "iu" or \
                mine.min() < 0 or mine.max() >= np.shape(logits)[-1]:
            return False
        q = mistake.sampling_probabilities(logits, temperature, top_k, **how)
        if np.allclose(q, R.next_token_probabilities(logits, temperature, top_k), atol=1e-3):
            return False                      # this case cannot tell the mistake apart
        return _fits(np.bincount(mine[0], minlength=np.shape(logits)[-1]), q, n) is None
    return matches


def sample_return_calls(g):
    """Direct calls: the return value must be one int; top_k = 1 must give the largest logit."""
    V = int(g.integers(5, 12))
    calls = []
    for _ in range(3):
        z = g.normal(size=V)
        calls.append(Call((z, float(g.uniform(0.3, 3.0)), 1, _rng(g)), target=Learner("sample_next")))
    calls.append(Call((g.normal(size=V), 1.0, None, _rng(g)), target=Learner("sample_next")))
    return calls


def judge_sample_returns(R, calls, results):
    for call, result in zip(calls, results):
        if "raised" in result:
            return f"Called directly with top_k = {call.args[2]}, your sample_next raised {result['raised']}"
        value = result.get("value")
        problem = token_problem("sample_next", value)
        if problem:
            return problem
        if call.args[2] == 1 and value != int(np.argmax(call.args[0])):
            return "With top_k = 1 your sample_next did not return the token with the largest logit."
    return None


register(Spec(
    name="sample_next",
    cases=sample_next_cases,
    outputs=("draws",),
    target=Learner("sample_next"),
    driver=sampling_driver,
    compare=_judge_samples,
    extra_calls=sample_return_calls,
    judge_extra=judge_sample_returns,
    time_factor=2.0,
    # A catalogued mistake fits draws that another may fit too (at temperature 1, dividing the
    # probabilities by it changes nothing): the judge names one only when no other fits.
    bugs=tuple(Bug(explanation, matches=_draws_fit(how)) for explanation, how in mistake.SAMPLING_MISTAKES),
))


# ---------------------------------------------------------------- generate

def model_params(g, V, d, n_layers, n_heads, d_h, d_hidden):
    return {"wte": g.normal(size=(V, d)),
            "blocks": [block_params(g, d, n_heads, d_h, d_hidden, spread=1.5) for _ in range(n_layers)],
            "ln_f_gamma": 1.0 + 0.3 * g.normal(size=d), "ln_f_beta": 0.3 * g.normal(size=d),
            "W_out": 2.0 * g.normal(size=(d, V)) / np.sqrt(d)}


def _rng(g):
    return np.random.default_rng(int(g.integers(0, 2**31)))


def generate_cases(g):
    V = int(g.integers(6, 11))
    two = model_params(g, V, 8, 2, 2, 4, 16)
    three = model_params(g, V, 6, 3, 3, 2, 10)
    one = model_params(g, V, 7, 1, 1, 5, 9)

    def prompt(n):
        return g.integers(0, V, size=n)

    return [
        Case("2 layers, 2 heads, d = 8: a prompt of 4 tokens, 6 new tokens, temperature 1",
             (two, prompt(4), 6), {"temperature": 1.0, "top_k": None, "rng": _rng(g)}),
        Case("the same model, a prompt of 1 token, 8 new tokens, top_k = 1 (greedy)",
             (two, prompt(1), 8), {"temperature": 1.0, "top_k": 1, "rng": _rng(g)}),
        Case("3 layers, 3 heads, d = 6: a prompt of 5 tokens, 5 new tokens, temperature 0.7, top_k = 3",
             (three, prompt(5), 5), {"temperature": 0.7, "top_k": 3, "rng": _rng(g)}),
        Case("1 layer, 1 head of width 5 (not d = 7): a prompt of 3 tokens, 7 new tokens, temperature 1.8",
             (one, prompt(3), 7), {"temperature": 1.8, "top_k": None, "rng": _rng(g)}),
        Case("2 layers: a prompt of 6 tokens, 1 new token (the prompt alone fills the cache)",
             (two, prompt(6), 1), {"temperature": 1.0, "top_k": None, "rng": _rng(g)}),
        Case("2 layers: a prompt of 3 tokens, 4 new tokens, top_k = 1 and rng = None (greedy: generate makes "
             "its own generator)", (two, prompt(3), 4), {"temperature": 1.0, "top_k": 1, "rng": None}),
    ]


def _generate_variant(R, params, prompt, n_new, temperature=1.0, top_k=None, rng=None, *, pe_shift=0,
                      pe_after=False, prefill_unmasked=False, no_pe=False, drop_last_cache=False,
                      scale_from_d=False):
    """The reference's generation with one step done the wrong way (for naming mistakes)."""
    G = _gpt(R)
    rng = np.random.default_rng() if rng is None else copy.deepcopy(rng)   # as generate: greedy needs none
    tokens = [int(t) for t in np.asarray(prompt).reshape(-1)]
    wte = np.asarray(params["wte"], dtype=np.float64)
    d = wte.shape[1]
    blocks = params["blocks"]

    def final(x):
        return G.layer_norm(x, params["ln_f_gamma"], params["ln_f_beta"]) @ np.asarray(params["W_out"], float)

    def embed(ids, first, shift):
        positions = np.arange(first, first + len(ids)) + shift
        pe = G.positional_encoding(positions.max() + 1, d)[np.maximum(positions, 0)]
        return wte[ids] + (0.0 if (no_pe or pe_after) else pe), pe

    caches = [{"K": None, "V": None} for _ in blocks]

    def run(ids, first, causal, shift=0):
        x, pe = embed(np.array(ids), first, shift)
        T = len(ids)
        mask = np.tril(np.ones((T, T), dtype=bool)) if causal else None
        for block, cache in zip(blocks, caches):
            p = {k: (np.asarray(v, dtype=np.float64) if k != "n_heads" else int(v)) for k, v in block.items()}
            n = p["n_heads"]
            h = G.layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
            q, k, v = (R.split_heads(h @ p[w], n) for w in ("W_Q", "W_K", "W_V"))
            if cache["K"] is not None:
                keep = slice(None, -1) if drop_last_cache else slice(None)
                k = np.concatenate([cache["K"][..., keep, :], k], axis=-2)
                v = np.concatenate([cache["V"][..., keep, :], v], axis=-2)
            cache["K"], cache["V"] = k, v
            m = None
            if causal:
                m = np.tril(np.ones((T, k.shape[-2]), dtype=bool), k=k.shape[-2] - T)
            if scale_from_d:                  # scores divided by √(d // n) instead of √d_h
                q = q * np.sqrt(q.shape[-1]) / np.sqrt(d // n)
            out, _ = R.scaled_dot_product_attention(q, k, v, m)
            x1 = x + R.merge_heads(out) @ p["W_O"]
            h2 = G.layer_norm(x1, p["ln2_gamma"], p["ln2_beta"])
            x = x1 + np.maximum(h2 @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"]
        if pe_after:
            x = x + pe
        return final(x)[-1]

    last = run(tokens, 0, causal=not prefill_unmasked)
    logits = []
    for i in range(int(n_new)):
        logits.append(last)
        tokens.append(G.sample_next(last, temperature, top_k, rng))
        if i + 1 < n_new:
            last = run([tokens[-1]], len(tokens) - 1, causal=True, shift=pe_shift)   # only new tokens are shifted
    return np.array(tokens), np.array(logits)


GENERATE_MISTAKES = (
    ("the new token's position is off by one (it gets the encoding of the position before it)",
     dict(pe_shift=-1)),
    ("the new token's position is off by one (it gets the encoding of the position after it)", dict(pe_shift=1)),
    ("the positional encoding is added after the blocks instead of to the embeddings before them",
     dict(pe_after=True)),
    ("no positional encoding is added", dict(no_pe=True)),
    ("the prompt is run through the blocks without the causal mask, so the cached keys and values of "
     "earlier prompt tokens have read later ones (attention to future keys)", dict(prefill_unmasked=True)),
    ("each step drops the last cached key and value before appending the new ones", dict(drop_last_cache=True)),
    ("the scores are divided by √(d / n_heads) instead of √d_h, the width of one head (W_Q.shape[1] // n_heads)",
     dict(scale_from_d=True)),
)


def _same_logits(how):
    """Does the generation mistake ``how`` give the learner's logits (float64) on a case where it
    differs from the reference?"""
    def matches(R, case, mine):
        params, prompt, n_new = case.args
        kwargs = dict(case.kwargs)
        rng = kwargs.pop("rng")
        logits = mine[1] if isinstance(mine, tuple) and len(mine) == 2 else None
        if not isinstance(logits, np.ndarray) or logits.dtype != np.float64:
            return False
        _, bug_logits = _generate_variant(R, params, prompt, n_new, rng=rng, **kwargs, **how)
        _, right = R.generate(params, prompt, n_new, rng=copy.deepcopy(rng), **kwargs)
        if bug_logits.shape == right.shape and np.allclose(bug_logits, right, rtol=1e-6, atol=1e-8):
            return False                      # this case cannot tell the mistake apart
        return logits.shape == bug_logits.shape and np.allclose(logits, bug_logits, rtol=1e-6, atol=1e-8)
    return matches


def _judge_generate(R, case, mine):
    params, prompt, n_new = case.args
    kwargs = dict(case.kwargs)
    rng = kwargs.pop("rng")
    V = np.shape(params["wte"])[0]
    P = len(prompt)
    problem = returns_problem("generate", mine, ("tokens", "logits")) or order_problem(
        "generate", mine, ("tokens", "logits"), ((P + int(n_new),), (int(n_new), V)))
    if problem:
        return problem
    tokens, logits = mine
    problem = mistake.tokens_problem(tokens, prompt, n_new)
    if problem:
        return problem
    expected_tokens, expected_logits = R.generate(params, prompt, n_new, rng=copy.deepcopy(rng), **kwargs)
    problem = compare_arrays("Your `logits`", logits, expected_logits, GENERATE_SPEC) \
        if not isinstance(logits, np.ndarray) or logits.shape != expected_logits.shape or \
        logits.dtype != np.float64 else None
    if problem:
        return problem
    # The logits must be those of the full causal pass over the learner's own tokens, step by step.
    full = np.array([R.model_logits(params, tokens[:P + i])[-1] for i in range(n_new)]).reshape(n_new, V)
    problem = compare_arrays("Your `logits`", logits, full, GENERATE_SPEC)
    if problem:
        wrong = ~np.all(np.isclose(logits, full, rtol=GENERATE_SPEC.rtol, atol=GENERATE_SPEC.atol), axis=-1)
        first = int(np.argmax(wrong))
        problem = (f"Your logits for new token {first} differ from those of the full causal pass over the "
                   f"tokens before it (the prompt and the tokens drawn so far)" +
                   (": the prompt's own step is already wrong." if first == 0 else
                    ", although the earlier ones agree.") + f" {problem}")
        return problem
    if not np.array_equal(tokens, expected_tokens):
        step = int(np.argmax(tokens != expected_tokens)) - P
        return (f"Your logits are right at every step, but new token {step} is not the one sample_next(logits, "
                "temperature, top_k, rng) draws from them: draw each new token with one call of sample_next, "
                "passing on the temperature, top_k and rng generate was given.",
                "the temperature, top_k or rng given to generate is not passed on to sample_next (or sample_next "
                "is not called exactly once per new token)")
    return None


def judge_passing_on(R, case, calls):
    """Each token through each block once (the token rows handed to layer_norm and the lent
    functions, by the shapes the grader saw: a generate without a cache reruns them), and each new
    token drawn by one call of sample_next given the case's temperature, top_k and rng (the state
    the previous draw left it in), as the grader saw the stand-in's calls."""
    params, prompt, n_new = case.args
    rows = {}
    for name, given in calls:
        if name in mistake.ROWS_PER_TOKEN:
            value = given.get("x", given.get("X"))
            rows[name] = rows.get(name, 0) + (mistake.token_rows(value["shape"]) if isinstance(value, dict)
                                              and "shape" in value else 1)
    problem = mistake.rows_problem(rows, len(params["blocks"]), len(prompt) + int(n_new))
    if problem:
        return problem
    # rng None: generate makes its own generator, whose first state the grader cannot know; it must
    # then be the one generator every draw moves on.
    state = kernel_probe.generator_state(case.kwargs["rng"]) if case.kwargs["rng"] is not None else None
    draws = []
    for name, given in calls:
        if name != "sample_next":
            continue
        rng = given.get("rng")
        chained = isinstance(rng, dict) and "before" in rng and (state is None or rng["before"] == state)
        if isinstance(rng, dict) and "after" in rng:
            state = rng["after"]
        draws.append((given.get("temperature") == case.kwargs["temperature"], given.get("top_k") == case.kwargs["top_k"],
                      chained))
    return mistake.passing_on_problem(draws, int(case.args[2]))


#: The memory check: generate at a short and a long length (new tokens after a 2-token prompt),
#: drawn per submission, each call's memory measured by the grader from outside the kernel
#: (``sandbox.meter``: what the sandbox took during the call). One block of 64 heads of width 1:
#: rerunning the whole sequence at every step builds (64, T, T) arrays (scores, weights; 512 bytes
#: a pair of tokens each, 8.7 MB at T = 130) where a cache holds (64, T, 1) keys and values. From
#: the short length to the long one the memory must grow in proportion to T; what grows faster, by
#: more than half of one (64, T, T) float64 array at the long length, fails.
#: Both calls run once, in one fresh kernel (kernels/measurement.py), the short length first: the
#: meter is never reset between them, so the long call's figure is the most the sandbox took since
#: the meter started (memory the short call left behind cannot hide the long one's growth), and a
#: short call that takes more than it needs earns no more credit than half of one (64, T, T)
#: float64 array at the long length.
SHORT_STEPS, LONG_STEPS = (14, 22), (100, 128)       # ranges the two lengths are drawn from
MEMORY_PROMPT, MEMORY_HEADS = 2, 64


def generate_memory_calls(g):
    """Greedy generation at a short and a long length drawn from ``g``, each call's memory measured
    by the grader."""
    params = model_params(g, 8, MEMORY_HEADS, 1, MEMORY_HEADS, 1, 8)
    prompt = g.integers(0, 8, size=MEMORY_PROMPT)
    seed = int(g.integers(0, 2**31))
    lengths = [int(g.integers(low, high, endpoint=True)) for low, high in (SHORT_STEPS, LONG_STEPS)]
    return [Call((params, prompt, n), {"temperature": 1.0, "top_k": 1, "rng": np.random.default_rng(seed)},
                 memory=True, kernel="generate memory") for n in sorted(lengths)]


def judge_generate_memory(R, calls, results):
    """From the short length to the long one, the memory a call takes must grow in proportion to
    the length (the cache), not like its square (a (heads, T, T) array rebuilt at every step)."""
    growth = {}
    for call, result in zip(calls, results):
        if "raised" in result:
            return (f"On the memory measurement (greedy, two lengths), your generate raised {result['raised']} "
                    "(the memory calls run in a fresh kernel that has run only the lesson's given cells and "
                    "your answer cells)")
        if result.get("peak") is None:
            return "The grader could not measure the memory your generate took."
        T = MEMORY_PROMPT + int(call.args[2])
        growth[T] = max(result["peak"], 1)
    short, long = sorted(growth)
    ratio, small, large = long / short, growth[short], growth[long]
    one = 8 * MEMORY_HEADS * long * long
    excess = large - min(ratio * small, one / 2)
    if excess > one / 2:
        return (f"From {short} to {long} tokens, {ratio:.1f} times as many, the memory your generate took grew "
                f"from {small / 1e6:.2f} MB to {large / 1e6:.2f} MB: "
                f"{excess / 1e6:.1f} MB more than in proportion to the length, as (heads, T, T) arrays take "
                f"(at T = {long} with {MEMORY_HEADS} heads one takes {one / 1e6:.1f} MB): its peak memory grows "
                "like the square of the length, as when the whole sequence is rerun at every step. Keep each "
                "layer's keys and values in a cache and run only the new token.")
    return None


GENERATE_SPEC = Spec(
    name="generate",
    cases=generate_cases,
    outputs=("tokens", "logits"),
    rtol=1e-7,
    atol=1e-9,
    compare=_judge_generate,
    substitutes=("positional_encoding", "layer_norm", "transformer_block", "sample_next"),
    lent=LENT,
    bugs=tuple(Bug(explanation, matches=_same_logits(how)) for explanation, how in GENERATE_MISTAKES),
    judge_stand_ins=judge_passing_on,
    extra_calls=generate_memory_calls,
    judge_extra=judge_generate_memory,
    time_factor=3.0,
)
register(GENERATE_SPEC)
