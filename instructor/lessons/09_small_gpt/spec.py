"""Hidden tests of lesson 09: ``positional_encoding``, ``layer_norm``, ``layer_norm_backward``,
``transformer_block``, ``sample_next`` and ``generate``.

The catalogued mistakes are computed from the same definitions as the visible checks
(``attention_course.gpt_checks``), so both name a mistake alike, and only when the evidence
singles it out (``judge.likely_bug``); a wrong form is told in the visible checks' words
(``attention_course.forms``). Everything is drawn from the generator each test is given: sizes,
widths (odd ones included), models, prompts, seeds; a case's label describes it without its
numbers. Two tests go beyond comparing one output:

- ``sample_next`` draws at random, so the grader (``sampling_driver``, outside the learner's
  reach) has it called a few thousand times with one seeded Generator, twice with the same seed
  (as the learner package's ``draw_samples`` does); the judge tests the counts against the reference distribution
  (a catalogued mistake is named when the counts fit its distribution and no other's), and the
  two runs against each other (the draws must come from the ``rng`` given);
- ``generate`` gets a Generator too (it crosses the wire by its state); ``sample_next`` is lent,
  so the tokens it draws are determined by the logits it is handed: they and the logits must be
  those of the reference, which recomputes the whole causal pass. Extra calls at two lengths let
  the grader measure, from outside the kernel, the memory each takes: a generator that reruns
  the whole sequence at every step builds a (T, T) matrix per layer and head, which a KV cache
  never does.
"""
import numpy as np

from attention_course import gpt_checks as mistake

from ..spec import Bug, Case, Spec, register
from .lesson09_common import LENT, _gpt, block_params  # noqa: F401  (block_params: the tests' too)
# sample_next's and generate's tests, each in its module; registered below, in the lesson's order
# (their names are read from here by the tests too)
from .lesson09_generation import (  # noqa: F401
    GENERATE_MISTAKES, GENERATE_SPEC, MEMORY_HEADS, MEMORY_PROMPT, _generate_variant, generate_memory_calls,
    judge_generate_memory, model_params)
from .lesson09_sampling import DRAWS, SAMPLE_NEXT_SPEC, SIGMAS, sampling_driver  # noqa: F401


# ---------------------------------------------------------------- positional_encoding

def positional_encoding_cases(g):
    def size(low, high):
        return int(g.integers(low, high))

    return [
        Case("an even width d (4 to 8) and T from 4 to 8", (size(4, 9), 2 * size(2, 5))),
        Case("an odd width d (5 to 11)", (size(3, 8), 2 * size(2, 6) + 1)),
        Case("a long sequence (T from 60 to 129)", (size(60, 130), 2 * size(4, 9))),
        Case("d = 1 (one sine column)", (size(3, 7), 1)),
        Case("T = 1", (1, size(3, 12))),
        Case("a small odd width (d = 3 or 5)", (size(9, 20), 2 * size(1, 3) + 1)),
        Case("T and d given as numpy integers", (np.int64(size(5, 9)), np.int64(2 * size(2, 4)))),
    ]


register(Spec(
    name="positional_encoding",
    cases=positional_encoding_cases,
    outputs=("PE",),
    rtol=1e-9,
    atol=1e-12,
    bugs=(
        Bug("sine and cosine are swapped: even columns take the sine, odd columns the cosine",
            lambda R, T, d: mistake.sinusoids(T, d, swap=True)),
        Bug("the frequency of column j uses j / d instead of 2⌊j/2⌋ / d, so a sine and its cosine do "
            "not share one frequency", lambda R, T, d: mistake.sinusoids(T, d, exponent=lambda j, d: j / d)),
        Bug("the sines fill the first half of the columns and the cosines the second, instead of "
            "alternating column by column", lambda R, T, d: mistake.sinusoids(T, d, halves=True)),
        Bug("positions start at 1 instead of 0", lambda R, T, d: mistake.sinusoids(T, d, start=1)),
        Bug("the frequencies are 10000^(+2⌊j/2⌋/d) instead of 10000^(−2⌊j/2⌋/d)",
            lambda R, T, d: mistake.sinusoids(T, d, sign=1.0)),
    ),
))


