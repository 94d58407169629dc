"""The capstone's gradients (lesson 07): which step of the backward pass a wrong gradient points at."""
import numpy as np

from .. import forms
from .calls import _explain_error, _named_arguments, call, check_returns
from .failures import CheckFailed, _quietly, _silenced
from .gradients import _central_differences, _constant_factor, rel_error
from .notebook import _follow_the_notebook
from .values import _distinct


BACKPROP_ORDER = ("W_out", "W_V", "W_Q", "W_K", "E_name", "E_attr")


def _diagnose_model_gradients(table, n_graded, d_k, embeddings=None):
    """Name the step of the capstone's backward pass that the pattern of wrong gradients points at.

    ``table[setting][name]`` is ``(relative error, constant factor or None)``; the first setting is
    the real model (softmax, scaled, causal). ``embeddings``: what the embedding gradients' errors
    single out (``_embedding_cause``), if anything.
    """
    wrong = {s: [n for n in BACKPROP_ORDER if row[n][0] > 1e-6] for s, row in table.items()}
    real = next(iter(table))
    factors = [table[s][n][1] for s in table for n in wrong[s]]
    if wrong[real] == list(BACKPROP_ORDER) and None not in factors and np.allclose(factors, factors[0], rtol=1e-6):
        factor = factors[0]
        if np.isclose(factor, n_graded, rtol=1e-6):
            return (f"every gradient is {factor:.4g} times the right one, and {n_graded} is the number of "
                    "graded positions N: the loss is a mean over them, so dZ = (softmax(z) − onehot(y)) / N.")
        return f"every gradient is {factor:.4g} times the right one: a constant factor in dZ is off."
    first = (wrong[real] or next(w for w in wrong.values() if w))[0]
    if first == "W_out":
        return ("the gradient nearest the loss, W_out's, is already wrong: dZ = (softmax(z) − onehot(y)) / N "
                "at the graded positions and 0 elsewhere, then dW_out = Oᵀ dZ summed over batch and positions.")
    if first == "W_V":
        return "W_out is right but W_V is not: dV = Aᵀ dO (transpose the weights, not dO), then dW_V = Xᵀ dV."
    if first in ("W_Q", "W_K"):
        both = [n for n in ("W_Q", "W_K") if n in wrong[real]]
        scale = [table[real][n][1] for n in ("W_Q", "W_K")]
        raw = next((s for s in table if "'raw'" in s), None)
        if all(f is not None and np.isclose(f, np.sqrt(d_k), rtol=1e-6) for f in scale):
            return (f"W_out and W_V are right, and W_Q and W_K are both √d_k = {np.sqrt(d_k):.4g} times too "
                    "large: the 1/√d_k of the forward pass belongs in dQ = c dS K and dK = c dSᵀ Q too.")
        if both == ["W_Q", "W_K"] and raw is not None and not {"W_Q", "W_K"} & set(wrong[raw]):
            return ("W_out and W_V are right, and W_Q and W_K are right with weighting='raw' (no softmax) but "
                    "wrong with the softmax: the softmax backward is off. It is dS = A ⊙ (dA − Σ_j A ⊙ dA), "
                    "the weighted sum along each row subtracted before multiplying by A.")
        if both == ["W_K"]:
            return "W_out, W_V and W_Q are right but W_K is not: dK = c · dSᵀ Q (transpose the last two axes of dS)."
        if both == ["W_Q"]:
            return "W_out, W_V and W_K are right but W_Q is not: dQ = c · dS K."
        return ("W_out and W_V are right but W_Q and W_K are not: the error is between dA and dQ, dK "
                "(the softmax backward, or the scores' step dQ = c dS K, dK = c dSᵀ Q).")
    return ("every weight matrix is right and only the embedding tables are wrong: " + (embeddings or (
        "the error is in dX = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ or in how its rows go back to the tables (each row "
        "of dX to the table rows its ids came from; np.add.at(dE, ids, dX) adds the rows of an id used "
        "several times).")))


