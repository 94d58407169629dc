"""Hidden test of lesson 09's ``sample_next``: the grader draws the samples (``sampling_driver``) and judges whether
they fit the reference's probabilities, and what a call returns. The lesson's ``spec.py`` registers it, in the
lesson's order."""
import numpy as np
from attention_course import gpt_checks as mistake

from ..judge import describe, token_problem
from ..spec import Bug, Call, Case, Learner, Shared, Spec
from .lesson09_common import _rng


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


SAMPLE_NEXT_SPEC = Spec(
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
)
