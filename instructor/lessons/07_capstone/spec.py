"""Hidden tests of lesson 07 (capstone): ``model_forward``, ``model_backward``, ``adam_step``,
and whether the learner's Adam trains the model (``adam_trains_the_model``).

The model is the one the lesson describes (``attention_reference.lesson07_capstone``, this
folder's ``reference.py``). Its known mistakes, from which the bugs below are built, are in
``lesson07_mistakes``. Two tests go
beyond one call per case:

- ``model_backward``: its (loss, grads dict) is compared as a flat tuple (``flatten_backward``),
  and a gradient check of the learner's own loss (``gradient_check_calls``, judged by
  ``judge_gradient_check``) must agree with its gradients;
- ``adam_trains_the_model``: the grader runs the training loop of the learner package's ``fit``
  itself (``training_driver``: same minibatches, same steps), from a starting seed drawn from a
  pool checked to train, with the *reference's* ``model_backward`` (so a backward mistake costs
  points on model_backward's own test only) and the learner's ``adam_step``, called in the kernel
  through the probe, the six parameters of a step in one batch; it evaluates the parameters on
  held-out questions it draws itself, with the *reference* forward pass. Neither the loop, the
  data, the gradients nor the accuracy comes from the kernel: a learner who rebinds
  ``attention_course.capstone.fit`` changes nothing.
"""
import numpy as np

from attention_course.forms import array_problem, describe, returns_problem

from ..judge import compare_arrays
from ..spec import Bug, Call, Case, Learner, Mismatch, Spec, register
from . import lesson07_mistakes as mistakes
from .lesson07_model import (  # noqa: F401  (the outcome's recipe and thresholds, read by the tests too)
    GRAD_NAMES, HELD_OUT_SIZE, MAX_LOSS, MIN_ACCURACY, MIN_ATTENTION, OUTCOME_BATCH, OUTCOME_LR, OUTCOME_STEPS,
    PARAM_NAMES, TRAINING_SEEDS, _capstone, _model_cases, _params, _random_batch, clear_winners)


# ---------------------------------------------------------------- model_forward

def _forward_bug(mistake):
    return lambda R, params, batch, **flags: mistakes.forward(R, mistake, params, batch, **flags)


register(Spec(
    name="model_forward",
    cases=_model_cases,
    outputs=("logits", "A"),
    bugs=(
        Bug("the scores are not divided by √d_k", _forward_bug("no_scale")),
        Bug("the scores are divided by d_k instead of √d_k", _forward_bug("scale_by_d")),
        Bug("the scores are divided by √d_model instead of √d_k (d_k = W_K.shape[1])",
            _forward_bug("scale_by_d_model")),
        Bug("the softmax normalises each column (over the queries) instead of each row",
            _forward_bug("softmax_over_columns")),
        Bug("the weights are softmaxed over every key and the masked ones zeroed afterwards, "
            "so the visible weights no longer sum to 1", _forward_bug("mask_after_softmax")),
        Bug("the causal mask is never applied (every position reads the future)",
            _forward_bug("ignores_mask")),
        Bug("the mask is the upper triangle (np.triu) instead of the lower one", _forward_bug("upper_mask")),
        Bug("the causal mask is applied even when causal=False", _forward_bug("always_causal")),
        Bug("the token vectors use only the name table (E_attr[attrs] is not added)",
            _forward_bug("names_only")),
        Bug("the output is Aᵀ V instead of A V", _forward_bug("transposed_weights")),
        Bug("the hard top-1 picks the largest score among all keys, masked ones included (take the "
            "argmax after the mask)", _forward_bug("top1_ignores_mask")),
    ),
))


# ---------------------------------------------------------------- model_backward

def flatten_backward(result):
    """``model_backward``'s (loss, grads) as a flat tuple (loss, dE_name, ..., dW_out), or Mismatch."""
    problem = returns_problem("model_backward", result, ("loss", "grads"))
    if problem:
        raise Mismatch(problem)
    loss, grads = result
    if not isinstance(grads, dict):
        raise Mismatch(f"grads should be a dict keyed like params, but it is {describe(grads)}.")
    missing = [k for k in PARAM_NAMES if k not in grads]
    if missing:
        raise Mismatch(f"grads has no entry for {', '.join(missing)}.")
    if not isinstance(loss, (float, int, np.ndarray)):
        raise Mismatch(f"the loss should be a number, not {describe(loss)}.")
    return (np.atleast_1d(np.asarray(loss, dtype=np.float64)), *(grads[k] for k in PARAM_NAMES))


def _backward_bug(mistake):
    return lambda R, params, batch, **flags: mistakes.backward(R, mistake, params, batch, **flags)


