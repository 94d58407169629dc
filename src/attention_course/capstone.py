"""The capstone's task: items that each carry a (name, colour) pair, then a question.

A sequence lists ``n_items`` animals, each with a colour, then a query token that names one
of them, then (during training only) the answer. The model must predict, at the query
position, the colour of the animal the query names: it has to *find* that animal by
content, the way "it" finds "cat" in the "it" sentence of lesson 02.

Each token is given by two integer ids, read from two embedding tables and added:

============  =======================  ===========================
slot          name id                  attribute id
============  =======================  ===========================
item ``i``    the animal (0..7)        its colour (0..5)
query         the animal asked about   ``QUERY`` ("?")
answer        ``NO_NAME`` ("·")        the colour asked for
============  =======================  ===========================

``targets`` is -1 everywhere except at the query position, which holds the answer's
colour: the model predicts the next token there. This module only makes data and
starting parameters; the model itself is written in the lesson.
"""
import numpy as np

NAMES = ("cat", "dog", "owl", "fox", "bee", "elk", "yak", "emu")
COLOURS = ("red", "blue", "green", "gold", "grey", "pink")
NO_NAME = len(NAMES)          # the name id of the answer slot
QUERY = len(COLOURS)          # the attribute id of the query slot
N_NAME_IDS = len(NAMES) + 1   # rows of the name embedding table
N_ATTR_IDS = len(COLOURS) + 1 # rows of the attribute embedding table
N_CLASSES = len(COLOURS)      # the model predicts one of the colours
N_ITEMS = 5


def make_data(n, seed, n_items=N_ITEMS):
    """``n`` sequences of ``n_items`` items, a query and its answer, as a dict of int arrays.

    Keys: ``names``, ``attrs``, ``targets`` (each ``(n, n_items + 2)``) and ``answer_pos``
    (``(n,)``: the position of the item that holds the answer). Names in a sequence are
    distinct; colours may repeat.
    """
    if not 1 <= n_items <= len(NAMES):
        raise ValueError(f"n_items must be between 1 and {len(NAMES)}")
    rng = np.random.default_rng(seed)
    T = n_items + 2
    item_names = np.argsort(rng.random((n, len(NAMES))), axis=1)[:, :n_items]   # distinct
    item_colours = rng.integers(0, len(COLOURS), size=(n, n_items))
    answer_pos = rng.integers(0, n_items, size=n)
    rows = np.arange(n)
    asked = item_names[rows, answer_pos]
    answer = item_colours[rows, answer_pos]
    names = np.empty((n, T), dtype=np.int64)
    attrs = np.empty((n, T), dtype=np.int64)
    names[:, :n_items], attrs[:, :n_items] = item_names, item_colours
    names[:, n_items], attrs[:, n_items] = asked, QUERY
    names[:, n_items + 1], attrs[:, n_items + 1] = NO_NAME, answer
    targets = np.full((n, T), -1, dtype=np.int64)
    targets[:, n_items] = answer
    return {"names": names, "attrs": attrs, "targets": targets, "answer_pos": answer_pos}


def without_answer(data):
    """The same sequences with the answer slot cut off: what the model sees at inference."""
    return {"names": data["names"][:, :-1], "attrs": data["attrs"][:, :-1],
            "targets": data["targets"][:, :-1], "answer_pos": data["answer_pos"]}


def take(data, index):
    """The sequences ``index`` (an int array or slice) of every field of ``data``."""
    return {key: value[index] for key, value in data.items()}


def token_labels(data, i):
    """Readable tokens of sequence ``i``: ``["cat:red", ..., "?dog", "→blue"]``."""
    labels = []
    for name, attr in zip(data["names"][i], data["attrs"][i]):
        if attr == QUERY:
            labels.append(f"?{NAMES[name]}")
        elif name == NO_NAME:
            labels.append(f"→{COLOURS[attr]}")
        else:
            labels.append(f"{NAMES[name]}:{COLOURS[attr]}")
    return labels


def init_params(seed, d_model=16, d_k=16, d_v=16):
    """Starting parameters: embeddings with unit-variance token vectors, projections scaled 1/√fan-in.

    The two embedding tables are drawn with variance 1/2 each, so their sum (a token
    vector) has entries of variance about 1, and a query or key entry too.
    """
    rng = np.random.default_rng(seed)
    return {
        "E_name": rng.normal(0.0, np.sqrt(0.5), size=(N_NAME_IDS, d_model)),
        "E_attr": rng.normal(0.0, np.sqrt(0.5), size=(N_ATTR_IDS, d_model)),
        "W_Q": rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(d_model, d_k)),
        "W_K": rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(d_model, d_k)),
        "W_V": rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(d_model, d_v)),
        "W_out": rng.normal(0.0, 1.0 / np.sqrt(d_v), size=(d_v, N_CLASSES)),
    }


