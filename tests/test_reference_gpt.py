"""The hidden reference of lesson 09 (a small GPT) and the text it trains on.

The reference is checked against definitions written out here (the sinusoid formula, central
differences of layer norm, the full causal pass for the KV cache, the sampling distribution
measured by drawing); every mistake the judge can name is checked to differ from the reference
on the hidden cases (or the judge could name a mistake for a right answer).
"""
import copy

import numpy as np
import pytest

import attention_reference as R
from attention_course import gpt_checks
from attention_course.checks import _central_differences as central_differences
from attention_course import small_gpt as gpt
from attention_grading.hidden.specs import lesson09_small_gpt as spec09
from conftest import STRICT_WARNINGS

pytestmark = STRICT_WARNINGS


def test_the_text_ships_with_the_package_and_is_split_at_the_end():
    """The Shakespeare text is in the package (ASCII, under 1 MB, the seven plays in order), and the
    vocabulary round-trips it."""
    text = gpt.load_text()
    assert 900_000 < len(text) < 1_000_000 and text.isascii()
    starts = [text.index(title) for title in ("HAMLET, PRINCE OF DENMARK", "MACBETH", "ROMEO AND JULIET",
                                              "KING LEAR", "OTHELLO", "JULIUS CAESAR", "THE TEMPEST")]
    assert starts == sorted(starts) and starts[0] == 0
    vocab = gpt.Vocabulary(text)
    ids = vocab.encode(text[:5000])
    assert vocab.decode(ids) == text[:5000] and ids.dtype == np.int64
    train, val = gpt.split(vocab.encode(text))
    assert len(train) + len(val) == len(text) and abs(len(val) / len(text) - 0.1) < 1e-3