# ---------------------------------------------------------------- layer_norm

def _ln_inputs(g, shape, offset=0.0, spread=1.0):
    d = shape[-1]
    return (offset + spread * g.normal(size=shape), 1.0 + 0.5 * g.normal(size=d), g.normal(size=d))


def layer_norm_cases(g):
    d = int(g.integers(3, 9))
    constant = _ln_inputs(g, (4, d))
    constant[0][2] = float(g.normal())                    # a row with no spread at all
    return [
        Case("x of shape (5, d)", _ln_inputs(g, (5, d))),
        Case("one row x of shape (d,)", _ln_inputs(g, (d + 2,))),
        Case("a batch x of shape (2, 3, d)", _ln_inputs(g, (2, 3, d), spread=3.0)),
        Case("x of shape (4, d) with eps = 0.1 (the place of eps matters)",
             _ln_inputs(g, (4, d), spread=0.5), {"eps": 0.1}),
        Case("x of shape (4, d) where row 2 is constant (variance 0)", constant),
        Case("rows of x (3, d) with a common offset of 1e6 and spread 1 (subtract the mean before squaring)",
             _ln_inputs(g, (3, d), offset=1e6)),
        Case("rows of x (3, d) with a tiny spread (1e-3) and eps = 1e-3", _ln_inputs(g, (3, d), spread=1e-3),
             {"eps": 1e-3}),
        Case("integer x of shape (3, 4) with integer gamma and beta",
             (g.integers(-5, 6, size=(3, 4)), g.integers(1, 3, size=4), g.integers(-2, 3, size=4))),
        Case("two batch dimensions, x of shape (2, 2, 3, 6)", _ln_inputs(g, (2, 2, 3, 6))),
    ]


def _ln_bug(**how):
    return lambda R, x, gamma, beta, eps=1e-5: mistake.layer_norm_variant(x, gamma, beta, eps, **how)


register(Spec(
    name="layer_norm",
    cases=layer_norm_cases,
    outputs=("y",),
    rtol=1e-7,
    atol=1e-9,
    bugs=(
        Bug("the mean and variance are taken over the first axis (down the columns) instead of over "
            "each row's last axis", _ln_bug(axis=0)),
        Bug("eps is added outside the square root, √σ² + eps, instead of inside, √(σ² + eps)",
            _ln_bug(eps_place="outside")),
        Bug("eps is left out, so a constant row divides 0 by 0", _ln_bug(eps_place="none")),
        Bug("the variance is the unbiased one (divided by d − 1); layer norm uses the plain mean of "
            "the squared deviations (divided by d)", _ln_bug(ddof=1)),
        Bug("the variance is computed as mean(x²) − mean(x)², which loses every digit when the "
            "entries share a large offset: subtract the mean first", _ln_bug(naive=True)),
        Bug("gamma and beta are swapped (gamma scales, beta shifts)", _ln_bug(swap=True)),
        Bug("the eps passed in is not used (1e-5 every time)",
            lambda R, x, gamma, beta, eps=1e-5: mistake.layer_norm_variant(x, gamma, beta, 1e-5)),
    ),
))


# ---------------------------------------------------------------- layer_norm_backward

