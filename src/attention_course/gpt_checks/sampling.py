"""Sampling the next token: the probabilities a temperature and a top-k give, and the samplers'
mistakes that fit the counts."""
import numpy as np

from .. import forms
from ..checks import CheckFailed, _quietly, call


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
    from ..small_gpt import draw_samples

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