def _compare_backward(R, case, mine):
    spec = BACKWARD_SPEC
    if not isinstance(mine, tuple) or len(mine) != len(spec.outputs):
        return f"model_backward should return (loss, grads), but the grader received {describe(mine)}."
    loss, grads = _capstone(R).model_backward(*case.args, **case.kwargs)
    expected = (np.atleast_1d(np.asarray(loss, dtype=np.float64)), *(grads[k] for k in PARAM_NAMES))
    problem = compare_arrays("The loss your model_backward returns", mine[0], expected[0], spec)
    if problem and isinstance(mine[0], np.ndarray) and mine[0].shape != (1,):
        return (f"The loss should be one number (the mean over the graded positions), but your "
                f"model_backward returns an array of shape {mine[0].shape}.")
    if problem:
        return (problem + " The forward pass inside model_backward (token vectors, scores, mask, "
                "weights, logits) or the mean cross-entropy over the positions with a target >= 0 "
                "differs from the model of the lesson.")
    # In the order backpropagation reaches them: the first wrong one is nearest the mistake.
    for index in reversed(range(len(PARAM_NAMES))):
        m, e = mine[1 + index], np.asarray(expected[1 + index])
        what = f"Your grads[{PARAM_NAMES[index]!r}]"
        form = array_problem(what, m, e.shape)
        if form:
            return form
        problem = compare_arrays(what, m, e, spec)
        if problem:
            return problem + " Your loss is right, so the mistake is in the backward pass."
    return None


GRADIENT_CHECK_STEP = 1e-5


def gradient_check_calls(g):
    """The learner's own loss at params ± h in every entry (and the analytic gradients), for
    central differences of it: 2 weightings × (1 + 2 × 45 entries) calls, made in one batch."""
    params = _params(g, 4, 3, 3, 2, 2, 3)
    batch = _random_batch(g, 2, 3, 4, 3, 3, graded=1.0)
    calls = []
    for weighting in ("softmax", "raw"):
        calls.append(Call((params, batch), {"weighting": weighting}))
        for name in PARAM_NAMES:
            for index in np.ndindex(*params[name].shape):
                for sign in (1.0, -1.0):
                    shifted = params[name].astype(np.float64)
                    shifted[index] += sign * GRADIENT_CHECK_STEP
                    calls.append(Call(({**params, name: shifted}, batch), {"weighting": weighting}))
    return calls


def judge_gradient_check(R, calls, results):
    """Central differences of the learner's own loss against its own gradients."""
    if any("raised" in r for r in results):
        return ("The gradient check of your model_backward could not run: it raised "
                f"{next(r['raised'] for r in results if 'raised' in r)}")
    try:
        values = [flatten_backward(r["value"]) for r in results]
    except Mismatch as exc:
        return f"The gradient check of your model_backward could not run: {exc}"
    shapes = [a.shape for a in values[0][1:]]
    errors, position = {}, 0
    for weighting in ("softmax", "raw"):
        analytic = values[position]
        position += 1
        for index, name in enumerate(PARAM_NAMES):
            mine = np.asarray(analytic[1 + index], dtype=np.float64)
            numeric = np.zeros(shapes[index])
            for entry in np.ndindex(*shapes[index]):
                plus, minus = values[position][0].reshape(-1)[0], values[position + 1][0].reshape(-1)[0]
                numeric[entry] = (plus - minus) / (2 * GRADIENT_CHECK_STEP)
                position += 2
            if mine.shape != numeric.shape:
                return f"Your grads[{name!r}] has shape {mine.shape}, not the shape {numeric.shape} of params[{name!r}]."
            scale = max(np.linalg.norm(mine), np.linalg.norm(numeric))
            errors[f"{name} ({weighting})"] = 0.0 if scale == 0 else float(np.linalg.norm(mine - numeric) / scale)
    worst = max(errors, key=errors.get)
    if not errors[worst] <= 1e-6:
        return (f"Your gradients disagree with central differences of your own loss: relative error "
                f"{errors[worst]:.2e} for {worst} (it should be below 1e-6).")
    return None


BACKWARD_SPEC = Spec(
    name="model_backward",
    cases=_model_cases,
    outputs=("loss",) + GRAD_NAMES,
    rtol=1e-7,
    atol=1e-10,
    compare=_compare_backward,
    adapt=flatten_backward,
    extra_calls=gradient_check_calls,
    judge_extra=judge_gradient_check,
    substitutes=("model_forward",),   # a backward pass may reuse the forward pass
    bugs=(
        Bug("the gradient of the logits is not divided by the number of graded positions "
            "(the gradient of a sum, not of the mean)", _backward_bug("sum_not_mean")),
        Bug("the backward pass leaves out the 1/√d_k of the scores (dQ and dK are √d_k times too big)",
            _backward_bug("no_scale_backward")),
        Bug("dK is computed as dS @ Q instead of dSᵀ @ Q", _backward_bug("dK_transpose")),
        Bug("dQ is computed as dSᵀ @ K instead of dS @ K", _backward_bug("dQ_transpose")),
        Bug("dV is computed as A @ dO instead of Aᵀ @ dO", _backward_bug("dV_transpose")),
        Bug("the embedding gradients are accumulated with dE[ids] += dX, which keeps only one "
            "contribution per repeated id (use np.add.at)", _backward_bug("embedding_assign")),
        Bug("the softmax backward forgets to subtract each row's Σ a·dA (dS = A ⊙ dA)",
            _backward_bug("softmax_backward_no_centre")),
        Bug("no gradient reaches the embedding tables", _backward_bug("no_embedding_grad")),
    ),
)
register(BACKWARD_SPEC)


