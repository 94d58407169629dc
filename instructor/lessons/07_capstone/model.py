"""Lesson 07's model as its hidden tests draw it: the parameters' names, the recipe and thresholds the outcome
test trains with, random models and batches, and the cases of ``model_forward``."""
import numpy as np

from ..spec import Case


PARAM_NAMES = ("E_name", "E_attr", "W_Q", "W_K", "W_V", "W_out")
GRAD_NAMES = tuple("d" + k for k in PARAM_NAMES)

# The outcome: the recipe the hidden test trains with, and the thresholds it must reach. Each
# submission starts from one of TRAINING_SEEDS; tests/test_reference_capstone.py checks that every
# one of them trains the reference past the thresholds with a margin, so a correct adam_step never
# fails on an unlucky draw.
TRAINING_SEEDS = (11, 12, 13, 14, 15, 16, 17, 18)
OUTCOME_STEPS, OUTCOME_LR, OUTCOME_BATCH = 300, 0.01, 64
HELD_OUT_SIZE = 2000
MIN_ACCURACY, MIN_ATTENTION, MAX_LOSS = 0.95, 0.8, 0.15


def _capstone(R):
    """The reference's module of this lesson (``reference.py`` here; the judge passes the reference package as R)."""
    import importlib

    return importlib.import_module(R.__name__ + ".lesson07_capstone")


# ---------------------------------------------------------------- models and batches

def _params(g, n_names, n_attrs, d_model, d_k, d_v, n_classes, spread=1.0):
    return {
        "E_name": spread * g.normal(size=(n_names, d_model)),
        "E_attr": spread * g.normal(size=(n_attrs, d_model)),
        "W_Q": g.normal(size=(d_model, d_k)) / np.sqrt(d_model),
        "W_K": g.normal(size=(d_model, d_k)) / np.sqrt(d_model),
        "W_V": g.normal(size=(d_model, d_v)) / np.sqrt(d_model),
        "W_out": g.normal(size=(d_v, n_classes)) / np.sqrt(d_v),
    }


def _task_batch(n, seed, n_items):
    from attention_course import capstone as task

    data = task.make_data(n, seed, n_items=n_items)
    return {k: data[k] for k in ("names", "attrs", "targets")}


def _random_batch(g, B, T, n_names, n_attrs, n_classes, graded=0.5, distinct=False):
    """Ids drawn with repeats (so one row of a table collects several gradients); with
    ``distinct``, no (name, attribute) pair twice in a sequence, so no two of its tokens are equal."""
    targets = g.integers(0, n_classes, size=(B, T))
    targets[g.random((B, T)) > graded] = -1
    targets[0, -1] = g.integers(0, n_classes)            # at least one graded position
    if distinct:
        pairs = np.argsort(g.random((B, n_names * n_attrs)), axis=-1)[:, :T]   # (B, T) distinct pair ids
        return {"names": pairs // n_attrs, "attrs": pairs % n_attrs, "targets": targets}
    return {"names": g.integers(0, n_names, size=(B, T)),
            "attrs": g.integers(0, n_attrs, size=(B, T)),
            "targets": targets}


#: How far, relative to its size, a top-1 row's largest visible score must stand above the next.
#: Closer than that (a token repeated in a sequence ties exactly), two right ways of computing the
#: scores may round differently and pick different keys, so the grader redraws such a batch.
TOP1_MARGIN = 1e-6


def clear_winners(params, batch, causal=True, scale=True):
    """Does every row of the scores (the reference's formula) have one visible key clearly largest?"""
    p = {k: np.asarray(params[k], dtype=np.float64) for k in PARAM_NAMES}
    X = p["E_name"][np.asarray(batch["names"])] + p["E_attr"][np.asarray(batch["attrs"])]   # (B, T, d_model)
    Q, K = X @ p["W_Q"], X @ p["W_K"]                                                      # (B, T, d_k)
    T, d_k = X.shape[-2], K.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2) / (np.sqrt(d_k) if scale else 1.0)                     # (B, T, T)
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    runner_up, best = np.moveaxis(np.sort(np.where(visible, S, -np.inf), axis=-1)[..., -2:], -1, 0)  # (B, T) each
    return bool(np.all(best - runner_up > TOP1_MARGIN * (1.0 + np.abs(best))))


def _top1_batch(draw, params, causal, tries=200):
    """The first batch ``draw(attempt)`` gives whose top-1 choices are clear (see ``TOP1_MARGIN``)."""
    for attempt in range(tries):
        batch = draw(attempt)
        if clear_winners(params, batch, causal):
            return batch
    raise RuntimeError(f"no batch with clear top-1 choices in {tries} draws")


def _model_cases(g):
    seed = int(g.integers(1, 1 << 30))
    task_params = _params(g, 9, 7, 5, 6, 4, 6)
    wide = _params(g, 4, 3, 4, 9, 3, 7)
    big = _params(g, 5, 5, 6, 6, 5, 4, spread=6.0)          # scores in the tens to hundreds
    small = _params(g, 3, 2, 3, 2, 2, 3)
    int_params = {k: g.integers(-2, 3, size=v.shape) for k, v in _params(g, 4, 4, 3, 3, 2, 3).items()}
    return [
        Case("task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4",
             (task_params, _task_batch(3, seed, 5))),
        Case("random ids (with repeats) of shape (2, 5), d_k=9 != d_v=3, 7 classes, causal=False",
             (wide, _random_batch(g, 2, 5, 4, 3, 7)), {"causal": False}),
        Case("large embeddings (scores in the hundreds), shape (3, 6), causal mask",
             (big, _random_batch(g, 3, 6, 5, 5, 4))),
        Case("large embeddings with scale=False", (big, _random_batch(g, 2, 4, 5, 5, 4)), {"scale": False}),
        Case("weighting='raw', task sequences with 3 items", (task_params, _task_batch(4, seed + 1, 3)),
             {"weighting": "raw"}),
        Case("weighting='raw', causal=False, scale=False", (wide, _random_batch(g, 2, 4, 4, 3, 7)),
             {"weighting": "raw", "causal": False, "scale": False}),
        Case("weighting='top1', task sequences",
             (task_params, _top1_batch(lambda k: _task_batch(3, seed + 2 + k, 4), task_params, causal=True)),
             {"weighting": "top1"}),
        Case("weighting='top1', causal=False",
             (wide, _top1_batch(lambda k: _random_batch(g, 3, 5, 4, 3, 7, distinct=True), wide, causal=False)),
             {"weighting": "top1", "causal": False}),
        Case("a batch of one sequence of two tokens, d_model=3, d_k=d_v=2",
             (small, _random_batch(g, 1, 2, 3, 2, 3, graded=1.0))),
        Case("integer-valued parameters (promote them to float64)",
             (int_params, _random_batch(g, 2, 4, 4, 4, 3))),
    ]