def layer_norm_backward_cases(g):
    def inputs(shape, spread=1.0):
        x, gamma, _ = _ln_inputs(g, shape, spread=spread)
        return (g.normal(size=shape), x, gamma)

    d = int(g.integers(3, 8))
    return [
        Case("x and dy of shape (5, d)", inputs((5, d))),
        Case("one row of d entries", inputs((d + 1,))),
        Case("a batch of shape (3, 4, d): dgamma and dbeta sum over both leading axes", inputs((3, 4, d))),
        Case("x of shape (4, d) with eps = 0.5", inputs((4, d), spread=0.7), {"eps": 0.5}),
        Case("two batch dimensions (2, 3, 2, 5)", inputs((2, 3, 2, 5), spread=4.0)),
        Case("integer dy, x and gamma of shape (3, 4)",
             (g.integers(-3, 4, size=(3, 4)), g.integers(-4, 5, size=(3, 4)), g.integers(1, 3, size=4))),
    ]


def _lnb_bug(**how):
    return lambda R, dy, x, gamma, eps=1e-5: mistake.layer_norm_backward_variant(dy, x, gamma, eps, **how)


register(Spec(
    name="layer_norm_backward",
    cases=layer_norm_backward_cases,
    outputs=("dx", "dgamma", "dbeta"),
    rtol=1e-7,
    atol=1e-10,
    bugs=(
        Bug("dx leaves out the term that comes through the variance, x̂ · mean(dx̂ ⊙ x̂)", _lnb_bug(project=False)),
        Bug("dx leaves out the term that comes through the mean, mean(dx̂)", _lnb_bug(centre=False)),
        Bug("dx treats the mean and the variance as constants: it is only γ ⊙ dy / √(σ² + eps)",
            _lnb_bug(centre=False, project=False)),
        Bug("dx forgets to multiply dy by gamma first (dx̂ = γ ⊙ dy)", _lnb_bug(use_gamma=False)),
        Bug("dgamma and dbeta are not summed over the leading axes (one per row is returned)",
            _lnb_bug(reduce=False)),
        Bug("dgamma multiplies dy by x instead of by the normalised x̂", _lnb_bug(gamma_times_x=True)),
        Bug("the eps passed in is not used (1e-5 every time)",
            lambda R, dy, x, gamma, eps=1e-5: mistake.layer_norm_backward_variant(dy, x, gamma, 1e-5)),
    ),
))


# ---------------------------------------------------------------- transformer_block

def transformer_block_cases(g):
    def causal(T):
        return np.tril(np.ones((T, T), dtype=bool))

    d = int(g.integers(5, 9))
    per_sentence = g.random((2, 5, 5)) < 0.7
    per_sentence[:, :, 0] = True
    return [
        Case("x of shape (6, d), 2 heads of width 3, d_hidden = 10, a causal mask",
             (3.0 * g.normal(size=(6, d)), block_params(g, d, 2, 3, 10), causal(6))),
        Case("x of shape (5, 8), 4 heads of width 2, d_hidden = 32, no mask",
             (g.normal(size=(5, 8)), block_params(g, 8, 4, 2, 32), None)),
        Case("a batch x of shape (3, 4, 6), 3 heads of width 2, one causal (4, 4) mask for all",
             (g.normal(size=(3, 4, 6)), block_params(g, 6, 3, 2, 12), causal(4))),
        Case("a batch x of shape (2, 5, 7), one head of width 5, a (2, 5, 5) mask per sequence",
             (2.0 * g.normal(size=(2, 5, 7)), block_params(g, 7, 1, 5, 9), per_sentence)),
        Case("two batch dimensions, x of shape (2, 3, 4, d), 2 heads of width 3, one causal (4, 4) mask for all",
             (g.normal(size=(2, 3, 4, d)), block_params(g, d, 2, 3, 8), causal(4))),
        Case("x of shape (4, 6) with entries of size 100 (layer norm keeps the scores tame), 2 heads",
             (100.0 * g.normal(size=(4, 6)) + 50.0, block_params(g, 6, 2, 3, 8), causal(4))),
        Case("x of shape (7, 9), 3 heads of width 3, d_hidden = 5 (narrower than d)",
             (g.normal(size=(7, 9)), block_params(g, 9, 3, 3, 5, spread=2.0), causal(7))),
        Case("integer x of shape (3, 4), 2 heads of width 2",
             (g.integers(-3, 4, size=(3, 4)), block_params(g, 4, 2, 2, 6), causal(3))),
    ]