def test_positional_encoding_follows_the_formula_for_even_and_odd_widths():
    for T, d in [(7, 6), (5, 7), (3, 1), (1, 4)]:
        PE = R.positional_encoding(T, d)
        for t in range(T):
            for j in range(d):
                angle = t / 10000 ** (2 * (j // 2) / d)
                assert PE[t, j] == pytest.approx(np.sin(angle) if j % 2 == 0 else np.cos(angle), abs=1e-15)


def test_positional_dot_products_depend_only_on_the_distance():
    PE = R.positional_encoding(40, 16)
    S = PE @ PE.T
    for k in range(1, 6):
        assert np.ptp(np.diagonal(S, k)) < 1e-12


def test_layer_norm_normalises_rows_and_its_backward_matches_central_differences():
    g = np.random.default_rng(0)
    x, dy = g.normal(size=(2, 3, 5)) * 3 + 1, g.normal(size=(2, 3, 5))
    gamma, beta = 1 + g.normal(size=5), g.normal(size=5)
    plain = R.layer_norm(x, np.ones(5), np.zeros(5))
    np.testing.assert_allclose(plain.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose((plain ** 2).mean(axis=-1), 1, atol=1e-4)     # eps shrinks it a little
    dx, dgamma, dbeta = R.layer_norm_backward(dy, x, gamma)
    loss = lambda **kw: float(np.sum(dy * R.layer_norm(**{"x": x, "gamma": gamma, "beta": beta, **kw})))  # noqa: E731
    np.testing.assert_allclose(dx, central_differences(lambda v: loss(x=v), x, 1e-5), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dgamma, central_differences(lambda v: loss(gamma=v), gamma, 1e-5), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(dbeta, central_differences(lambda v: loss(beta=v), beta, 1e-5), rtol=1e-6, atol=1e-9)


def test_transformer_block_is_pre_norm_with_two_residuals():
    g = np.random.default_rng(1)
    p = spec09.block_params(g, 6, 2, 3, 10)
    x = g.normal(size=(5, 6))
    mask = np.tril(np.ones((5, 5), dtype=bool))
    y, A = R.transformer_block(x, p, mask)
    h = R.layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
    a, A2 = R.multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], 2, mask)
    x1 = x + a
    hidden = np.maximum(R.layer_norm(x1, p["ln2_gamma"], p["ln2_beta"]) @ p["W_1"] + p["b_1"], 0)
    np.testing.assert_allclose(y, x1 + hidden @ p["W_2"] + p["b_2"], rtol=1e-12)
    np.testing.assert_array_equal(A, A2)


def test_generate_with_the_cache_equals_the_full_causal_pass_at_every_step():
    g = np.random.default_rng(2)
    params = spec09.model_params(g, 9, 8, 3, 2, 4, 12)
    prompt = g.integers(0, 9, size=4)
    tokens, logits = R.generate(params, prompt, 7, temperature=1.3, rng=np.random.default_rng(5))
    assert tokens.shape == (11,) and logits.shape == (7, 9)
    np.testing.assert_array_equal(tokens[:4], prompt)
    for i in range(7):
        np.testing.assert_allclose(logits[i], R.model_logits(params, tokens[:4 + i])[-1], rtol=1e-10, atol=1e-12)
    again, _ = R.generate(params, prompt, 7, temperature=1.3, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(tokens, again)


def test_sampling_follows_the_distribution_and_keeps_ties_in_top_k():
    z = np.array([2.0, 1.0, 0.5, 0.5, -1.0])
    p = R.next_token_probabilities(z, 0.8, 3)
    assert (p > 0).sum() == 4 and p[2] == p[3]                          # the tie at the 3rd place is kept
    np.testing.assert_allclose(p[:4], np.exp(z[:4] / 0.8) / np.exp(z[:4] / 0.8).sum())
    draws = gpt.draw_samples(R.sample_next, z, 0.8, 3, 7, 6000)
    np.testing.assert_array_equal(draws[0], draws[1])
    counts = np.bincount(draws[0], minlength=5)
    assert np.all(np.abs(counts - 6000 * p) <= 5 * np.sqrt(6000 * p * (1 - p)) + 1)
    assert R.sample_next(1e4 * z, 1.5, None, np.random.default_rng(0)) == 0
    np.testing.assert_allclose(R.next_token_probabilities(z, 1.0, 1), [1, 0, 0, 0, 0])
    np.testing.assert_allclose(gpt_checks.sampling_probabilities(z, 0.8, 3), p, rtol=1e-12)


@pytest.mark.parametrize("name", ["positional_encoding", "layer_norm", "layer_norm_backward", "transformer_block"])
def test_each_named_mistake_differs_from_the_reference_on_some_case(name):
    """A catalogued bug that equalled the reference on every case could be named for a right answer."""
    from attention_grading.hidden.registry import get

    spec = get(name)
    cases = spec.cases(np.random.default_rng(3))
    for bug in spec.bugs:
        differs = False
        for case in cases:
            right = getattr(R, name)(*case.args, **case.kwargs)
            try:
                wrong = bug.output(R, *case.args, **case.kwargs)
            except Exception:
                differs = True
                break
            right, wrong = (right, wrong) if isinstance(right, tuple) else ((right,), (wrong,))
            with np.errstate(all="ignore"):
                if any(np.shape(a) != np.shape(b) or not np.allclose(a, b, rtol=1e-7, atol=1e-9, equal_nan=True)
                       for a, b in zip(right, wrong)):
                    differs = True
                    break
        assert differs, f"{name}: the bug {bug.explanation!r} equals the reference on every case"


def test_each_sampling_and_generation_mistake_differs_from_the_reference():
    from attention_grading.hidden.registry import get

    for case in get("sample_next").cases(np.random.default_rng(4)):
        _, logits, temperature, top_k, _, _ = case.args
        right = R.next_token_probabilities(logits, temperature, top_k)
        assert np.isclose(right.sum(), 1.0)
    # every mistake changes the distribution of at least one case
    cases = get("sample_next").cases(np.random.default_rng(4))
    for explanation, how in gpt_checks.SAMPLING_MISTAKES:
        assert any(not np.allclose(gpt_checks.sampling_probabilities(*c.args[1:4], **how),
                                   R.next_token_probabilities(*c.args[1:4]), atol=1e-3) for c in cases), explanation
    for explanation, how in spec09.GENERATE_MISTAKES:
        differs = False
        for case in get("generate").cases(np.random.default_rng(5)):
            kwargs = dict(case.kwargs)
            rng = kwargs.pop("rng")
            _, right = R.generate(*case.args, rng=copy.deepcopy(rng), **kwargs)
            _, wrong = spec09._generate_variant(R, *case.args, rng=rng, **kwargs, **how)
            differs = differs or wrong.shape != right.shape or not np.allclose(wrong, right)
        assert differs, explanation


def test_every_draw_of_cases_shows_each_sampling_mistake_far_outside_the_counts_spread():
    """On each of 500 draws of hidden cases, every catalogued sampling mistake has a case and a
    token whose expected count sits beyond the band the judge accepts by 6 of its own standard
    deviations (or is drawn although the reference gives it probability 0): the mistake loses
    its points on every submission, not on most. The case about overflow overflows every time."""
    from attention_grading.hidden.registry import get

    weak = []
    for seed in range(500):
        cases = get("sample_next").cases(np.random.default_rng(seed))
        [huge] = [c for c in cases if "overflows" in c.label]
        _, logits, temperature, *_ = huge.args
        if not np.max(logits) / temperature > np.log(np.finfo(float).max):
            weak.append((seed, "exp(logits / temperature) does not overflow"))
        for explanation, how in gpt_checks.SAMPLING_MISTAKES:
            def shown(case):
                _, logits, temperature, top_k, _, n = case.args
                p = R.next_token_probabilities(logits, temperature, top_k)
                q = gpt_checks.sampling_probabilities(logits, temperature, top_k, **how)
                band = spec09.SIGMAS * np.sqrt(n * p * (1 - p)) + 1.0
                beyond = np.abs(n * q - n * p) - band - 6.0 * np.sqrt(n * q * (1 - q))
                return bool(np.any(beyond > 0) or np.any((p == 0) & (n * q > 20)))
            if not any(shown(case) for case in cases):
                weak.append((seed, how))
    assert not weak, weak[:5]


def test_the_mistakes_generation_without_a_mistake_is_the_reference():
    from attention_grading.hidden.registry import get

    for case in get("generate").cases(np.random.default_rng(6)):
        kwargs = dict(case.kwargs)
        rng = kwargs.pop("rng")
        tokens, logits = R.generate(*case.args, rng=copy.deepcopy(rng), **kwargs)
        same_tokens, same_logits = spec09._generate_variant(R, *case.args, rng=rng, **kwargs)
        np.testing.assert_array_equal(tokens, same_tokens)
        np.testing.assert_allclose(logits, same_logits, rtol=1e-12, atol=1e-12)
