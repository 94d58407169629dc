"""Learner answers for lesson 07, the capstone (model_forward, model_backward, adam_step).

The outcome test (a fresh model trained with the learner's adam_step, from gradients the grader
computes with the reference's model_backward) follows adam_step and belongs to its exercise: a
wrong model_backward loses points on model_backward's tests and nowhere else. Two of the wrong
model_backward answers compute another model consistently (its loss and its gradients agree), so
a gradient check of their own loss passes; the visible check compares their loss with the one of
model_forward's logits.
"""

WRONG = {
    "model_forward": {
        "no_scale": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2)
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
        "softmax_over_queries": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2)
    if scale:
        S = S / np.sqrt(K.shape[-1])
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf), axis=-2)
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
        "mask_after_softmax": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2)
    if scale:
        S = S / np.sqrt(K.shape[-1])
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(S) * visible
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
        "forgets_the_attribute_table": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2)
    if scale:
        S = S / np.sqrt(K.shape[-1])
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
        "plain_transpose_breaks_batches": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ K.T
    if scale:
        S = S / np.sqrt(K.shape[-1])
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
        "always_causal": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2)
    if scale:
        S = S / np.sqrt(K.shape[-1])
    visible = np.tril(np.ones((T, T), dtype=bool))
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
        "top1_ignores_the_mask": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2)
    if scale:
        S = S / np.sqrt(K.shape[-1])
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(S, axis=-1)[..., None]).astype(float)
    return A @ V @ p["W_out"], A
''',
    },
    # Each of these computes the right loss and trains the model all the same (Adam rescales
    # every gradient), but its gradients are wrong: only the gradient check can tell.
    "model_backward": {
        "sum_instead_of_mean": '''
def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    names, attrs, targets = batch["names"], batch["attrs"], np.asarray(batch["targets"])
    X = p["E_name"][names] + p["E_attr"][attrs]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T, d = X.shape[-2], X.shape[-1]
    c = 1 / np.sqrt(K.shape[-1]) if scale else 1.0
    S = c * (Q @ np.swapaxes(K, -1, -2))
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    O = A @ V
    logits = O @ p["W_out"]
    graded = targets >= 0
    safe = np.where(graded, targets, 0)
    probs = softmax(logits)
    loss = -np.mean(np.log(np.take_along_axis(probs, safe[..., None], axis=-1)[..., 0][graded]))
    dlogits = (probs - (np.arange(logits.shape[-1]) == safe[..., None])) * graded[..., None]
    grads = {"W_out": O.reshape(-1, O.shape[-1]).T @ dlogits.reshape(-1, logits.shape[-1])}
    dO = dlogits @ p["W_out"].T
    dA, dV = dO @ np.swapaxes(V, -1, -2), np.swapaxes(A, -1, -2) @ dO
    if weighting == "softmax":
        dS = A * (dA - np.sum(A * dA, axis=-1, keepdims=True))
    elif weighting == "raw":
        dS = np.where(visible, dA, 0.0)
    else:
        dS = np.zeros_like(dA)
    dQ, dK = c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q
    flat = X.reshape(-1, d)
    grads["W_Q"], grads["W_K"] = flat.T @ dQ.reshape(len(flat), -1), flat.T @ dK.reshape(len(flat), -1)
    grads["W_V"] = flat.T @ dV.reshape(len(flat), -1)
    dX = (dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T).reshape(-1, d)
    grads["E_name"], grads["E_attr"] = np.zeros_like(p["E_name"]), np.zeros_like(p["E_attr"])
    np.add.at(grads["E_name"], np.ravel(names), dX)
    np.add.at(grads["E_attr"], np.ravel(attrs), dX)
    return float(loss), grads
''',
        "scale_forgotten_in_backward": '''