# ---------------------------------------------------------------- adam_step

def adam_cases(g):
    shape = (3, 4)
    p, grad = g.normal(size=shape), g.normal(size=shape)
    m, v = 0.1 * g.normal(size=shape), 0.01 * g.random(shape)
    sparse = g.normal(size=(2, 5))
    sparse[g.random((2, 5)) < 0.4] = 0.0

    def step(low, high):
        return int(g.integers(low, high))

    custom = {"lr": float(g.uniform(0.05, 0.2)), "beta1": float(g.uniform(0.7, 0.85)),
              "beta2": float(g.uniform(0.95, 0.995)), "eps": float(10 ** g.uniform(-7, -5))}
    return [
        Case("the first step (t=1) from m = v = 0, shape (3, 4)", (p, grad, np.zeros(shape), np.zeros(shape), 1)),
        Case("an early step with m and v from earlier steps", (p, grad, m, v, step(2, 6))),
        Case("a late step (bias corrections near 1)", (p, grad, m, v, step(500, 5000))),
        Case("another lr, beta1, beta2 and eps, given as keywords, at an early step", (p, grad, m, v, step(2, 6)),
             custom),
        Case("gradients of size 1e-10 (eps is not negligible there), t=1",
             (g.normal(size=5), 1e-10 * g.normal(size=5), np.zeros(5), np.zeros(5), 1)),
        Case("a gradient with exact zeros, at an early step", (g.normal(size=(2, 5)), sparse,
                                                              0.1 * g.normal(size=(2, 5)), 0.01 * g.random((2, 5)),
                                                              step(2, 8))),
        Case("integer p and g (promote them to float64), at an early step",
             (g.integers(-3, 4, size=(2, 3)), g.integers(-2, 3, size=(2, 3)), np.zeros((2, 3)), np.zeros((2, 3)),
              step(2, 5))),
        Case("a 3-D parameter (2, 3, 4) with another lr", (g.normal(size=(2, 3, 4)), g.normal(size=(2, 3, 4)),
                                                           0.1 * g.normal(size=(2, 3, 4)),
                                                           0.01 * g.random((2, 3, 4)), step(2, 10)),
             {"lr": float(g.uniform(0.001, 0.01))}),
    ]


def _adam_bug(mistake):
    return lambda R, *args, **kwargs: mistakes.adam(R, mistake, *args, **kwargs)


register(Spec(
    name="adam_step",
    cases=adam_cases,
    outputs=("p_new", "m_new", "v_new"),
    bugs=(
        Bug("the update is added instead of subtracted (gradient ascent)", _adam_bug("ascent")),
        Bug("m and v are used without the bias corrections 1 − β₁ᵗ and 1 − β₂ᵗ",
            _adam_bug("no_bias_correction")),
        Bug("the update divides by v̂ + eps instead of √v̂ + eps", _adam_bug("no_sqrt")),
        Bug("eps is put inside the square root (√(v̂ + eps))", _adam_bug("eps_inside_sqrt")),
        Bug("v averages the gradient g instead of its square g²", _adam_bug("v_of_g")),
        Bug("β₁ and β₂ are swapped", _adam_bug("betas_swapped")),
    ),
))


# ---------------------------------------------------------------- Adam trains the model

def outcome_cases(g):
    """One training run (``training_driver``) from a starting seed drawn from ``TRAINING_SEEDS``;
    the grader then evaluates the parameters on held-out questions it draws itself (the case's
    ``note``: their seed), which the kernel never sees."""
    from attention_course import capstone as task

    seed = int(g.choice(TRAINING_SEEDS))
    return [Case(f"a fresh model trained for {OUTCOME_STEPS} Adam steps (lr {OUTCOME_LR}, batch "
                 f"{OUTCOME_BATCH}) with your adam_step and a correct model_backward",
                 (task.init_params(seed), task.make_data(4096, seed + 1), OUTCOME_STEPS),
                 {"lr": OUTCOME_LR, "batch_size": OUTCOME_BATCH, "seed": seed},
                 note=int(g.integers(1 << 30)))]


def _usable(value, shape):
    """Can the reference's backward pass take ``value`` as a parameter of this shape?"""
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.shape == shape


