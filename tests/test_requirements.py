"""Every requirement an exercise states has a hidden case that fails an answer breaking it, and the
visible checks and the hidden tests agree on the form of an answer.

- The wire to the kernel (``kernel_probe.encode``/``decode``) keeps what every case of every spec
  built: dtype, shape and memory order (tests/unit/test_conversation.py tests the wire on every
  layout), so a case about a transposed matrix reaches the learner's function as a transposed view.
- ``REQUIREMENTS`` in each catalogue module lists the lesson's requirement sentences, each with its
  hidden case and a WRONG entry that breaks only that requirement: the lesson says those words
  before the function's solution cell, the hidden test has that case, and the entry fails exactly
  there (run in this process through the grader's own conversation, tests/hidden_in_process.py).
- The correct solution, changed only in the form of what it returns (a list for a tuple, float32,
  a Python list for an array, integers for integer input), is rejected by a visible check whenever
  the hidden test rejects it, in the hidden test's own words, and accepted by both otherwise.
"""
import dataclasses
import re
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest

import catalogue
from attention_grading.hidden import kernel_probe
from attention_grading.hidden import registry
from attention_grading.hidden.in_process import run_locally
from attention_grading.hidden.reference import reference
from conftest import ROOT, lesson_ids
from hidden_in_process import hidden_verdict, measured_verdict, measures_memory, namespace_with
from notebook_tools import grade_id, is_solution_code
from visible_checks import _quiet, layout, run_visible_checks, run_visible_checks_alone

LESSONS = lesson_ids()


# ---------------------------------------------------------------- the wire keeps what the case built

def _same_steps(got, sent):
    """The same strides on every axis longer than 1 (a stride along a single element is immaterial)."""
    return all(a == b for a, b, n in zip(got.strides, sent.strides, sent.shape) if n > 1)


def _spec_names():
    return sorted(registry.load())


@pytest.mark.parametrize("name", _spec_names())
def test_every_hidden_case_reaches_the_kernel_as_built(name):
    """Each array argument of every case of every spec survives the wire with its dtype, shape and
    memory order (a transposed case stays transposed)."""
    spec = registry.get(name)
    if name == "adam_trains_the_model":
        pytest.skip("its one case is a training run whose arrays are built C-ordered")
    for seed in range(3):
        for case in spec.cases(np.random.default_rng(seed)):
            for arg in list(case.args) + list(case.kwargs.values()):
                if isinstance(arg, np.ndarray):
                    got = kernel_probe.decode(kernel_probe.encode(arg))
                    assert got.dtype == arg.dtype and got.shape == arg.shape, case.label
                    assert got.flags.c_contiguous == arg.flags.c_contiguous, case.label
                    assert _same_steps(got, arg), case.label


# ---------------------------------------------------------------- every stated requirement is tested

#: The quick tier runs lesson 01's requirements and forms; the full tier every lesson's.
QUICK = LESSONS[:1]
BY_TIER = [lesson if lesson in QUICK else pytest.param(lesson, marks=pytest.mark.full) for lesson in LESSONS]


def _requirement_rows():
    return [pytest.param(lesson, function, words, label, entry, id=f"{lesson[:2]}-{function}-{entry}",
                         marks=() if lesson in QUICK else pytest.mark.full)
            for lesson in LESSONS for function, rows in catalogue.requirements(lesson).items()
            for words, label, entry in rows]


def _said_before(lesson, function):
    """The lesson's markdown before ``function``'s solution cell, whitespace folded."""
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    text = []
    for cell in nb.cells:
        if is_solution_code(cell) and grade_id(cell) == function:
            break
        if cell.cell_type == "markdown":
            text.append(cell.source)
    return " ".join("\n".join(text).split())


def test_every_graded_function_lists_its_requirements():
    """Each lesson's catalogue lists requirements for every graded function of the lesson."""
    for lesson in LESSONS:
        _, functions = layout(lesson)
        listed = catalogue.requirements(lesson)
        assert set(listed) == set(functions), (lesson, sorted(set(functions) - set(listed)))