#: The paths by which X reaches the loss, with the weight each one multiplies dX by (``_embedding_cause``).
_PATHS = (("W_Q", "the query path dQ W_Qᵀ"), ("W_K", "the key path dK W_Kᵀ"), ("W_V", "the value path dV W_Vᵀ"))


def _embedding_cause(params, data, analytic, numeric):
    """What the errors of the embedding gradients single out, in words, or None.

    ``analytic`` and ``numeric`` are ``{table: gradient}`` for "E_name" and "E_attr". The rows of ids
    used once right and only those of repeated ids wrong: the repeats are not added up. The error of
    every row a multiple of one weight matrix's columns (a subspace smaller than the width), and of no
    other's: that path is missing from dX."""
    ids = {"E_name": np.asarray(data["names"]).ravel(), "E_attr": np.asarray(data["attrs"]).ravel()}
    once_right, repeats_only = False, True
    for table, used in ids.items():
        counts = np.bincount(used, minlength=len(analytic[table]))
        wrong = ~np.isclose(analytic[table], numeric[table], rtol=1e-5, atol=1e-8).all(axis=-1)
        once_right |= bool((~wrong & (counts == 1)).any())
        repeats_only &= bool((counts[wrong] > 1).all())
    if once_right and repeats_only:
        return ("the rows of ids used once are right and only those of ids used several times are wrong: an id "
                "used several times must collect all of its gradients (np.add.at(dE, ids, dX) adds them; "
                "dE[ids] += dX keeps only one).")
    error = np.concatenate([numeric[t] - np.asarray(analytic[t], dtype=float) for t in ids])   # (rows, d_model)
    fits = []
    for name, path in _PATHS:
        W = np.asarray(params[name], dtype=float)                     # (d_model, width)
        if np.linalg.matrix_rank(W) >= W.shape[0]:
            continue                                                  # every row fits: no evidence
        coefficients = np.linalg.lstsq(W, error.T, rcond=None)[0]      # error ≈ coefficientsᵀ Wᵀ?
        if np.linalg.norm(error - (W @ coefficients).T) <= 1e-4 * np.linalg.norm(error):
            fits.append((name, path))
    if len(fits) == 1:
        (name, path), = fits
        return (f"their error is, row by row, a combination of the columns of {name} alone, which is what "
                f"{path} would add: {path} is missing from dX. X feeds the queries, the keys "
                "and the values, so dX = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ.")
    return None


def check_model_gradients(model_backward, params, data, settings, n_graded):
    """The capstone's gradient check: every parameter under every switch setting, then one diagnosis.

    All gradients are checked before anything is judged, so a failure names the step of the
    backward pass that the pattern points at (the first wrong gradient in backpropagation order,
    which switch settings are affected, a constant factor), not merely the first table checked.
    """
    table, tables = {}, {}
    for flags in settings:
        loss, grads = check_returns("model_backward", call(model_backward, params, data, **flags), ("loss", "grads"))
        if not isinstance(grads, dict):
            raise CheckFailed(f"grads should be a dict keyed like params, but it is {forms.describe(grads)}.")
        key = str(flags or "the real model")
        table[key] = {}
        print(f"--- {key}: loss {float(loss):.6f}")
        for name in BACKPROP_ORDER:
            analytic = grads.get(name) if isinstance(grads, dict) else None
            shape = np.shape(params[name])
            problem = forms.array_problem(f"grads[{name!r}]", analytic, shape)
            if problem:
                shaped = isinstance(analytic, np.ndarray) and analytic.shape != shape
                raise CheckFailed(problem + (f" A gradient has the shape of params[{name!r}]." if shaped else ""))
            if not np.isfinite(analytic).all():
                raise CheckFailed(f"grads[{name!r}] contains NaN or inf with {key}.")

            def loss_of(W, name=name):
                return model_backward({**params, name: W}, data, **flags)[0]

            try:
                with _silenced():                  # one silencing for the whole sweep, not one per call
                    numeric = _central_differences(loss_of, np.array(params[name], dtype=float), 1e-5)
            except Exception as exc:
                raise _explain_error(exc, model_backward, _named_arguments(model_backward, (params, data), flags)) from None
            error = rel_error(analytic, numeric)
            table[key][name] = (error, _constant_factor(analytic, numeric) if analytic.any() else 0.0)
            if key == next(iter(table)):                 # the real model's, for _embedding_cause
                tables.setdefault("analytic", {})[name], tables.setdefault("numeric", {})[name] = analytic, numeric
            print(f"    {name:<7} relative error {error:.1e}" + ("" if error <= 1e-6 else "   ✗"))
    if all(err <= 1e-6 for row in table.values() for err, _ in row.values()):
        print("✓ every gradient agrees with central differences (relative error < 1e-6)")
        return
    d_k = np.shape(params["W_K"])[1]
    embeddings = _embedding_cause(params, data, tables["analytic"], tables["numeric"])
    raise CheckFailed("the gradients disagree with central differences (the ✗ above): "
                      + _diagnose_model_gradients(table, n_graded, d_k, embeddings))


