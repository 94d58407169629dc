"""Stand-ins lent for earlier lessons' functions (``Spec.lent``), and numpy Generators on the wire.

Lesson 09 asks the learner to paste functions of lessons 05 and 06 that no test of its own grades
(``multi_head_attention`` and its helpers); its graded functions call them. During their hidden
tests the grader lends the reference's versions from the first call, so a mistake left in a pasted
function costs nothing there, within the same limits as any stand-in. ``sample_next`` takes a
Generator, which crosses the wire by its state; a stand-in that draws from it moves the caller's
generator on. These tests run the grader's conversation in this process (``run_locally``).
"""
import dataclasses

import nbformat
import numpy as np
import pytest

from attention_grading.hidden import kernel_probe
from attention_grading.hidden.conversation import ConversationLimits
from attention_grading.hidden.in_process import run_locally
from attention_grading.hidden.reference import reference
from attention_grading.hidden.registry import get
from conftest import ROOT
from hidden_in_process import without_memory_judgement
from notebook_tools import grade_id, is_solution_code

LESSON = "09_small_gpt"


def namespace(**replaced):
    """The solution's functions of lesson 09, defined in a fresh namespace, with some replaced."""
    nb = nbformat.read(ROOT / "solutions" / LESSON / f"{LESSON}.ipynb", as_version=4)
    space = {"np": np, "__name__": "lesson"}
    for cell in nb.cells:
        if is_solution_code(cell):
            exec(replaced.get(grade_id(cell), cell.source), space)
    return space


WRONG_MHA = '''
def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    X = np.asarray(X, dtype=float)
    return X @ W_V @ W_O, np.zeros(X.shape[:-2] + (n_heads, X.shape[-2], X.shape[-2]))
'''


def verdict(name, space, spec=None, seed=0):
    """The judge's verdict on ``space``'s ``name``, in this process. Not on its memory: measured
    here, it moves with what the session's background runs allocate beside the call (lending is
    what these tests are about; tests/test_requirements.py judges memory in a fresh interpreter)."""
    spec = without_memory_judgement(spec or get(name))
    return run_locally(spec, reference(), space, np.random.default_rng(seed))


def test_the_solution_passes_every_hidden_test_of_the_lesson():
    space = namespace()
    for name in ("positional_encoding", "layer_norm", "layer_norm_backward", "transformer_block", "sample_next",
                 "generate"):
        result = verdict(name, space)
        assert result.passed, (name, result.message)


def test_a_wrong_pasted_function_of_an_earlier_lesson_costs_nothing():
    """transformer_block and generate keep their points when the pasted multi_head_attention,
    split_heads and merge_heads are wrong: the grader lends correct ones from the first call."""
    space = namespace(multi_head_attention=WRONG_MHA,
                      split_heads="def split_heads(X, n_heads):\n    return np.zeros(3)\n",
                      merge_heads="def merge_heads(H):\n    raise ValueError('no')\n")
    for name in ("transformer_block", "generate"):
        result = verdict(name, space)
        assert result.passed, (name, result.message)
    # Without the loan the same submission fails: the lending is what protects it.
    unlent = dataclasses.replace(get("transformer_block"), lent=())
    assert not verdict("transformer_block", space, unlent).passed


def test_wrong_earlier_exercises_of_this_lesson_cost_nothing_later():
    space = namespace(layer_norm="def layer_norm(x, gamma, beta, eps=1e-5):\n    return np.asarray(x, float)\n",
                      positional_encoding="def positional_encoding(T, d):\n    return np.zeros((T, d))\n",
                      sample_next="def sample_next(logits, temperature, top_k, rng):\n    return 0\n")
    assert not verdict("layer_norm", space).passed
    for name in ("transformer_block", "generate"):
        result = verdict(name, space)
        assert result.passed, (name, result.message)


MAX_AXIS, MAX_REQUESTS = ConversationLimits().max_axis, ConversationLimits().max_requests


