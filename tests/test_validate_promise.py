"""Validate is a promise: an answer that passes every visible check keeps every hidden point.

- Over the catalogues of every lesson (tests/catalogue/): no WRONG entry passes the visible checks
  of its function and then loses points in that function's hidden test, and every CORRECT entry
  passes both (except the few ``VISIBLE_COMPLAINTS`` lists, which a visible check rightly rejects).
  The visible outcomes are the ones tests/test_visible_checks.py computes (``catalogue_outcomes``,
  one background run shared by both modules); the hidden verdicts come from the grader's own
  conversation in this process (tests/hidden_in_process.py), or in a fresh interpreter where the
  hidden test measures memory. The quick tier judges the sampled entries (``catalogue.entries``,
  ``sampled=True``) on one draw of hidden cases; the full tier every entry on three draws.
- Leading batch dimensions, none, one and two, wherever an exercise promises them: the reference
  solution made to refuse one of these forms fails a visible check and a hidden case alike.
- Values returned in another order (two of different shapes, or two of one shape: dgamma and dbeta)
  are told "the order is swapped" by a visible check and the hidden test in the same sentence, each
  value named, never numbered.
"""
import numpy as np
import pytest

import catalogue
from attention_grading.hidden import registry
from attention_grading.hidden.in_process import run_locally
from attention_grading.hidden.reference import reference
from conftest import ROOT, lesson_ids
from hidden_in_process import hidden_verdict, measured_verdict, namespace_with, without_memory_judgement
from test_visible_checks import catalogue_outcomes  # noqa: F401  (the shared background run)
from visible_checks import _quiet, layout, run_visible_checks

LESSONS = lesson_ids()


def _measures_memory(function):
    spec = registry.get(function)
    return spec.extra_calls is not None and any(call.memory for call in spec.extra_calls(np.random.default_rng(0)))


def _hidden(lesson, function, source, seed):
    """``(passed, message)`` of ``function``'s hidden test on ``source``, with cases drawn from ``seed``."""
    if _measures_memory(function):
        verdict = measured_verdict(lesson, function, source, seed)
        return verdict["passed"], verdict["message"]
    verdict = hidden_verdict(lesson, function, source, seed)
    return verdict.passed, verdict.message


def _selected(lesson, kind, full):
    """``{(function, entry)}`` judged in this tier."""
    return {(function, name) for function, entries in catalogue.entries(lesson, kind, sampled=not full).items()
            for name in entries}


@pytest.mark.parametrize("lesson", LESSONS)
def test_an_answer_that_passes_the_visible_checks_keeps_every_hidden_point(lesson, catalogue_outcomes, request):
    """No catalogued wrong answer passes the visible checks and loses hidden points; every correct
    answer passes both (a visible complaint about a correct answer is listed with its reason)."""
    full = request.config.getoption("--full")
    seeds = range(3) if full else range(1)
    module = catalogue.load(lesson)
    complaints = catalogue.visible_complaints(lesson)
    problems = []
    for kind in ("WRONG", "CORRECT"):
        chosen = _selected(lesson, kind, full)
        for function, name, outcome in catalogue_outcomes[kind].get(lesson, []):
            if (function, name) not in chosen:
                continue
            complained = name in complaints.get(function, {})
            if kind == "CORRECT" and outcome.failed and not complained:
                problems.append(f"CORRECT {function}.{name} fails a visible check: {outcome.message[:300]}")
            if outcome.failed and not (kind == "CORRECT" and complained):
                continue                           # the visible checks said so first
            source = getattr(module, kind)[function][name]
            for seed in seeds:
                passed, message = _hidden(lesson, function, source, seed)
                if not passed:
                    said = "passes every visible check" if not outcome.failed else "is correct"
                    problems.append(f"{kind} {function}.{name} {said} but loses hidden points "
                                    f"(cases of seed {seed}): {message[:300]}")
                    break
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- no, one and two batch dimensions

#: Functions whose exercise promises leading batch dimensions: ``{function: (the positions of the
#: arguments that carry them, the number of axes of those arguments without a batch)}``.
BATCHED = {
    "softmax": ((0,), 1),
    "contextualize": ((0,), 2),
    "project": ((0,), 2),
    "self_attention": ((0,), 2),
    "scaled_dot_product_attention": ((0, 1, 2), 2),
    "masked_softmax": ((0,), 2),
    "causal_self_attention": ((0,), 2),
    "softmax_backward": ((0, 1), 1),
    "attention_backward": ((0, 1, 2, 3), 2),
    "self_attention_backward": ((0, 1), 2),
    "split_heads": ((0,), 2),
    "merge_heads": ((0,), 3),
    "multi_head_attention": ((0,), 2),
    "tiled_attention": ((0, 1, 2), 2),
    "layer_norm": ((0,), 1),
    "layer_norm_backward": ((0, 1), 1),
    "transformer_block": ((0,), 2),
}
FORMS = {"none": lambda n, plain: n == plain, "one": lambda n, plain: n == plain + 1,
         "two": lambda n, plain: n == plain + 2}


