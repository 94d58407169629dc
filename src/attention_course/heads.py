"""Lesson 06: a small hand-built multi-head example on the "it" sentence.

Nothing here computes attention: the lesson does that with the learner's own functions.
"""
import numpy as np

#: The "it" sentence, one token per word.
SENTENCE = "The cat sat on the mat because it was tired"

#: What each of the six columns of ``X`` means in :func:`three_heads_example`.
FEATURES = ("cos(θ·pos)", "sin(θ·pos)", "always 1", "noun", "animate", "pronoun")

#: A short description of what each hand-built head scores.
HEAD_NAMES = ("head 0: previous token", "head 1: pronoun → animate noun", "head 2: nouns")


def three_heads_example():
    """Ten tokens, ``d_model = 6``, three hand-built heads of width 2 (row form, float64).

    Columns of ``X`` (see :data:`FEATURES`): the position as a point on a circle (angle
    θ·pos with θ = 2π/16), a constant 1, and three word features. Head i uses columns
    ``2i:2i+2`` of ``W_Q``, ``W_K`` and ``W_V``:

    - head 0 rotates the position by one step, so position i's query lines up with the key of
      position i − 1 (a previous-token head);
    - head 1's query is non-zero only for a pronoun and its key only for an animate noun;
    - head 2's query is the same for every token and its key marks every noun.

    Each head hands over the (noun, animate) features of the tokens it reads. ``W_O`` is a fixed
    random matrix: the example is about the attention patterns, not about what gets written.
    Returns ``X, W_Q, W_K, W_V, W_O, n_heads, tokens``.
    """
    tokens = SENTENCE.split()
    T = len(tokens)
    theta = 2 * np.pi / 16
    pos = np.arange(T)
    is_noun = np.array([t in ("cat", "mat") for t in tokens], dtype=float)
    is_animate = np.array([t == "cat" for t in tokens], dtype=float)
    is_pronoun = np.array([t == "it" for t in tokens], dtype=float)
    X = np.column_stack([np.cos(theta * pos), np.sin(theta * pos), np.ones(T),
                         is_noun, is_animate, is_pronoun])                      # (T, 6)

    W_Q, W_K, W_V = np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((6, 6))
    # head 0 (columns 0:2): the query is the position turned back by one step θ
    c, s = np.cos(theta), np.sin(theta)
    W_Q[0:2, 0:2] = 8.0 * np.array([[c, -s], [s, c]])
    W_K[0:2, 0:2] = 8.0 * np.eye(2)
    # head 1 (columns 2:4): "I am a pronoun" meets "I am animate"
    W_Q[5, 2] = 6.0
    W_K[4, 2] = 1.0
    # head 2 (columns 4:6): everyone meets "I am a noun"
    W_Q[2, 4] = 5.0
    W_K[3, 4] = 1.0
    # every head hands over the (noun, animate) features of what it reads
    for i in range(3):
        W_V[3, 2 * i] = 1.0
        W_V[4, 2 * i + 1] = 1.0
    W_O = np.random.default_rng(6).normal(size=(6, 6)) / np.sqrt(6)
    return X, W_Q, W_K, W_V, W_O, 3, tokens