@pytest.mark.parametrize("attack, words", [
    (f"multi_head_attention(np.ones(({MAX_AXIS + 1}, 4)), np.eye(4), np.eye(4), np.eye(4), np.eye(4), 1)",
     "called multi_head_attention with `X` of an axis longer than"),
    pytest.param(f"[multi_head_attention(x[..., :1, :], p['W_Q'], p['W_K'], p['W_V'], p['W_O'], p['n_heads']) "
                 f"for _ in range({MAX_REQUESTS + 1})]", "called the grader's stand-ins for more than",
                 marks=pytest.mark.full),     # thousands of calls answered: several seconds
])
def test_lent_stand_ins_keep_the_limits_of_every_stand_in(attack, words):
    """A submission cannot make the grader compute something huge, or long, through a lent function:
    its calls are bounded by the test's own cases (in size, and in the grader's time)."""
    block = f'''
def transformer_block(x, params, mask):
    p = params
    {attack}
    return x, None
'''
    result = verdict("transformer_block", namespace(transformer_block=block))
    assert not result.passed and words in result.message, result.message


def test_a_lent_sampler_moves_the_callers_generator_on():
    """generate calls the grader's sample_next with its own rng: the stand-in draws in the grader and
    hands the generator's new state back, so the caller's rng moves on as if it had drawn itself
    (and the tokens are those the reference draws from the same seed: the test passes)."""
    space = namespace()
    solution_generate, moved = space["generate"], []

    def generate(params, prompt, n_new, temperature=1.0, top_k=None, rng=None):
        if rng is None:                   # the case where generate makes its own generator
            return solution_generate(params, prompt, n_new, temperature, top_k, rng)
        before = rng.bit_generator.state["state"]["state"]
        out = solution_generate(params, prompt, n_new, temperature, top_k, rng)
        moved.append(rng.bit_generator.state["state"]["state"] != before)
        return out

    space["generate"] = generate
    result = verdict("generate", space)
    assert result.passed, result.message
    assert moved and all(moved), moved


def test_a_test_that_may_not_call_a_lent_function_gets_no_stand_in():
    """positional_encoding's test lends nothing: a submission asking for multi_head_attention there,
    or sending the grader a forged generator, is refused with a reason and gains nothing."""
    from attention_grading.hidden.calls import plan_calls
    from attention_grading.hidden.conversation import Conversation

    spec = get("positional_encoding")
    cases = spec.cases(np.random.default_rng(0))
    batches, callbacks, extra, _ = plan_calls(spec, cases, np.random.default_rng(0))
    talk = Conversation(spec, reference(), batches, callbacks, completed=set(), cases_batches=len(cases))
    talk.reply({"op": "ready"})
    refused = talk.reply({"op": "substitute", "key": "multi_head_attention", "args": [], "kwargs": {}})
    assert "called multi_head_attention, which is not available in this test" in refused["error"]
    transformer = get("transformer_block")
    lent = Conversation(transformer, reference(), *plan_calls(transformer, [], np.random.default_rng(0))[:2],
                        completed=set(), cases_batches=0)
    lent.reply({"op": "ready"})
    forged = lent.reply({"op": "substitute", "key": "multi_head_attention",
                         "args": [{"generator": {"state": "not a number"}}], "kwargs": {}})
    assert "cannot receive" in forged["error"], forged


def test_a_generate_without_a_cache_fails_for_its_cache_never_for_the_graders_call_limit():
    """A generate that recomputes every token at every step, one query at a time (no cache, and no
    (T, T) array for the memory check to see), asks the grader's stand-ins for every token's layer
    norms at every step: on the hidden cases that is a few thousand calls in all, far below the grader's
    limit, and the token rows they were handed show it reruns what it already processed. The
    verdict says so on the first case, whatever the draw; the measurements (where its stand-in
    calls would grow with the square of the length) run only once every case has passed."""
    import catalogue
    from attention_grading.hidden.calls import plan_calls
    from attention_grading.hidden.conversation import Conversation
    from attention_grading.hidden.decide import decide

    answer = catalogue.load(LESSON).WRONG["generate"]["recomputes_every_token_without_cache"]
    spec = without_memory_judgement(get("generate"))
    for seed in range(3):
        cases = spec.cases(np.random.default_rng(seed))
        batches, callbacks, extra, _ = plan_calls(spec, cases, np.random.default_rng(seed))
        talk = Conversation(spec, reference(), batches, callbacks, spec.substitutes, len(cases), extra)
        kernel_probe.serve(namespace(generate=answer), talk.reply)
        result = decide(spec, reference(), cases, talk)
        assert not result.passed and result.case == cases[0].label, result.message
        assert "it reruns the tokens already processed" in result.message, result.message
        assert "at most 20000" not in result.message and talk.requests < ConversationLimits().max_requests / 4