def _refusing(lesson, function, form):
    """The lesson's solution of ``function``, made to raise on the batch ``form`` (its batched
    arguments having that many leading axes)."""
    cells, functions = layout(lesson)
    positions, plain = BATCHED[function]
    test = {"none": "==", "one": "== 1 +", "two": "== 2 +"}[form]
    return (f"{cells[functions[function][0]].source}\n_solution = {function}\n\n\n"
            f"def {function}(*args, **kwargs):\n"
            f"    if any(getattr(args[i], 'ndim', None) {test} {plain} for i in {positions} if i < len(args)):\n"
            f"        raise ValueError('this answer was written without {form} batch dimension(s)')\n"
            f"    return _solution(*args, **kwargs)\n")


def _batch_rows():
    rows = []
    for lesson in LESSONS:
        for function in layout(lesson)[1]:
            if function in BATCHED:
                for form in FORMS:
                    quick = lesson == LESSONS[0] or form == "two"
                    marks = [] if quick else [pytest.mark.full]
                    rows.append(pytest.param(lesson, function, form, id=f"{lesson[:2]}-{function}-{form}",
                                             marks=marks))
    return rows


@pytest.mark.parametrize("lesson, function, form", _batch_rows())
def test_an_answer_that_refuses_a_batch_form_fails_a_visible_check_and_a_hidden_case(lesson, function, form):
    """The solution refusing no, one or two batch dimensions fails both, each saying it raised."""
    answer = _refusing(lesson, function, form)
    outcome = run_visible_checks(lesson, function, answer)
    assert outcome.failed and "raised ValueError" in outcome.message, outcome
    passed, message = _hidden(lesson, function, answer, 0)
    assert not passed and "raised ValueError" in message, message


#: The words with which an exercise promises leading batch dimensions (whitespace folded, lower case).
PROMISES = ("leading batch", "any number of leading axes", "summed over every leading axis")


def test_every_batched_function_is_listed():
    """Every graded function whose exercise promises leading batch dimensions (``PROMISES``) is in
    ``BATCHED``, so none escapes the test above."""
    import nbformat

    from notebook_tools import grade_id, is_solution_code

    missing = []
    for lesson in LESSONS:
        nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
        said = ""
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                said = cell.source if "### Exercise" in cell.source else said + "\n" + cell.source
            elif is_solution_code(cell):
                function = grade_id(cell)
                text = " ".join(said.lower().split())
                promised = any(words in text for words in PROMISES)
                if promised and function in layout(lesson)[1] and function not in BATCHED:
                    missing.append(f"{lesson}: {function}")
                said = ""
    assert not missing, missing


# ---------------------------------------------------------------- values returned in another order

#: Functions returning several values, with an order of them that a learner may return instead
#: (``order[k]``: the value returned in place ``k``): two values of different shapes, whose first
#: check passes ``shapes=``, or two of one shape (dgamma and dbeta), whose check passes their
#: right values (``expected=``).
SWAPPED = [("01_context_vectors", "contextualize", (1, 0)), ("02_queries_keys_values", "self_attention", (1, 0)),
           ("03_scaling", "scaled_dot_product_attention", (1, 0)),
           ("04_causal_masking", "causal_self_attention", (1, 0)), ("06_multi_head", "multi_head_attention", (1, 0)),
           ("07_capstone", "model_forward", (1, 0)), ("09_small_gpt", "layer_norm_backward", (0, 2, 1)),
           ("09_small_gpt", "layer_norm_backward", (1, 0, 2)), ("09_small_gpt", "transformer_block", (1, 0)),
           ("09_small_gpt", "generate", (1, 0))]


@pytest.mark.parametrize("lesson, function, order", SWAPPED)
def test_values_returned_swapped_are_told_the_order_in_the_same_words(lesson, function, order):
    """The solution returning two of its values swapped hears "the order is swapped" from a visible
    check and from the hidden test alike, the values named, never numbered."""
    cells, functions = layout(lesson)
    answer = (f"{cells[functions[function][0]].source}\n_solution = {function}\n\n\n"
              f"def {function}(*args, **kwargs):\n    returned = _solution(*args, **kwargs)\n"
              f"    return tuple(returned[k] for k in {order})\n")
    outcome = run_visible_checks(lesson, function, answer)
    with _quiet():        # the order shows on the cases: no memory to measure in a process of its own
        verdict = run_locally(without_memory_judgement(registry.get(function)), reference(),
                              namespace_with(lesson, function, answer), np.random.default_rng(0))
    passed, message = verdict.passed, verdict.message
    assert outcome.failed and "the order is swapped" in outcome.message, outcome
    assert not passed and outcome.message in message, (outcome.message, message)


def test_every_lesson_09_function_that_returns_several_values_is_tried_swapped():
    """Every graded function of lesson 09 whose hidden test names several outputs is in ``SWAPPED``."""
    specs = registry.load()
    tried = {function for _, function, _ in SWAPPED}
    several = {function for function in layout("09_small_gpt")[1]
               if function in specs and len(specs[function].outputs) > 1}
    assert several and several <= tried, sorted(several - tried)