@pytest.mark.parametrize("lesson, function, words, label, entry", _requirement_rows())
def test_a_stated_requirement_has_a_hidden_case_that_fails_an_answer_breaking_it(lesson, function, words, label,
                                                                                   entry):
    """The lesson states it, the hidden test has the case, and the breaking answer fails exactly there."""
    assert " ".join(words.split()) in _said_before(lesson, function), f"{lesson} does not say {words!r}"
    spec = registry.get(function)
    measured = label == catalogue.MEASUREMENTS
    if measured:
        assert spec.judge_extra is not None, f"{function} has no measurements"
    else:
        for seed in range(3):
            labels = [case.label for case in spec.cases(np.random.default_rng(seed))]
            assert label in labels, f"{function} has no case {label!r}: {labels}"
        spec = dataclasses.replace(spec, extra_calls=None, judge_extra=None)   # the cases alone decide
    answer = catalogue.load(lesson).WRONG[function][entry]
    for seed in range(2):
        if measured:          # alone in a fresh interpreter, as memory is measured in a kernel
            verdict = measured_verdict(lesson, function, answer, seed)
            passed, case, message = verdict["passed"], verdict["case"], verdict["message"]
        else:
            with _quiet():
                verdict = run_locally(spec, reference(), namespace_with(lesson, function, answer),
                                      np.random.default_rng(seed))
            passed, case, message = verdict.passed, verdict.case, verdict.message
        assert not passed, f"{function}.{entry} passed the hidden test (seed {seed})"
        assert case == (None if measured else label), (case, message)


# ---------------------------------------------------------------- visible checks and hidden tests agree on form

#: The solution, returning the same numbers in another form.
FORMS = {
    "a list for a tuple": "list(r) if isinstance(r, tuple) else r",
    "float32 arrays": "_float32(r)",
    "a Python list for an array": "r.tolist() if isinstance(r, np.ndarray) else r",
    "integers for integer input": "_integers(r) if _all_integer(args) else r",
}
FORM_HELPERS = '''
def _float32(r):
    if isinstance(r, np.ndarray) and r.dtype == np.float64:
        return r.astype(np.float32)
    if isinstance(r, (tuple, list)):
        return type(r)(_float32(v) for v in r)
    if isinstance(r, dict):
        return {k: _float32(v) for k, v in r.items()}
    return r


def _integers(r):
    if isinstance(r, np.ndarray) and r.dtype.kind == "f":
        return np.round(r).astype(np.int64)
    return tuple(_integers(v) for v in r) if isinstance(r, tuple) else r


def _all_integer(args):
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    return bool(arrays) and all(a.dtype.kind in "iu" for a in arrays)
'''


def _in_another_form(lesson, function, form):
    cells, functions = layout(lesson)
    solution = cells[functions[function][0]].source
    return (f"{solution}\n{FORM_HELPERS}\n_solution = {function}\n\n\n"
            f"def {function}(*args, **kwargs):\n    r = _solution(*args, **kwargs)\n    return {FORMS[form]}\n")


def _words(message, case=None):
    """A form message from its verb on, numbers and shapes folded: what both sides must say alike."""
    message = message.removeprefix(f"On {case}: ") if case else message
    verb = re.search(r" (should|has) ", message)
    message = message[verb.start():] if verb else message
    return re.sub(r"\(\d[\d, ]*\)|\d+", "#", " ".join(message.split())).strip()


