"""Hidden test of lesson 09's ``generate``: random models, the tokens and logits a generation gives (the reference's,
and its known mistakes'), what it passes on to ``sample_next``, and its memory without a KV cache. The lesson's
``spec.py`` registers it, last."""
import copy

import numpy as np
from attention_course import gpt_checks as mistake

from .. import kernel_probe
from ..judge import compare_arrays, order_problem, returns_problem
from ..spec import Bug, Call, Case, Spec
from .lesson09_common import LENT, _gpt, _rng, block_params


# ---------------------------------------------------------------- generate

def model_params(g, V, d, n_layers, n_heads, d_h, d_hidden):
    return {"wte": g.normal(size=(V, d)),
            "blocks": [block_params(g, d, n_heads, d_h, d_hidden, spread=1.5) for _ in range(n_layers)],
            "ln_f_gamma": 1.0 + 0.3 * g.normal(size=d), "ln_f_beta": 0.3 * g.normal(size=d),
            "W_out": 2.0 * g.normal(size=(d, V)) / np.sqrt(d)}


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
