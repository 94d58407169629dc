"""Lesson 08's learner-side helpers: measurement, and the mistakes the visible checks name."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "instructor" / "grading"))

from attention_course.long_context import (best_time, online_softmax_mistakes, peak_memory,  # noqa: E402
                                           tiled_attention_mistakes)
from attention_grading.hidden.specs.lesson08_long_context import _tiled_variant  # noqa: E402


def test_peak_memory_sees_numpy_allocations_and_not_the_inputs():
    x = np.ones((1000, 1000))                                       # 8 MB made before the call
    result, peak = peak_memory(lambda a: a @ a, x)
    assert result.shape == (1000, 1000)
    assert 7.9e6 <= peak < 12e6                                     # the 8 MB product, not the input


def test_best_time_returns_the_result_and_a_positive_time():
    import time

    started = time.perf_counter()
    result, seconds = best_time(sum, [1, 2, 3], repeats=3)
    assert result == 6 and 0 < seconds <= (time.perf_counter() - started) / 3      # the best of three


@pytest.mark.parametrize("causal", [False, True])
def test_named_mistakes_are_what_the_hidden_spec_calls_them(causal):
    g = np.random.default_rng(3)
    T = 13
    K = g.normal(size=(2, T, 4)) * np.linspace(1, 60, T)[:, None]     # rising maxima
    Q, V = 20 * g.normal(size=(2, T, 4)), g.normal(size=(2, T, 3))
    named = dict(online_softmax_mistakes(Q, K, V, 3, causal))
    variants = [dict(rescale_sum=False), dict(rescale_acc=False), dict(rescale_sum=False, rescale_acc=False)]
    for (_, ours), mistake in zip(named.items(), variants):
        np.testing.assert_allclose(ours, _tiled_variant(Q, K, V, 3, causal, **mistake), rtol=1e-9)
    everything = dict(tiled_attention_mistakes(Q, K, V, 3, causal))
    Qm, Km, Vm = g.normal(size=(3, 10, 6)), g.normal(size=(3, 10, 6)), g.normal(size=(3, 10, 5))
    right = _tiled_variant(Qm, Km * np.linspace(1, 5, 10)[:, None], Vm, 3, causal)
    for explanation, wrong in tiled_attention_mistakes(Qm, Km * np.linspace(1, 5, 10)[:, None], Vm, 3, causal):
        assert not np.allclose(wrong, right), explanation            # each one is really wrong here
    np.testing.assert_allclose(everything["the scores are divided by d_k instead of √d_k"],
                               _tiled_variant(Q, K, V, 3, causal, scale="dk"), rtol=1e-9)
    if causal:
        by_block = [w for e, w in everything.items() if "by block" in e][0]
        np.testing.assert_allclose(by_block, _tiled_variant(Q, K, V, 3, True, causal_by="block"), rtol=1e-9)
    else:
        keys = [w for e, w in everything.items() if "partial block of keys" in e][0]
        np.testing.assert_allclose(keys, _tiled_variant(Q, K, V, 3, False, drop_last_keys=True), rtol=1e-9)