@pytest.mark.parametrize("lesson", BY_TIER)
@pytest.mark.parametrize("form", list(FORMS))
def test_visible_checks_and_hidden_tests_agree_on_form(lesson, form):
    """An answer the hidden test rejects for its form is rejected by a visible check first, in the
    same words; an answer it accepts passes the visible checks too."""
    _, functions = layout(lesson)
    problems = []
    for function in functions:
        answer = _in_another_form(lesson, function, form)
        if measures_memory(function):      # memory is measured alone, away from this process's threads
            verdict = SimpleNamespace(**measured_verdict(lesson, function, answer))
            outcome = run_visible_checks_alone(lesson, function, answer)
        else:
            verdict = hidden_verdict(lesson, function, answer)
            outcome = run_visible_checks(lesson, function, answer)
        if verdict.passed != (not outcome.failed):
            problems.append(f"{function}: hidden {'passes' if verdict.passed else 'fails'} "
                            f"({verdict.message[:200]}), visible {'fails' if outcome.failed else 'passes'} "
                            f"({outcome.message[:200]})")
        elif not verdict.passed and _words(verdict.message, verdict.case) not in _words(outcome.message):
            problems.append(f"{function}: other words.\n  hidden:  {verdict.message[:250]}\n"
                            f"  visible: {outcome.message[:250]}")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------- what a hidden test's message says

@pytest.mark.parametrize("lesson", BY_TIER)
def test_hidden_messages_name_the_case_once_and_the_arguments_by_name(lesson):
    """Every catalogued mistake's hidden verdict says its case once (no "On d_k = 4: On d_k = 4"),
    names a changed argument by its parameter name, and calls each output by its own name."""
    problems = []
    for function, entries in catalogue.load(lesson).WRONG.items():
        spec = registry.get(function)
        if function != "dot_product_variance":          # its determinism is judged from measurements
            spec = dataclasses.replace(spec, extra_calls=None, judge_extra=None)
        for name, answer in entries.items():
            with _quiet():
                verdict = run_locally(spec, reference(), namespace_with(lesson, function, answer),
                                      np.random.default_rng(0))
            message = verdict.message
            if verdict.case and message.count(verdict.case) > 1:
                problems.append(f"{function}.{name} repeats its case: {message[:200]}")
            if "argument number" in message:
                problems.append(f"{function}.{name} numbers an argument: {message[:200]}")
            if re.search(r"^On [^:]*: On ", message):
                problems.append(f"{function}.{name}: {message[:200]}")
    assert not problems, "\n".join(problems)


def test_the_long_context_exercise_names_the_lengths_its_tests_measure():
    """Lesson 08's exercise says at which lengths the visible check and the hidden test measure
    memory (the hidden test's drawn from ranges), and how much growth the hidden test allows."""
    from attention_grading.hidden.specs import lesson08_long_context as memory

    text = _said_before("08_long_context", "tiled_attention")
    for length in (*memory.SHORT_LENGTHS, *memory.LONG_LENGTHS, 512, 2048):
        assert f"{length:,}".replace(",", "{,}") in text or f"T = {length}" in text, length
    assert "half of what a $T \\times T$ array of booleans would add" in text


def test_the_long_context_exercise_says_how_its_key_blocks_are_measured():
    """Lesson 08's exercise names the sizes its visible key-block check uses, which are those its
    check cell passes, and describes truly the ranges the hidden test draws from."""
    from attention_grading.hidden.specs import lesson08_long_context as memory

    text = _said_before("08_long_context", "tiled_attention")
    said = ("a batch of 64 sequences of 3 queries each, reading 16,384 keys that the whole batch shares "
            "(`K` and `V` without a batch axis), with `block_size = 16`")
    assert said in text and "$64 \\times 16{,}384$ numbers of 8 bytes" in text
    cells, functions = layout("08_long_context")
    checks = " ".join(cells[i].source for i in functions["tiled_attention"][1])
    assert "check_key_blocks(\"tiled_attention\", tiled_attention, batch=64, T_q=3, T_k=16384, block_size=16)" in checks
    assert "a larger batch, a few queries, around twenty thousand keys and small blocks" in text
    assert memory.FEW_BATCH[0] > 64 and memory.FEW_QUERIES[1] <= 4 and memory.SMALL_BLOCKS[1] <= 32
    assert 15_000 <= memory.MANY_KEYS[0] < memory.MANY_KEYS[1] <= 25_000
