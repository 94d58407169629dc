"""Every catalogue answer keeps its verdict on many draws of hidden cases, not only on the one a
grading run happens to draw.

Hidden cases are drawn afresh for each submission. A case generator that now and then draws a case
where a right answer written another way fails (two equal top-1 scores, where rounding picks the
key), or where a mistake does not show (a tied token holding too few of the draws to be missed,
logits too small to overflow), fails or spares a learner at random. Here each answer of a lesson's
catalogue, and its solution, meets the hidden tests of its function on ``DRAWS`` draws, in a Python
process of its own (tests/hidden_in_process.py; one per lesson, in the background): a WRONG answer
fails one of them on every draw, a CORRECT one passes all of them on every draw.

Memory measured there is not a grading kernel's: the meter reads the whole process, and there are
no probe messages to take off. So every answer is judged on the cases and unmeasured calls alone,
and a WRONG answer whose mistake shows only in the memory it takes (it gives right values on every
draw) is left to real kernels, which measure it in tests/test_lessons.py. After changing a case
generator, sweep more draws: ``HIDDEN_CASE_DRAWS=60 .venv/bin/python -m pytest --full tests/test_hidden_case_draws.py``.
"""
import os

import nbformat
import numpy as np
import pytest

import background
import catalogue
from attention_grading.cells import hidden_test_name
from attention_grading.hidden import registry
from attention_grading.hidden.in_process import run_locally
from attention_grading.hidden.reference import reference
from conftest import ROOT, lesson_ids
from hidden_in_process import namespace_with, without_memory_judgement
from notebook_tools import grade_id, is_solution_code, is_test
from visible_checks import _quiet, layout

DRAWS = int(os.environ.get("HIDDEN_CASE_DRAWS", "3"))


def hidden_tests_by_function(lesson):
    """``{function: [names of the hidden tests its test cells run]}``, from the source notebook."""
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    tests, current = {}, None
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if is_solution_code(cell):
            current = grade_id(cell)
        elif current and is_test(cell):
            name = hidden_test_name(cell)           # its metadata's attention_course.spec
            tests.setdefault(current, []).extend([name] if name else [])
    return tests


def problems_on_draws(lesson):
    """What goes wrong over DRAWS draws of ``lesson``'s hidden cases, in this process: a CORRECT
    answer that fails a draw, a WRONG one that passes one."""
    cells, functions = layout(lesson)
    problems = []
    for function, names in hidden_tests_by_function(lesson).items():
        wrong, right = (catalogue.entries(lesson, kind).get(function, {}) for kind in ("WRONG", "CORRECT"))
        answers = [(False, name, source) for name, source in wrong.items()]
        answers += [(True, name, source) for name, source in right.items()]
        answers.append((True, "the solution", cells[functions[function][0]].source))
        specs = [registry.get(n) for n in names]
        unmeasured = [without_memory_judgement(spec) for spec in specs]
        measured = any(a is not b for a, b in zip(specs, unmeasured))
        for correct, name, source in answers:
            passed_on = []
            for draw in range(DRAWS):
                with _quiet():
                    verdicts = [run_locally(spec, reference(), namespace_with(lesson, function, source),
                                            np.random.default_rng(draw)) for spec in unmeasured]
                if all(v.passed for v in verdicts):
                    passed_on.append(draw)
                elif correct:
                    failed = next(v for v in verdicts if not v.passed)
                    problems.append(f"{function}: the CORRECT {name} fails on draw {draw}: {failed.message[:300]}")
            if correct or not passed_on:
                continue
            if not measured:
                problems.append(f"{function}: the WRONG {name} passes every hidden test on draws {passed_on}")
            elif len(passed_on) < DRAWS:
                # A mistake that shows on some draws' values and not on others' is a case generator's
                # fault; one that never shows in values is a memory mistake (test_lessons).
                problems.append(f"{function}: the WRONG {name} gives wrong values on some draws only; "
                                f"right ones on draws {passed_on}")
    return problems


@background.fixture()
def draw_problems(folder, session):
    """``{lesson: problems_on_draws(lesson)}`` for the selected lessons, each in a child process (the
    checks redirect their process's output), in the background: minutes of CPU in all."""
    from conftest import lessons_using

    return {lesson: background.in_a_child(folder, "test_hidden_case_draws", "problems_on_draws", lesson)
            for lesson in lessons_using(session, "draw_problems")}


@pytest.mark.full
@pytest.mark.parametrize("lesson", lesson_ids())
def test_every_answer_keeps_its_verdict_on_every_draw(lesson, draw_problems):
    """Over DRAWS draws of hidden cases, WRONG answers always lose points and CORRECT ones never do."""
    assert not draw_problems[lesson], "\n".join(draw_problems[lesson])