PARAM_NAMES = ("E_name", "E_attr", "W_Q", "W_K", "W_V", "W_out")


def fit(model_backward, adam_step, params, data, steps, lr=0.01, batch_size=64, seed=0):
    """The bare training loop the grader uses to retrain a model: Adam on random minibatches.

    The lesson's ``train`` does the same steps (same minibatches for the same ``seed``) and
    adds a progress bar and held-out evaluation. Returns the trained parameters (a new dict).
    """
    rng = np.random.default_rng(seed)
    params = {k: np.array(v, dtype=np.float64) for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    n = len(data["names"])
    for t in range(1, steps + 1):
        batch = take(data, rng.integers(0, n, size=batch_size))
        _, grads = model_backward(params, batch)
        for k in PARAM_NAMES:
            params[k], m[k], v[k] = adam_step(params[k], grads[k], m[k], v[k], t, lr=lr)
    return params


# ---------------------------------------------------------------- pictures of the lesson

def plot_query_rows(weights_by_title, data, indices, n_items=None):
    """One bar chart per (stage, example): how the query splits its attention over the tokens.

    ``weights_by_title`` maps a row title (e.g. "before training") to attention weights
    ``(n, T, T)`` for ``data``; the bar of the item holding the answer is orange.
    """
    import matplotlib.pyplot as plt

    q = N_ITEMS if n_items is None else n_items
    rows, cols = len(weights_by_title), len(indices)
    fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 2.9 * rows), squeeze=False)
    for r, (title, A) in enumerate(weights_by_title.items()):
        for c, i in enumerate(indices):
            ax = axes[r, c]
            labels = token_labels(data, i)[: A.shape[-1]]
            shares = A[i, q, : len(labels)]
            colours = ["tab:blue"] * len(labels)
            colours[data["answer_pos"][i]] = "tab:orange"
            bars = ax.bar(range(len(labels)), shares, color=colours)
            ax.bar_label(bars, labels=[f"{s:.2f}" for s in shares], padding=2, fontsize=8)
            ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", fontsize=8)
            ax.set_ylim(0, 1.15)
            ax.set_xlabel("token it reads (key)", fontsize=9)
            ax.set_ylabel("query's weight")
            ax.set_title(f"{title}: {labels[q]} reads…", fontsize=10)
    fig.suptitle("Where the query looks (orange: the item that holds the answer)")
    fig.tight_layout()
    return fig


def plot_training(history, goal_accuracy=0.95, goal_attention=0.8):
    """Training loss per step (log scale) and held-out accuracy / attention on the answer."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    left.semilogy(np.arange(1, len(history["loss"]) + 1), history["loss"], lw=1)
    left.set_xlabel("training step")
    left.set_ylabel("cross-entropy (minibatch, log scale)")
    left.set_title("Training loss")
    right.plot(history["step"], history["accuracy"], label="held-out accuracy")
    right.plot(history["step"], history["on_answer"], label="query's weight on the answer item")
    right.axhline(goal_accuracy, color="tab:blue", ls=":", lw=1, label=f"goal {goal_accuracy}")
    right.axhline(goal_attention, color="tab:orange", ls=":", lw=1, label=f"goal {goal_attention}")
    right.set_ylim(0, 1.02)
    right.set_xlabel("training step")
    right.set_ylabel("fraction / weight")
    right.set_title("On held-out sequences")
    right.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_runs(histories, threshold=0.9):
    """Loss curves and held-out accuracy curves of several runs, one colour per run."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    for label, history in histories.items():
        steps = np.arange(1, len(history["loss"]) + 1)
        smooth = np.convolve(history["loss"], np.ones(10) / 10, mode="valid")
        line, = left.semilogy(steps[9:], smooth, lw=1.2, label=label)
        right.plot(history["step"], history["accuracy"], lw=1.2, color=line.get_color(), label=label)
    left.set_xlabel("training step")
    left.set_ylabel("training loss (10-step mean, log scale)")
    left.set_title("Training loss: what the optimiser sees")
    right.axhline(threshold, color="grey", ls=":", lw=1)
    right.set_ylim(0, 1.02)
    right.set_xlabel("training step")
    right.set_ylabel("held-out accuracy (answer not in the input)")
    right.set_title("Held-out accuracy: what the model can do")
    right.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    return fig
