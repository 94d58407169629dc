"""Trusted loops run in the grader (``Spec.driver``): the training run of ``adam_trains_the_model``
and the draws of ``sample_next`` call only the learner's function in the kernel, so a learner who
rebinds the learner package's ``fit`` or ``draw_samples`` decides nothing; the drivers reproduce
those library loops exactly. In-process (``hidden_tests.run_locally``), with the reference's and
hand-written learner functions.
"""
import numpy as np
import pytest

import attention_reference as R
from attention_course import capstone as task
from attention_course import small_gpt
from attention_grading.hidden import spec as spec_module
from attention_grading.hidden import registry
from attention_grading.hidden.cases import case_generator
from attention_grading.hidden.calls import plan_calls
from attention_grading.hidden.in_process import run_locally
from attention_grading.hidden.specs import lesson07_capstone as capstone_spec
from attention_grading.hidden.specs import lesson09_small_gpt as gpt_spec
from attention_reference import lesson07_capstone as C
from attention_reference import lesson09_small_gpt as G


def ascent(p, g, m, v, t, **kwargs):
    """adam_step with the update added (gradient ascent)."""
    p_new, m_new, v_new = C.adam_step(p, g, m, v, t, **kwargs)
    return 2 * np.asarray(p, dtype=float) - p_new, m_new, v_new


def ignores_temperature(logits, temperature, top_k, rng):
    return G.sample_next(logits, 1.0, top_k, rng)


def _verdict(name, namespace):
    spec = registry.get(name)
    return run_locally(spec, R, namespace, case_generator(b"trusted-drivers", "submission", name))


def _drive(driver, case, namespace):
    """Run a driver to its end, making its calls in ``namespace``."""
    loop, results = driver(R, case), None
    while True:
        try:
            calls = next(loop) if results is None else loop.send(results)
        except StopIteration as done:
            return done.value
        results = []
        for call in calls:
            args = [a.value if isinstance(a, spec_module.Shared) else a for a in call.args]
            results.append({"value": namespace[call.target.name](*args, **call.kwargs)})


def test_no_case_names_a_library_function_of_the_kernel():
    """Every hidden test targets a function of the learner's (no course library function, which
    the learner could rebind in the kernel, is called there)."""
    assert all(isinstance(spec.target, spec_module.Learner) for spec in registry.load().values())
    assert not hasattr(spec_module, "Library")


@pytest.mark.parametrize("name, namespace, library, rebound", [
    ("adam_trains_the_model", {"adam_step": ascent}, task, "fit"),
    ("sample_next", {"sample_next": ignores_temperature}, small_gpt, "draw_samples"),
], ids=["fit", "draw_samples"])
def test_a_rebound_library_loop_decides_nothing(monkeypatch, name, namespace, library, rebound):
    """A learner who rebinds the library's loop to one that does the job right whatever it is
    given still fails: the grader's driver calls only the learner's wrong function."""
    original = getattr(library, rebound)
    if rebound == "fit":
        monkeypatch.setattr(library, rebound, lambda backward, adam, *a, **k: original(backward, C.adam_step, *a, **k))
    else:
        monkeypatch.setattr(library, rebound, lambda sample, *a, **k: original(G.sample_next, *a, **k))
    verdict = _verdict(name, namespace)
    assert not verdict.passed, verdict.message
    assert ("held-out" in verdict.message) if rebound == "fit" else ("do not follow" in verdict.message), verdict.message


def test_the_training_driver_is_fits_loop():
    """With the reference's adam_step, the grader's driver ends with exactly fit's parameters."""
    seed = capstone_spec.TRAINING_SEEDS[0]
    case = spec_module.Case("a short run", (task.init_params(seed), task.make_data(512, seed + 1), 12),
                            {"lr": 0.01, "batch_size": 16, "seed": seed})
    driven = _drive(capstone_spec.training_driver, case, {"adam_step": C.adam_step})["value"]
    fitted = task.fit(C.model_backward, C.adam_step, *case.args, **case.kwargs)
    assert all(np.array_equal(driven[k], fitted[k]) for k in capstone_spec.PARAM_NAMES)


def test_the_sampling_driver_is_draw_samples():
    """With the reference's sample_next, the driver's draws are draw_samples' (one Generator per run)."""
    logits = np.array([0.3, -1.0, 2.0, 0.5, 0.0])
    case = spec_module.Case("draws", (spec_module.Learner("sample_next"), logits, 0.8, 3, 7, 400))
    driven = _drive(gpt_spec.sampling_driver, case, {"sample_next": G.sample_next})["value"]
    assert np.array_equal(driven, small_gpt.draw_samples(G.sample_next, logits, 0.8, 3, 7, 400))


def test_a_driven_case_is_one_batch_the_conversation_fills_in():
    """plan_calls leaves a driven case's calls to its driver: one placeholder batch per case."""
    spec = registry.get("adam_trains_the_model")
    g = case_generator(b"k", "s", spec.name)
    cases = spec.cases(g)
    batches, _, _, _ = plan_calls(spec, cases, g)
    assert [type(b).__name__ for b in batches] == ["Driven"] * len(cases)