def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    names, attrs, targets = batch["names"], batch["attrs"], np.asarray(batch["targets"])
    X = p["E_name"][names] + p["E_attr"][attrs]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T, d = X.shape[-2], X.shape[-1]
    c = 1 / np.sqrt(K.shape[-1]) if scale else 1.0
    S = c * (Q @ np.swapaxes(K, -1, -2))
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    O = A @ V
    logits = O @ p["W_out"]
    graded = targets >= 0
    safe = np.where(graded, targets, 0)
    probs = softmax(logits)
    loss = -np.mean(np.log(np.take_along_axis(probs, safe[..., None], axis=-1)[..., 0][graded]))
    dlogits = (probs - (np.arange(logits.shape[-1]) == safe[..., None])) * graded[..., None] / graded.sum()
    grads = {"W_out": O.reshape(-1, O.shape[-1]).T @ dlogits.reshape(-1, logits.shape[-1])}
    dO = dlogits @ p["W_out"].T
    dA, dV = dO @ np.swapaxes(V, -1, -2), np.swapaxes(A, -1, -2) @ dO
    if weighting == "softmax":
        dS = A * (dA - np.sum(A * dA, axis=-1, keepdims=True))
    elif weighting == "raw":
        dS = np.where(visible, dA, 0.0)
    else:
        dS = np.zeros_like(dA)
    dQ, dK = dS @ K, np.swapaxes(dS, -1, -2) @ Q
    flat = X.reshape(-1, d)
    grads["W_Q"], grads["W_K"] = flat.T @ dQ.reshape(len(flat), -1), flat.T @ dK.reshape(len(flat), -1)
    grads["W_V"] = flat.T @ dV.reshape(len(flat), -1)
    dX = (dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T).reshape(-1, d)
    grads["E_name"], grads["E_attr"] = np.zeros_like(p["E_name"]), np.zeros_like(p["E_attr"])
    np.add.at(grads["E_name"], np.ravel(names), dX)
    np.add.at(grads["E_attr"], np.ravel(attrs), dX)
    return float(loss), grads
''',
        "dK_without_transpose": '''
def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    names, attrs, targets = batch["names"], batch["attrs"], np.asarray(batch["targets"])
    X = p["E_name"][names] + p["E_attr"][attrs]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T, d = X.shape[-2], X.shape[-1]
    c = 1 / np.sqrt(K.shape[-1]) if scale else 1.0
    S = c * (Q @ np.swapaxes(K, -1, -2))
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    O = A @ V
    logits = O @ p["W_out"]
    graded = targets >= 0
    safe = np.where(graded, targets, 0)
    probs = softmax(logits)
    loss = -np.mean(np.log(np.take_along_axis(probs, safe[..., None], axis=-1)[..., 0][graded]))
    dlogits = (probs - (np.arange(logits.shape[-1]) == safe[..., None])) * graded[..., None] / graded.sum()
    grads = {"W_out": O.reshape(-1, O.shape[-1]).T @ dlogits.reshape(-1, logits.shape[-1])}
    dO = dlogits @ p["W_out"].T
    dA, dV = dO @ np.swapaxes(V, -1, -2), np.swapaxes(A, -1, -2) @ dO
    if weighting == "softmax":
        dS = A * (dA - np.sum(A * dA, axis=-1, keepdims=True))
    elif weighting == "raw":
        dS = np.where(visible, dA, 0.0)
    else:
        dS = np.zeros_like(dA)
    dQ, dK = c * dS @ K, c * dS @ Q
    flat = X.reshape(-1, d)
    grads["W_Q"], grads["W_K"] = flat.T @ dQ.reshape(len(flat), -1), flat.T @ dK.reshape(len(flat), -1)
    grads["W_V"] = flat.T @ dV.reshape(len(flat), -1)
    dX = (dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T).reshape(-1, d)
    grads["E_name"], grads["E_attr"] = np.zeros_like(p["E_name"]), np.zeros_like(p["E_attr"])
    np.add.at(grads["E_name"], np.ravel(names), dX)
    np.add.at(grads["E_attr"], np.ravel(attrs), dX)
    return float(loss), grads
''',
        "fancy_index_loses_repeats": '''
