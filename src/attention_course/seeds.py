"""The worked examples of the source articles, returned as fresh float64 arrays.

Numbers the articles *quote* (rounded weights, outputs) are kept beside their inputs
so a lesson can show that it reproduces them; every other number is computed.
"""
import numpy as np


def cat_dog_phone():
    """Seed 001: three 2-D token vectors; cat and dog are close, phone is off on its own."""
    X = np.array([[1.0, 0.5],
                  [0.8, 0.6],
                  [-0.5, 1.0]])
    return X, ["cat", "dog", "phone"]


#: Seed 001 quotes cat's attention weights and its new vector, rounded.
CAT_WEIGHTS_QUOTED = (0.432, 0.389, 0.179)
CAT_OUTPUT_QUOTED = (0.654, 0.628)


def bank_mortgage_scores():
    """Seed 003: already-scaled scores of the query at "mortgage" for the five visible tokens."""
    return np.array([0.2, 2.4, 1.1, 0.3, 0.5]), ["The", "bank", "approved", "my", "mortgage"]


#: Seed 003 quotes the softmax of those scores to three decimals.
BANK_MORTGAGE_SHARES_QUOTED = (0.067, 0.604, 0.165, 0.074, 0.090)


def three_positions():
    """Seed 000: three positions, two dimensions, hand-picked projections (row form)."""
    X = np.array([[1.0, 0.0],
                  [0.0, 1.0],
                  [1.0, 1.0]])
    W_Q = np.eye(2)
    W_K = np.array([[1.0, 1.0],
                    [0.0, 1.0]])
    W_V = np.array([[2.0, 0.0],
                    [0.0, 1.0]])
    return X, W_Q, W_K, W_V


#: Seed 000 quotes row 2 (index 1) of the weights and its output, full and causal.
ROW2_WEIGHTS_QUOTED = (0.248255, 0.248255, 0.503490)
ROW2_OUTPUT_QUOTED = (1.503490, 0.751745)
ROW2_CAUSAL_WEIGHTS_QUOTED = (0.5, 0.5, 0.0)
ROW2_CAUSAL_OUTPUT_QUOTED = (1.0, 0.5)


def the_cat_sat_it():
    """Seed 004: "The cat sat it" with C = 3, one head of width d = 2."""
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


#: Seed 004 prints the causal weight matrix and outputs to three decimals.
IT_WEIGHTS_QUOTED = ((1.0, 0.0, 0.0, 0.0),
                     (0.007, 0.993, 0.0, 0.0),
                     (0.164, 0.164, 0.673, 0.0),
                     (0.127, 0.559, 0.136, 0.178))
IT_OUTPUTS_QUOTED = ((1.0, 0.0), (0.007, 0.993), (0.5, 0.5), (0.23, 0.681))


def raw_mixing_example():
    """Seed 000: scores (2, 1) and (102, 101) on the scalar values (10, 20)."""
    return np.array([2.0, 1.0]), np.array([102.0, 101.0]), np.array([10.0, 20.0])


#: Seed 000 quotes the raw mixes 40 and 3040 and the softmax read ≈ 12.689414 for both.
RAW_MIXES_QUOTED = (40.0, 3040.0)
SOFTMAX_READ_QUOTED = 12.689414


#: Seed 000 quotes the queries, keys and values of its three-position example (row form) ...
THREE_POSITIONS_Q_QUOTED = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
THREE_POSITIONS_K_QUOTED = ((1.0, 1.0), (0.0, 1.0), (1.0, 2.0))
THREE_POSITIONS_V_QUOTED = ((2.0, 0.0), (0.0, 1.0), (2.0, 1.0))
#: ... every dot product Q Kᵀ, and row 2's scaled scores to six decimals.
THREE_POSITIONS_SCORES_QUOTED = ((1.0, 0.0, 1.0), (1.0, 1.0, 2.0), (2.0, 1.0, 3.0))
ROW2_SCALED_SCORES_QUOTED = (0.707107, 0.707107, 1.414214)

