"""The hidden reference of lesson 07 (capstone) and the task it trains on.

The reference model's gradients are checked against central differences written here, for every
switch; its Adam step against the formula written out by hand; the grader's training recipe
against the outcome thresholds of the hidden test; the mistakes the judge names against the
correct functions (each must differ, or the judge could name a mistake for a right answer).
"""
import numpy as np
import pytest

import attention_reference as R
from attention_course import capstone as task
from attention_grading.hidden.specs import lesson07_capstone as outcome
from attention_grading.hidden.specs import lesson07_mistakes as mistakes
from attention_reference import lesson07_capstone as C
from conftest import STRICT_WARNINGS

pytestmark = STRICT_WARNINGS

FLAGS = [{}, {"causal": False}, {"scale": False}, {"weighting": "raw"},
         {"weighting": "raw", "causal": False}, {"weighting": "top1"}]


def small_model(seed=0):
    params = task.init_params(seed, d_model=4, d_k=3, d_v=5)
    return params, task.make_data(3, seed + 10, n_items=3)


def central_differences(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "default")
def test_model_backward_matches_central_differences(flags):
    params, batch = small_model()
    loss, grads = C.model_backward(params, batch, **flags)
    assert set(grads) == set(C.PARAM_NAMES)
    for name in C.PARAM_NAMES:
        numeric = central_differences(lambda W: C.model_backward({**params, name: W}, batch, **flags)[0],
                                      params[name])
        scale = max(np.linalg.norm(numeric), np.linalg.norm(grads[name]))
        error = 0.0 if scale == 0 else np.linalg.norm(numeric - grads[name]) / scale
        assert error < 1e-7, (name, flags, error)


def test_forward_and_backward_agree_and_mask_hides_the_answer():
    params, batch = small_model(1)
    logits, A = C.model_forward(params, batch)
    T = batch["names"].shape[1]
    assert logits.shape == (3, T, task.N_CLASSES) and A.shape == (3, T, T)
    assert np.all(A[:, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0)
    # The query's logits do not depend on the answer slot, which the mask hides.
    short, _ = C.model_forward(params, task.without_answer(batch))
    np.testing.assert_array_equal(short[:, -1], logits[:, -2])
    # The loss of model_backward is the cross-entropy of model_forward's logits.
    loss, _ = C.model_backward(params, batch)
    q = T - 2
    log_p = logits[:, q] - np.log(np.exp(logits[:, q]).sum(axis=-1, keepdims=True))
    assert np.isclose(loss, -np.mean(log_p[np.arange(3), batch["targets"][:, q]]), rtol=1e-12)


def test_seed_004_example_through_the_model():
    from attention_course import examples

    X, W_Q, W_K, W_V, _ = examples.the_cat_sat_it()
    params = {"E_name": X, "E_attr": np.zeros((1, 3)), "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_out": np.eye(2)}
    batch = {"names": np.array([[0, 1, 2, 3]]), "attrs": np.zeros((1, 4), dtype=int)}
    logits, A = C.model_forward(params, batch)
    np.testing.assert_array_equal(np.round(A[0], 3), np.array(examples.IT_WEIGHTS_QUOTED))
    np.testing.assert_array_equal(np.round(logits[0], 3), np.array(examples.IT_OUTPUTS_QUOTED))
    _, raw = C.model_forward(params, batch, scale=False, weighting="raw")
    np.testing.assert_array_equal(np.round(raw[0, 3], 2), np.array(examples.IT_SCORES_QUOTED))


def test_adam_step_follows_the_formula_and_leaves_inputs_alone():
    rng = np.random.default_rng(3)
    p, g, m, v = rng.normal(size=(4, 2, 3))
    v = np.abs(v)
    before = [a.copy() for a in (p, g, m, v)]
    p_new, m_new, v_new = C.adam_step(p, g, m, v, 5, lr=0.05, beta1=0.8, beta2=0.99, eps=1e-6)
    m_ref = 0.8 * m + 0.2 * g
    v_ref = 0.99 * v + 0.01 * g * g
    p_ref = p - 0.05 * (m_ref / (1 - 0.8 ** 5)) / (np.sqrt(v_ref / (1 - 0.99 ** 5)) + 1e-6)
    np.testing.assert_allclose(p_new, p_ref, rtol=1e-14)
    np.testing.assert_allclose(m_new, m_ref, rtol=1e-14)
    np.testing.assert_allclose(v_new, v_ref, rtol=1e-14)
    for a, b in zip(before, (p, g, m, v)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", [seed if k == 0 else pytest.param(seed, marks=pytest.mark.full)
                                  for k, seed in enumerate(outcome.TRAINING_SEEDS)])