def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    names, attrs, targets = batch["names"], batch["attrs"], np.asarray(batch["targets"])
    X = p["E_name"][names] + p["E_attr"][attrs]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T, d = X.shape[-2], X.shape[-1]
    c = 1 / np.sqrt(K.shape[-1]) if scale else 1.0
    S = c * (Q @ np.swapaxes(K, -1, -2))
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = (np.arange(T) == np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None]).astype(float)
    O = A @ V
    logits = O @ p["W_out"]
    graded = targets >= 0
    safe = np.where(graded, targets, 0)
    probs = softmax(logits)
    loss = -np.mean(np.log(np.take_along_axis(probs, safe[..., None], axis=-1)[..., 0][graded]))
    dlogits = (probs - (np.arange(logits.shape[-1]) == safe[..., None])) * graded[..., None] / graded.sum()
    grads = {"W_out": O.reshape(-1, O.shape[-1]).T @ dlogits.reshape(-1, logits.shape[-1])}
    dO = dlogits @ p["W_out"].T
    dA, dV = dO @ np.swapaxes(V, -1, -2), np.swapaxes(A, -1, -2) @ dO
    if weighting == "softmax":
        dS = A * (dA - np.sum(A * dA, axis=-1, keepdims=True))
    elif weighting == "raw":
        dS = np.where(visible, dA, 0.0)
    else:
        dS = np.zeros_like(dA)
    dQ, dK = c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q
    flat = X.reshape(-1, d)
    grads["W_Q"], grads["W_K"] = flat.T @ dQ.reshape(len(flat), -1), flat.T @ dK.reshape(len(flat), -1)
    grads["W_V"] = flat.T @ dV.reshape(len(flat), -1)
    dX = dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T
    grads["E_name"], grads["E_attr"] = np.zeros_like(p["E_name"]), np.zeros_like(p["E_attr"])
    grads["E_name"][names] += dX
    grads["E_attr"][attrs] += dX
    return float(loss), grads
''',
    },
    "adam_step": {
        "gradient_ascent": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g ** 2
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return np.asarray(p, dtype=float) + lr * m_hat / (np.sqrt(v_hat) + eps), m, v
''',
        "no_bias_correction": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g ** 2
    return np.asarray(p, dtype=float) - lr * m / (np.sqrt(v) + eps), m, v
''',
        "no_square_root": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g ** 2
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return np.asarray(p, dtype=float) - lr * m_hat / (v_hat + eps), m, v
''',
        "eps_inside_the_root": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g ** 2
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return np.asarray(p, dtype=float) - lr * m_hat / np.sqrt(v_hat + eps), m, v
''',
        "updates_in_place": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * np.square(g)
    p = np.asarray(p, dtype=float)
    p -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
    return p, m, v
''',
    },
}


#: For each WRONG entry, words that the visible check's message must contain for it to name the
#: true mistake (case-insensitive; tests/test_visible_checks.py measures and prints it).
DIAGNOSES = {
    "model_forward": {
        "no_scale": ("not scaled",),
        "softmax_over_queries": ('down the columns',),
        "mask_after_softmax": ("zeroed after the softmax",),
        "forgets_the_attribute_table": ("both tables",),
        "plain_transpose_breaks_batches": (".t reverses",),
        "always_causal": ("causal=false",),
        "top1_ignores_the_mask": ("argmax",),
    },
    "model_backward": {
        "sum_instead_of_mean": ("graded positions n",),
        "scale_forgotten_in_backward": ("1/√d_k",),
        "dK_without_transpose": ('but w_k is not',),
        "fancy_index_loses_repeats": ("np.add.at",),
        "consistent_without_scale": ('leaves out the 1/√d_k scale',),
        "mean_over_all_positions": ('averaged over all',),
        "value_path_missing_from_dX": ("value path", "dv w_vᵀ"),
    },
    "adam_step": {
        "gradient_ascent": ("subtract it",),
        "no_bias_correction": ("bias-corrected",),
        "no_square_root": ("square-rooted",),
        "eps_inside_the_root": ('eps is inside the square root',),
        "updates_in_place": ("in place",),
    },
}


