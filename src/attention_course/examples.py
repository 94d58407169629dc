"""The course's worked examples, returned as fresh float64 arrays.

They come from five articles on attention, credited in lesson 01 and on the lessons page (docs/lessons/index.md):

- "How Does a Token Read Its Context?" (First Principles of LLMs & RL, article 06): the
  three-position example, the index cards, raw mixing against softmax;
- "Attention: Turning Token Vectors into Context Vectors": cat, dog and phone;
- "What each token asks the others for: queries, keys and values": people, posters and synopses;
- "Attention: How Each Token Decides Which Other Tokens Matter": the bank/mortgage scores;
- "How a token reads its context: queries, keys, values, and a weighted sum": the "it" sentence,
  the reception, Llama 3's head figures and the memory of a 128,000-token context.

Numbers an article *quotes* (rounded weights, outputs) are kept beside their inputs, named
``..._QUOTED``, so a lesson can show that it reproduces them; every other number is computed.
"""
import numpy as np


def cat_dog_phone():
    """Three 2-D token vectors: cat and dog are close, phone is off on its own."""
    X = np.array([[1.0, 0.5],
                  [0.8, 0.6],
                  [-0.5, 1.0]])
    return X, ["cat", "dog", "phone"]


#: Cat's attention weights and its new vector, as the cat/dog/phone article rounds them.
CAT_WEIGHTS_QUOTED = (0.432, 0.389, 0.179)
CAT_OUTPUT_QUOTED = (0.654, 0.628)


def bank_mortgage_scores():
    """Already-scaled scores of the query at "mortgage" for the five tokens it can see."""
    return np.array([0.2, 2.4, 1.1, 0.3, 0.5]), ["The", "bank", "approved", "my", "mortgage"]


#: The softmax of those scores, to three decimals, as the bank/mortgage article quotes it.
BANK_MORTGAGE_SHARES_QUOTED = (0.067, 0.604, 0.165, 0.074, 0.090)


def three_positions():
    """Three positions, two dimensions, hand-picked projections (row form)."""
    X = np.array([[1.0, 0.0],
                  [0.0, 1.0],
                  [1.0, 1.0]])
    W_Q = np.eye(2)
    W_K = np.array([[1.0, 1.0],
                    [0.0, 1.0]])
    W_V = np.array([[2.0, 0.0],
                    [0.0, 1.0]])
    return X, W_Q, W_K, W_V


#: Row 2 (index 1) of the three-position example: its weights and its output, full and causal.
ROW2_WEIGHTS_QUOTED = (0.248255, 0.248255, 0.503490)
ROW2_OUTPUT_QUOTED = (1.503490, 0.751745)
ROW2_CAUSAL_WEIGHTS_QUOTED = (0.5, 0.5, 0.0)
ROW2_CAUSAL_OUTPUT_QUOTED = (1.0, 0.5)


def the_cat_sat_it():
    """The "it" sentence cut to four tokens, "The cat sat it": width C = 3, one head of width d = 2."""
    X = np.array([[1.0, 0.0, 0.0],
                  [0.0, 1.0, 0.0],
                  [0.0, 0.0, 1.0],
                  [0.2, 0.3, 0.0]])
    W_Q = np.array([[0.0, 1.0],
                    [2.0, 0.0],
                    [0.0, 1.0]])
    W_K = np.array([[0.5, 0.0],
                    [4.0, 0.0],
                    [0.0, 2.0]])
    W_V = np.array([[1.0, 0.0],
                    [0.0, 1.0],
                    [0.5, 0.5]])
    return X, W_Q, W_K, W_V, ["The", "cat", "sat", "it"]


#: The causal weight matrix and outputs of the "it" sentence, printed to three decimals.
IT_WEIGHTS_QUOTED = ((1.0, 0.0, 0.0, 0.0),
                     (0.007, 0.993, 0.0, 0.0),
                     (0.164, 0.164, 0.673, 0.0),
                     (0.127, 0.559, 0.136, 0.178))
IT_OUTPUTS_QUOTED = ((1.0, 0.0), (0.007, 0.993), (0.5, 0.5), (0.23, 0.681))


def raw_mixing_example():
    """Two candidates with scores (2, 1), then (102, 101), and the scalar values (10, 20)."""
    return np.array([2.0, 1.0]), np.array([102.0, 101.0]), np.array([10.0, 20.0])


#: The raw mixes 40 and 3040, and the softmax read ≈ 12.689414 that both pairs of scores give.
RAW_MIXES_QUOTED = (40.0, 3040.0)
SOFTMAX_READ_QUOTED = 12.689414