#: Seed 004 quotes the raw scores of "it" against The, cat, sat, it to two decimals.
IT_SCORES_QUOTED = (0.30, 2.40, 0.40, 0.78)

#: Seed 000 quotes softmax([2, 1]) = softmax([102, 101]) to six decimals.
RAW_MIX_WEIGHTS_QUOTED = (0.731059, 0.268941)


# ---- Lesson 06: seed 004's table of Llama 3 head figures (all public) ----

#: Width of one attention head, d_h, in both Llama 3 models of seed 004's table.
LLAMA3_HEAD_DIM = 128
#: Llama 3 8B: query heads and key/value heads per layer (grouped-query attention).
LLAMA3_8B_QUERY_HEADS = 32
LLAMA3_8B_KV_HEADS = 8
#: Llama 3.1 405B: query heads and key/value heads per layer.
LLAMA31_405B_QUERY_HEADS = 128
LLAMA31_405B_KV_HEADS = 8
#: Context length as the seed writes it: 8k at release, 128k after the 3.1 update; 128k for 405B.
LLAMA3_8B_CONTEXT_QUOTED = ("8k", "128k")
LLAMA31_405B_CONTEXT_QUOTED = ("128k",)
#: Llama's "k" of context is 1024 tokens: 8k = 8,192 and 128k = 131,072 positions.
LLAMA_CONTEXT_K = 1024
#: Seed 004 quotes the model widths C = 4096 and 16384 (heads × d_h = C, it says).
LLAMA3_8B_WIDTH_QUOTED = 4096
LLAMA31_405B_WIDTH_QUOTED = 16384


def llama3_heads():
    """Seed 004's Llama 3 head figures as one dict per model (a fresh copy on every call)."""
    return {
        "Llama 3 8B": {"head_dim": LLAMA3_HEAD_DIM, "query_heads": LLAMA3_8B_QUERY_HEADS,
                       "kv_heads": LLAMA3_8B_KV_HEADS, "context": LLAMA3_8B_CONTEXT_QUOTED,
                       "width": LLAMA3_8B_WIDTH_QUOTED},
        "Llama 3.1 405B": {"head_dim": LLAMA3_HEAD_DIM, "query_heads": LLAMA31_405B_QUERY_HEADS,
                           "kv_heads": LLAMA31_405B_KV_HEADS, "context": LLAMA31_405B_CONTEXT_QUOTED,
                           "width": LLAMA31_405B_WIDTH_QUOTED},
    }


# ---- Lesson 08: seed 004's arithmetic for the score matrix of one long context ----

#: The context length of seed 004's arithmetic: it writes 128,000 tokens (not 128 × 1024).
LONG_CONTEXT_TOKENS = 128_000
#: Bytes per stored score (a 16-bit float) and the number of heads the seed multiplies by.
SCORE_BYTES_PER_ENTRY = 2
LONG_CONTEXT_HEADS = 32
#: Seed 004 quotes T² ≈ 1.6 × 10¹⁰ entries and 3.3 × 10¹⁰ bytes ≈ 33 GB per head, per layer ...
SCORE_ENTRIES_QUOTED = 1.6e10
SCORE_BYTES_PER_HEAD_QUOTED = 3.3e10
SCORE_GB_PER_HEAD_QUOTED = 33
#: ... and, for 32 heads, ≈ 1 TB per layer for one forward pass.
SCORE_TB_PER_LAYER_QUOTED = 1
#: "A top GPU holds 80–192 GB of memory in total."
GPU_MEMORY_GB_QUOTED = (80, 192)


# ---- Lesson 07: seed 004's "what if" list ----

#: Seed 004: "With d = 128, raw scores have spread about 11" (unscaled q·k of unit-variance vectors).
UNSCALED_SPREAD_WIDTH = 128
UNSCALED_SPREAD_QUOTED = 11