#: Each requirement the lesson states, its hidden case and a WRONG entry that breaks it (see lesson01.py).
REQUIREMENTS = {
    "model_forward": [
        ("apply the mask to the scores **before** the softmax",
         "task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4", "mask_after_softmax"),
        ("`causal=True`: position $i$ reads positions $j \\le i$; with `False` every position reads all.",
         "random ids (with repeats) of shape (2, 5), d_k=9 != d_v=3, 7 classes, causal=False", "always_causal"),
        ("$X = E_{\\text{name}}[\\text{names}] + E_{\\text{attr}}[\\text{attrs}]$",
         "task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4", "forgets_the_attribute_table"),
        ('Use `np.swapaxes(K, -1, -2)` for the transpose', 'task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4', 'plain_transpose_breaks_batches'),
    ],
    "model_backward": [
        ("the mean cross-entropy (a float)", "task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4",
         "mean_over_all_positions"),
        ("$dQ = c\\,dS\\,K$", "task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4",
         "scale_forgotten_in_backward"),
        ("which must be **added**", "task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4",
         "fancy_index_loses_repeats"),
        ('$dX = dQ\\,W_Q^\\top + dK\\,W_K^\\top + dV\\,W_V^\\top$', 'task sequences (3 of them, 5 items each) with d_model=5, d_k=6, d_v=4', 'value_path_missing_from_dX'),
    ],
    "adam_step": [
        ("leave the inputs unchanged", "the first step (t=1) from m = v = 0, shape (3, 4)", "updates_in_place"),
        ("dividing by $1-\\beta^t$ (the\n*bias correction*)", "the first step (t=1) from m = v = 0, shape (3, 4)",
         "no_bias_correction"),
    ],
}