def test_every_training_seed_trains_the_reference_past_the_thresholds_with_a_margin(seed):
    """Each seed the Adam outcome may draw trains the reference well past the thresholds, on several
    held-out sets: a correct adam_step never fails on an unlucky draw."""
    params = dict(zip(C.PARAM_NAMES, C.trained_model(seed, outcome.OUTCOME_STEPS)))
    for held_out in (1, 2, 3):
        accuracy, attention, loss = outcome.held_out_measures(R, params, 1000 * seed + held_out)
        assert accuracy >= 0.99 and attention >= 0.9 and loss <= outcome.MAX_LOSS / 2, (seed, accuracy, attention, loss)


def test_every_top1_case_has_one_clear_winner_per_row():
    """A top-1 row whose two largest visible scores (nearly) tie would let rounding pick the key, so
    a right answer computed another way (dividing by √d_k, einsum, loops) could fail: over 500
    draws, every top-1 case of model_forward and model_backward has a clear winner in every row,
    and the check itself rejects a batch with a repeated token."""
    from attention_grading.hidden.registry import get

    for seed in range(500):
        for case in get("model_forward").cases(np.random.default_rng(seed)):
            if case.kwargs.get("weighting") == "top1":
                assert outcome.clear_winners(*case.args, causal=case.kwargs.get("causal", True)), (seed, case.label)
    params, batch = small_model()
    repeated = {k: v.copy() for k, v in batch.items()}
    repeated["names"][:, 1], repeated["attrs"][:, 1] = repeated["names"][:, 0], repeated["attrs"][:, 0]
    assert not outcome.clear_winners(params, repeated, causal=False)


def test_task_data_is_well_formed():
    data = task.make_data(500, 4)
    n, T = data["names"].shape
    assert T == task.N_ITEMS + 2
    items = data["names"][:, : task.N_ITEMS]
    assert all(len(set(row)) == task.N_ITEMS for row in items)           # distinct animals
    rows = np.arange(n)
    assert np.all(data["names"][:, task.N_ITEMS] == items[rows, data["answer_pos"]])
    assert np.all(data["attrs"][:, task.N_ITEMS] == task.QUERY)
    assert np.all(data["targets"][:, task.N_ITEMS] == data["attrs"][rows, data["answer_pos"]])
    assert np.all(data["targets"][:, -1] == -1) and np.all(data["attrs"][:, -1] == data["targets"][:, -2])
    np.testing.assert_array_equal(task.make_data(5, 9)["names"], task.make_data(5, 9)["names"])


@pytest.mark.parametrize("mistake", mistakes.FORWARD)
def test_each_forward_mistake_differs_from_the_model(mistake):
    """Each of lesson 07's known forward mistakes changes the reference's result on some case."""
    params, batch = small_model(2)
    flags = {"causal": False} if mistake == "always_causal" else \
        {"weighting": "top1"} if mistake == "top1_ignores_mask" else {}
    right = C.model_forward(params, batch, **flags)
    wrong = mistakes.forward(R, mistake, params, batch, **flags)
    assert not all(np.allclose(a, b) for a, b in zip(right, wrong))


@pytest.mark.parametrize("mistake", mistakes.BACKWARD)
def test_each_backward_mistake_differs_from_the_model(mistake):
    params, batch = small_model(3)
    _, right = C.model_backward(params, batch)
    _, wrong = mistakes.backward(R, mistake, params, batch)
    assert any(not np.allclose(right[k], wrong[k]) for k in C.PARAM_NAMES)


@pytest.mark.parametrize("mistake", mistakes.ADAM)
def test_each_adam_mistake_differs_from_adam(mistake):
    rng = np.random.default_rng(5)
    p, g, m = rng.normal(size=(3, 4))
    v = rng.random(4)
    right = C.adam_step(p, g, m, v, 2)
    wrong = mistakes.adam(R, mistake, p, g, m, v, 2)
    assert not all(np.allclose(a, b, rtol=1e-12, atol=0) for a, b in zip(right, wrong))


def test_without_a_mistake_the_model_is_the_reference():
    """The mistakes' model with nothing wrong in it (a backward mistake leaves the forward pass
    right) is exactly the reference's: the mistakes differ from it in nothing else."""
    params, batch = small_model(4)
    for flags in ({}, {"causal": False}, {"weighting": "raw"}, {"weighting": "top1"}, {"scale": False}):
        np.testing.assert_array_equal(mistakes._run_forward(R, None, params, batch, flags.get("causal", True),
                                                            flags.get("scale", True),
                                                            flags.get("weighting", "softmax"))[0],
                                      C.model_forward(params, batch, **flags)[0])