def _mean_cross_entropy(logits, targets):
    """The mean cross-entropy of ``logits`` over the positions whose target is >= 0."""
    logits, targets = np.asarray(logits, dtype=float), np.asarray(targets)
    graded = targets >= 0
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, np.where(graded, targets, 0)[..., None], axis=-1)[..., 0]
    return float(-picked[graded].sum() / max(int(graded.sum()), 1))


def check_loss_matches_forward(model_backward, model_forward, params, data, settings):
    """For every switch setting, the loss ``model_backward`` returns is the mean cross-entropy of the
    logits ``model_forward`` gives on the same batch. A backward pass that computes another model
    consistently (the scale left out of its loss *and* its gradients, say) passes a gradient check
    of its own loss; it does not pass this. A cause is named only when a computed alternative
    reproduces the loss exactly."""
    targets = np.asarray(data["targets"])
    n_graded, n_all = int((targets >= 0).sum()), targets.size
    for flags in settings:
        loss, _ = check_returns("model_backward", call(model_backward, params, data, **flags), ("loss", "grads"))
        logits, _ = check_returns("model_forward", call(model_forward, params, data, **flags), ("logits", "A"))
        expected = _mean_cross_entropy(logits, targets)
        loss = float(loss)
        if np.isclose(loss, expected, rtol=1e-9, atol=1e-12):
            continue
        setting = ", ".join(f"{k}={v!r}" for k, v in flags.items()) or "the real model"
        causes = []
        for switch, meaning in (("scale", "the 1/√d_k scale"), ("causal", "the causal mask")):
            other = {**flags, switch: not flags.get(switch, True)}
            other_loss = _mean_cross_entropy(_quietly(model_forward, params, data, **other)[0], targets)
            if np.isclose(loss, other_loss, rtol=1e-9, atol=1e-12):
                done = "leaves out" if flags.get(switch, True) else "applies"
                causes.append(f"the forward pass inside model_backward {done} {meaning}: its loss is the loss "
                              f"model_forward gives with {switch}={other[switch]}")
        if np.isclose(loss, expected * n_graded / n_all, rtol=1e-9):
            causes.append(f"the loss is averaged over all {n_all} positions of the batch instead of the "
                          f"{n_graded} that have a target")
        if np.isclose(loss, expected * n_graded, rtol=1e-9):
            causes.append(f"the loss is summed over the {n_graded} positions with a target instead of averaged")
        mine, right = _distinct(loss, expected)
        raise CheckFailed(f"with {setting}, model_backward returns the loss {mine}, but the mean cross-entropy of "
                          f"the logits your model_forward gives on the same batch (over the {n_graded} positions "
                          f"with a target) is {right}: the two compute different models. " + (
                              f"This is exactly what you get when {causes[0]}." if len(causes) == 1 else
                              "Your model_forward gives the known answers on every setting this check uses (checked "
                              "above), so make the forward pass inside model_backward its model, and its loss the "
                              "mean over the positions with a target."))
    print("✓ the loss of model_backward is the mean cross-entropy of model_forward's logits, for every setting")



_follow_the_notebook()