CORRECT = {
    "model_forward": {
        "einsum_and_scipy": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    import scipy.special
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = np.take(p["E_name"], batch["names"], axis=0) + np.take(p["E_attr"], batch["attrs"], axis=0)
    Q, K, V = (np.einsum("btm,mk->btk", X, p[w]) for w in ("W_Q", "W_K", "W_V"))
    S = np.einsum("bik,bjk->bij", Q, K) / (np.sqrt(K.shape[-1]) if scale else 1.0)
    T = S.shape[-1]
    i, j = np.indices((T, T))
    visible = (j <= i) if causal else np.full((T, T), True)
    if weighting == "softmax":
        A = scipy.special.softmax(np.where(visible, S, -np.inf), axis=-1)
    elif weighting == "raw":
        A = S * visible
    else:
        A = np.zeros_like(S)
        np.put_along_axis(A, np.argmax(np.where(visible, S, -np.inf), axis=-1)[..., None], 1.0, axis=-1)
    O = np.einsum("bij,bjv->biv", A, V)
    return np.einsum("btv,vc->btc", O, p["W_out"]), A
''',
        "loops_over_sequences_and_queries": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.array(v, dtype=float) for k, v in params.items()}
    names, attrs = np.asarray(batch["names"]), np.asarray(batch["attrs"])
    B, T = names.shape
    all_logits, all_A = [], []
    for b in range(B):
        X = np.array([p["E_name"][n] + p["E_attr"][a] for n, a in zip(names[b], attrs[b])])
        Q, K, V = X.dot(p["W_Q"]), X.dot(p["W_K"]), X.dot(p["W_V"])
        A = np.zeros((T, T))
        for i in range(T):
            seen = i + 1 if causal else T
            scores = K[:seen].dot(Q[i])
            if scale:
                scores = scores / np.sqrt(K.shape[1])
            if weighting == "softmax":
                A[i, :seen] = softmax(scores)
            elif weighting == "raw":
                A[i, :seen] = scores
            else:
                A[i, int(np.argmax(scores))] = 1.0
        all_A.append(A)
        all_logits.append(A.dot(V).dot(p["W_out"]))
    return np.array(all_logits), np.array(all_A)
''',
        "chatty_with_warnings_and_stderr": '''
def model_forward(params, batch, causal=True, scale=True, weighting="softmax"):
    import sys, warnings
    print("model_forward: computing", file=sys.stderr)
    warnings.warn("this forward pass is chatty")
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    X = p["E_name"][batch["names"]] + p["E_attr"][batch["attrs"]]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    T = X.shape[-2]
    S = Q @ np.swapaxes(K, -1, -2) * (K.shape[-1] ** -0.5 if scale else 1.0)
    hidden = np.triu(np.ones((T, T), dtype=bool), k=1) if causal else np.zeros((T, T), dtype=bool)
    if weighting == "softmax":
        e = np.exp(np.where(hidden, -np.inf, S) - np.where(hidden, -np.inf, S).max(axis=-1, keepdims=True))
        A = e / e.sum(axis=-1, keepdims=True)
    elif weighting == "raw":
        A = np.where(hidden, 0.0, S)
    else:
        A = np.eye(T)[np.argmax(np.where(hidden, -np.inf, S), axis=-1)]
    return A @ V @ p["W_out"], A
''',
    },
    "model_backward": {
        "einsum_and_explicit_softmax_jacobian": '''
def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    p = {k: np.asarray(v, dtype=float) for k, v in params.items()}
    names, attrs, y = np.asarray(batch["names"]), np.asarray(batch["attrs"]), np.asarray(batch["targets"])
    X = p["E_name"][names] + p["E_attr"][attrs]
    Q, K, V = (np.einsum("btm,mk->btk", X, p[w]) for w in ("W_Q", "W_K", "W_V"))
    T = X.shape[1]
    c = K.shape[-1] ** -0.5 if scale else 1.0
    S = c * np.einsum("bik,bjk->bij", Q, K)
    visible = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
    if weighting == "softmax":
        A = softmax(np.where(visible, S, -np.inf))
    elif weighting == "raw":
        A = np.where(visible, S, 0.0)
    else:
        A = np.eye(T)[np.argmax(np.where(visible, S, -np.inf), axis=-1)]
    O = np.einsum("bij,bjv->biv", A, V)
    Z = np.einsum("btv,vc->btc", O, p["W_out"])
    graded = y >= 0
    n = np.count_nonzero(graded)
    logp = Z - Z.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    Y = np.zeros_like(Z)
    Y[graded, y[graded]] = 1.0
    loss = -np.sum(Y * logp) / n
    dZ = (np.exp(logp) - Y) * graded[..., None] / n
    grads = {"W_out": np.einsum("btv,btc->vc", O, dZ)}
    dO = np.einsum("btc,vc->btv", dZ, p["W_out"])
    dA = np.einsum("biv,bjv->bij", dO, V)
    dV = np.einsum("bij,biv->bjv", A, dO)
    if weighting == "softmax":
        jac = np.einsum("bij,jk->bijk", A, np.eye(T)) - np.einsum("bij,bik->bijk", A, A)
        dS = np.einsum("bijk,bij->bik", jac, dA)
    elif weighting == "raw":
        dS = dA * visible
    else:
        dS = np.zeros_like(dA)
    dQ = c * np.einsum("bij,bjk->bik", dS, K)
    dK = c * np.einsum("bij,bik->bjk", dS, Q)
    for w, dP in (("W_Q", dQ), ("W_K", dK), ("W_V", dV)):
        grads[w] = np.einsum("btm,btk->mk", X, dP)
    dX = dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T
    grads["E_name"] = np.zeros_like(p["E_name"])
    grads["E_attr"] = np.zeros_like(p["E_attr"])
    np.add.at(grads["E_name"], names, dX)
    np.add.at(grads["E_attr"], attrs, dX)
    return loss, grads
''',
        "reuses_model_forward_loops_and_warns": '''
def model_backward(params, batch, causal=True, scale=True, weighting="softmax"):
    import warnings
    warnings.warn("this backward pass loops in Python")
    p = {k: np.array(v, dtype=float) for k, v in params.items()}
    names, attrs, y = np.asarray(batch["names"]), np.asarray(batch["attrs"]), np.asarray(batch["targets"])
    logits, A = model_forward(p, batch, causal=causal, scale=scale, weighting=weighting)
    X = p["E_name"][names] + p["E_attr"][attrs]
    Q, K, V = X @ p["W_Q"], X @ p["W_K"], X @ p["W_V"]
    O = A @ V
    B, T = names.shape
    probs = softmax(logits)
    loss, n = 0.0, 0
    dZ = np.zeros_like(logits)
    for b in range(B):
        for t in range(T):
            if y[b, t] >= 0:
                loss -= np.log(probs[b, t, y[b, t]])
                dZ[b, t] = probs[b, t]
                dZ[b, t, y[b, t]] -= 1.0
                n += 1
    loss, dZ = loss / n, dZ / n
    grads = {"W_out": sum(O[b].T @ dZ[b] for b in range(B))}
    dO = dZ @ p["W_out"].T
    dA = dO @ np.transpose(V, (0, 2, 1))
    dV = np.transpose(A, (0, 2, 1)) @ dO
    if weighting == "softmax":
        dS = A * dA - A * np.einsum("bij,bij->bi", A, dA)[..., None]
    elif weighting == "raw":
        mask = np.tril(np.ones((T, T))) if causal else np.ones((T, T))
        dS = dA * mask
    else:
        dS = 0.0 * dA
    c = 1 / np.sqrt(K.shape[-1]) if scale else 1.0
    dQ = c * dS @ K
    dK = c * np.transpose(dS, (0, 2, 1)) @ Q
    grads["W_Q"] = sum(X[b].T @ dQ[b] for b in range(B))
    grads["W_K"] = sum(X[b].T @ dK[b] for b in range(B))
    grads["W_V"] = sum(X[b].T @ dV[b] for b in range(B))
    dX = dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T
    grads["E_name"] = np.zeros_like(p["E_name"])
    grads["E_attr"] = np.zeros_like(p["E_attr"])
    for b in range(B):
        for t in range(T):
            grads["E_name"][names[b, t]] += dX[b, t]
            grads["E_attr"][attrs[b, t]] += dX[b, t]
    return float(loss), grads
''',
    },
    "adam_step": {
        "copies_then_updates_in_place": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    p, g = np.array(p, dtype=float), np.asarray(g, dtype=float)
    m, v = np.array(m, dtype=float), np.array(v, dtype=float)
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * np.square(g)
    p -= lr * (m / (1 - beta1 ** t)) / (np.sqrt(v / (1 - beta2 ** t)) + eps)
    return p, m, v
''',
        "corrected_learning_rate_form": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    g = np.asarray(g, dtype=float)
    m = beta1 * np.asarray(m, dtype=float) + (1 - beta1) * g
    v = beta2 * np.asarray(v, dtype=float) + (1 - beta2) * g * g
    root = np.sqrt(1 - beta2 ** t)
    step = lr * root / (1 - beta1 ** t)
    return np.asarray(p, dtype=float) - step * m / (np.sqrt(v) + eps * root), m, v
''',
        "chatty_with_a_warning": '''
def adam_step(p, g, m, v, t, lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8):
    import sys, warnings
    if t == 1:
        warnings.warn("first Adam step")
        print("adam_step: starting", file=sys.stderr)
    m_new = np.add(np.multiply(beta1, m), np.multiply(1 - beta1, g), dtype=float)
    v_new = np.add(np.multiply(beta2, v), np.multiply(1 - beta2, np.power(g, 2.0)), dtype=float)
    m_hat = m_new / (1.0 - np.power(beta1, t))
    v_hat = v_new / (1.0 - np.power(beta2, t))
    return np.subtract(p, lr * m_hat / (v_hat ** 0.5 + eps), dtype=float), m_new, v_new
''',
    },
}


# Two answers that compute another model consistently: their loss and gradients agree, so a
# gradient check of their own loss passes. Both start from the same complete model_backward.
_BY_HAND = CORRECT["model_backward"]["einsum_and_explicit_softmax_jacobian"]
WRONG["model_backward"]["consistent_without_scale"] = _BY_HAND.replace(
    "c = K.shape[-1] ** -0.5 if scale else 1.0",
    "c = 1.0                                        # the 1/√d_k left out, in the loss and the gradients alike")
WRONG["model_backward"]["mean_over_all_positions"] = _BY_HAND.replace(
    "n = np.count_nonzero(graded)", "n = y.size                                     # every position, target or not")
# X feeds the queries, the keys and the values; this one sends gradient back along two of them only.
WRONG["model_backward"]["value_path_missing_from_dX"] = _BY_HAND.replace(
    'dX = dQ @ p["W_Q"].T + dK @ p["W_K"].T + dV @ p["W_V"].T',
    'dX = dQ @ p["W_Q"].T + dK @ p["W_K"].T                 # the value path dV @ W_Vᵀ is missing')