#: The queries, keys and values of the three-position example (row form) ...
THREE_POSITIONS_Q_QUOTED = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
THREE_POSITIONS_K_QUOTED = ((1.0, 1.0), (0.0, 1.0), (1.0, 2.0))
THREE_POSITIONS_V_QUOTED = ((2.0, 0.0), (0.0, 1.0), (2.0, 1.0))
#: ... every dot product Q Kᵀ, and row 2's scaled scores to six decimals.
THREE_POSITIONS_SCORES_QUOTED = ((1.0, 0.0, 1.0), (1.0, 1.0, 2.0), (2.0, 1.0, 3.0))
ROW2_SCALED_SCORES_QUOTED = (0.707107, 0.707107, 1.414214)

#: The raw scores of "it" against The, cat, sat, it, to two decimals.
IT_SCORES_QUOTED = (0.30, 2.40, 0.40, 0.78)

#: softmax([2, 1]) = softmax([102, 101]) to six decimals.
RAW_MIX_WEIGHTS_QUOTED = (0.731059, 0.268941)


# ---- Lesson 06: the table of Llama 3 head figures (all public) ----

#: Width of one attention head, d_h, in both Llama 3 models of the table.
LLAMA3_HEAD_DIM = 128
#: Llama 3 8B: query heads and key/value heads per layer (grouped-query attention).
LLAMA3_8B_QUERY_HEADS = 32
LLAMA3_8B_KV_HEADS = 8
#: Llama 3.1 405B: query heads and key/value heads per layer.
LLAMA31_405B_QUERY_HEADS = 128
LLAMA31_405B_KV_HEADS = 8
#: Context length as the table writes it: 8k at release, 128k after the 3.1 update; 128k for 405B.
LLAMA3_8B_CONTEXT_QUOTED = ("8k", "128k")
LLAMA31_405B_CONTEXT_QUOTED = ("128k",)
#: Llama's "k" of context is 1024 tokens: 8k = 8,192 and 128k = 131,072 positions.
LLAMA_CONTEXT_K = 1024
#: Llama 3's long context in tokens, the "128k" of the table: 128 × 1024 = 131,072.
LLAMA3_LONG_CONTEXT_TOKENS = 128 * LLAMA_CONTEXT_K
#: The model widths C = 4096 and 16384 (heads × d_h = C, the table's article says).
LLAMA3_8B_WIDTH_QUOTED = 4096
LLAMA31_405B_WIDTH_QUOTED = 16384


def llama3_heads():
    """Llama 3's head figures as one dict per model (a fresh copy on every call)."""
    return {
        "Llama 3 8B": {"head_dim": LLAMA3_HEAD_DIM, "query_heads": LLAMA3_8B_QUERY_HEADS,
                       "kv_heads": LLAMA3_8B_KV_HEADS, "context": LLAMA3_8B_CONTEXT_QUOTED,
                       "width": LLAMA3_8B_WIDTH_QUOTED},
        "Llama 3.1 405B": {"head_dim": LLAMA3_HEAD_DIM, "query_heads": LLAMA31_405B_QUERY_HEADS,
                           "kv_heads": LLAMA31_405B_KV_HEADS, "context": LLAMA31_405B_CONTEXT_QUOTED,
                           "width": LLAMA31_405B_WIDTH_QUOTED},
    }


# ---- Lesson 08: the arithmetic for the score matrix of one long context ----

#: The context length of the memory arithmetic: the article writes 128,000 tokens (not 128 × 1024).
LONG_CONTEXT_TOKENS = 128_000
#: Bytes per stored score (a 16-bit float) and the number of heads the article multiplies by.
SCORE_BYTES_PER_ENTRY = 2
LONG_CONTEXT_HEADS = 32
#: The article quotes T² ≈ 1.6 × 10¹⁰ entries and 3.3 × 10¹⁰ bytes ≈ 33 GB per head, per layer ...
SCORE_ENTRIES_QUOTED = 1.6e10
SCORE_BYTES_PER_HEAD_QUOTED = 3.3e10
SCORE_GB_PER_HEAD_QUOTED = 33
#: ... and, for 32 heads, ≈ 1 TB per layer for one forward pass.
SCORE_TB_PER_LAYER_QUOTED = 1
#: "A top GPU holds 80–192 GB of memory in total."
GPU_MEMORY_GB_QUOTED = (80, 192)


# ---- Lesson 07: the "what if" list ----

#: "With d = 128, raw scores have spread about 11" (unscaled q·k of unit-variance vectors).
UNSCALED_SPREAD_WIDTH = 128
UNSCALED_SPREAD_QUOTED = 11