def _block_variant(R, x, p, mask=None, *, norm="pre", attn_residual="x", mlp_residual=True, relu=True,
                   ln2_params="ln2", mlp_input="h2", use_mask=True, relu_after=False):
    G = _gpt(R)
    f = lambda k: np.asarray(p[k], dtype=np.float64)      # noqa: E731
    x = np.asarray(x, dtype=np.float64)
    n_heads = int(p["n_heads"])
    mask = mask if use_mask else None
    act = (lambda u: np.maximum(u, 0.0)) if relu else (lambda u: u)

    def mlp(h):
        u = h @ f("W_1") + f("b_1")
        if relu_after:
            return act(u @ f("W_2") + f("b_2"))
        return act(u) @ f("W_2") + f("b_2")

    g2, b2 = (f("ln1_gamma"), f("ln1_beta")) if ln2_params == "ln1" else (f("ln2_gamma"), f("ln2_beta"))
    if norm == "post":
        a, A = R.multi_head_attention(x, f("W_Q"), f("W_K"), f("W_V"), f("W_O"), n_heads, mask)
        x1 = G.layer_norm(x + a, f("ln1_gamma"), f("ln1_beta"))
        return G.layer_norm(x1 + mlp(x1), g2, b2), A
    h = G.layer_norm(x, f("ln1_gamma"), f("ln1_beta")) if norm == "pre" else x
    a, A = R.multi_head_attention(h, f("W_Q"), f("W_K"), f("W_V"), f("W_O"), n_heads, mask)
    x1 = {"x": x + a, "h": h + a, "none": a}[attn_residual]
    h2 = G.layer_norm(x1, g2, b2)
    m = mlp(h2 if mlp_input == "h2" else x1)
    y = (h2 + m if mlp_residual == "h2" else x1 + m) if mlp_residual else m
    return y, A


def _block_bug(**how):
    return lambda R, x, p, mask=None: _block_variant(R, x, p, mask, **how)


register(Spec(
    name="transformer_block",
    cases=transformer_block_cases,
    outputs=("y", "A"),
    rtol=1e-7,
    atol=1e-9,
    substitutes=("layer_norm",),
    lent=LENT,
    calls_required={"layer_norm": 2, "multi_head_attention": 1},
    bugs=(
        Bug("the block is post-norm (layer norm after each residual sum, as in the 2017 Transformer) "
            "where pre-norm is asked: normalise the input of each sub-layer, not its sum",
            _block_bug(norm="post")),
        Bug("the residual around attention adds the normalised h instead of the block's input x",
            _block_bug(attn_residual="h")),
        Bug("there is no residual around attention (x1 = attention output alone)",
            _block_bug(attn_residual="none")),
        Bug("there is no residual around the MLP (y = MLP output alone)", _block_bug(mlp_residual=False)),
        Bug("the residual around the MLP adds the normalised h2 instead of x1", _block_bug(mlp_residual="h2")),
        Bug("the MLP has no ReLU between its two layers", _block_bug(relu=False)),
        Bug("the ReLU is applied after the second layer of the MLP instead of between the two",
            _block_bug(relu_after=True)),
        Bug("the second layer norm uses ln1_gamma and ln1_beta", _block_bug(ln2_params="ln1")),
        Bug("the MLP reads x1 instead of the normalised h2 = layer_norm(x1)", _block_bug(mlp_input="x1")),
        Bug("the attention reads x itself, not layer_norm(x)", _block_bug(norm="none")),
        Bug("the mask is not passed to multi_head_attention", _block_bug(use_mask=False)),
    ),
))


# ---------------------------------------------------------------- sample_next and generate

register(SAMPLE_NEXT_SPEC)     # sampling.py
register(GENERATE_SPEC)        # generation.py