def training_driver(R, case):
    """The loop of ``attention_course.capstone.fit`` (the same minibatches for the same seed), run
    by the grader: the reference's ``model_backward`` here, the learner's ``adam_step`` in the
    kernel, one batch of six calls (one per parameter) a step. Returns the trained parameters, or
    what adam_step raised; a step that returns parameters of another form ends the run early
    (the judge says what is wrong with them)."""
    from attention_course import capstone as task

    start, data, steps = case.args
    lr, batch_size = case.kwargs["lr"], case.kwargs["batch_size"]
    rng = np.random.default_rng(case.kwargs["seed"])
    params = {k: np.array(v, dtype=np.float64) for k, v in start.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    n = len(data["names"])
    for t in range(1, steps + 1):
        batch = task.take(data, rng.integers(0, n, size=batch_size))
        with np.errstate(all="ignore"):
            _, grads = _capstone(R).model_backward(params, batch)
        results = yield [Call((params[k], grads[k], m[k], v[k], t), {"lr": lr}, target=Learner("adam_step"))
                         for k in PARAM_NAMES]
        for k, result in zip(PARAM_NAMES, results):
            if "raised" in result:
                return {"raised": result["raised"]}
            step = result.get("value")
            if not isinstance(step, (tuple, list)) or len(step) != 3:
                return {"raised": f"TypeError: adam_step returned {describe(step)}, not (p_new, m_new, v_new)"}
            params[k], m[k], v[k] = step
        if not all(_usable(params[k], start[k].shape) for k in PARAM_NAMES):
            break
    return {"value": params}


def trained_parameters(params):
    """fit's result (a dict of parameters) as the tuple the outcome is judged on, or Mismatch."""
    if not isinstance(params, dict) or any(k not in params for k in PARAM_NAMES):
        raise Mismatch("training did not produce the six parameters: adam_step must return "
                       "(p_new, m_new, v_new).")
    return tuple(params[k] for k in PARAM_NAMES)


def held_out_measures(R, params, seed):
    """(accuracy, mean attention on the answer item, loss) of ``params`` on ``HELD_OUT_SIZE`` fresh
    questions drawn from ``seed``, with the reference's forward pass, the answer slot cut off."""
    from attention_course import capstone as task

    held = task.make_data(HELD_OUT_SIZE, seed)
    seen = task.without_answer(held)                    # at inference the answer is not there yet
    logits, A = _capstone(R).model_forward(params, seen)
    q = task.N_ITEMS                                    # the query's position
    accuracy = float(np.mean(logits[:, q].argmax(axis=-1) == held["targets"][:, q]))
    attention = float(np.mean(A[np.arange(HELD_OUT_SIZE), q, held["answer_pos"]]))
    loss, _ = _capstone(R).cross_entropy(logits, seen["targets"])
    return accuracy, attention, float(loss)


def _judge_outcome(R, case, mine):
    from attention_course import capstone as task

    start = task.init_params(case.kwargs["seed"])
    if not isinstance(mine, tuple) or len(mine) != len(PARAM_NAMES):
        return "The trained model should be the six parameter arrays; the grader received something else."
    for name, value in zip(PARAM_NAMES, mine):
        if not isinstance(value, np.ndarray) or value.shape != start[name].shape:
            return (f"After training, {name} is not an array of shape {start[name].shape}: "
                    "adam_step must return (p_new, m_new, v_new) shaped like p.")
        if not np.isfinite(value).all():
            return (f"After training, {name} contains NaN or inf: the updates blew up. Check the sign "
                    "and the square root in adam_step.")
    accuracy, attention, loss = held_out_measures(R, dict(zip(PARAM_NAMES, mine)), case.note)
    summary = (f"trained this way, the model answers {accuracy:.1%} of {HELD_OUT_SIZE} fresh held-out "
               f"questions (needs ≥ {MIN_ACCURACY:.0%}), its held-out loss is {loss:.3f} (needs ≤ "
               f"{MAX_LOSS}) and the query puts {attention:.3f} of its attention on the item that "
               f"holds the answer (needs ≥ {MIN_ATTENTION})")
    if accuracy < MIN_ACCURACY or attention < MIN_ATTENTION or loss > MAX_LOSS:
        return (f"{summary[0].upper()}{summary[1:]}. The gradients came from a correct model_backward, "
                "so the updates are at fault: check the sign of the Adam step, its bias corrections "
                "and its square root.")
    return None


register(Spec(
    name="adam_trains_the_model",
    cases=outcome_cases,
    outputs=PARAM_NAMES,
    target=Learner("adam_step"),
    driver=training_driver,
    adapt=trained_parameters,
    time_factor=6.0,       # 300 training steps of the learner's own Adam, and the grader's backward passes
    compare=_judge_outcome,
))
