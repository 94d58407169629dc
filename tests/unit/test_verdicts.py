"""verdicts: ApplyVerdicts makes the grader's verdict a graded cell's only scoring output, and
SaveVerdicts scores every autograded test from its verdict, whatever the kernel printed."""
import itertools
import logging

import pytest
from nbgrader.utils import determine_grade

from attention_grading.cells import unscored
from attention_grading.results import NOTES_KEY, RAN, NotebookNotes, Verdict
from attention_grading.steps.verdicts import ApplyVerdicts, SaveVerdicts

from . import factories
from .conftest import resources, store_lesson

# What a kernel may leave in a test cell: each of these alone would decide nbgrader's score.
KERNEL_OUTPUTS = {
    "a result of 3 (partial credit: full marks)": factories.result({"text/plain": "3"}),
    "display data": factories.result({"text/plain": "3.0", "text/html": "<b>3</b>"}, kind="display_data"),
    "stderr text": factories.stream("warning: something\n", name="stderr"),
    "an error": factories.error("ValueError", "learner's own"),
    "printed text": factories.stream("✓ softmax is written\n"),
}


def _notes(**verdicts):
    notes = NotebookNotes()
    notes.verdicts = {gid: v.as_dict() for gid, v in verdicts.items()}
    return {NOTES_KEY: notes.as_dict()}


def _applied(outputs, passed):
    nb = factories.notebook(factories.answer("softmax"), factories.hidden_test("softmax", outputs=outputs))
    verdict = Verdict("softmax", passed, "ok" if passed else "On a 1-D vector: wrong", cases=9)
    nb, _ = ApplyVerdicts().preprocess(nb, _notes(softmax_matches_reference=verdict))
    return nb.cells[1]


@pytest.mark.parametrize("passed", [True, False], ids=["passed", "failed"])
@pytest.mark.parametrize("order", list(itertools.permutations(KERNEL_OUTPUTS, 3))[::7])
def test_only_the_verdict_scores_whatever_the_kernel_printed(order, passed):
    """Kernel outputs of every kind, in any order: stock determine_grade on the stored cell gives
    the verdict's score, and the verdict is the cell's last output."""
    cell = _applied([KERNEL_OUTPUTS[name] for name in order], passed)
    assert determine_grade(cell) == ((3.0 if passed else 0.0), 3.0)
    kinds = [o.output_type for o in cell.outputs]
    assert "execute_result" not in kinds
    assert kinds[:-1].count("error") == 0 and not any(o.get("name") == "stderr" for o in cell.outputs)
    assert kinds[-1] == ("stream" if passed else "error")


def test_what_the_kernel_showed_is_kept_as_text():
    """An error, a result and stderr text stay readable in the autograded notebook: as printed
    text and display data."""
    shown = [unscored(o) for o in KERNEL_OUTPUTS.values()]
    assert [o.output_type for o in shown] == ["display_data", "display_data", "stream", "stream", "stream"]
    assert "ValueError: learner's own" in shown[3].text and shown[0].data["text/plain"] == "3"
    assert unscored({"output_type": "something else"}) is None


def test_a_test_without_a_verdict_fails_with_the_reason():
    """A graded cell the grader never judged (the notebook ran out of time) scores 0 and says why."""
    nb = factories.notebook(factories.answer("softmax"), factories.hidden_test("softmax",
                                                                                outputs=[factories.stream("ok\n")]))
    nb, _ = ApplyVerdicts().preprocess(nb, {})
    assert determine_grade(nb.cells[1]) == (0.0, 3.0)
    assert "did not run" in nb.cells[1].outputs[-1].evalue


def test_a_cell_judged_on_running_says_so():
    """A graded cell without a hidden test passes with a line saying it ran without an error."""
    nb = factories.notebook(factories.hidden_test("softmax"))
    nb, _ = ApplyVerdicts().preprocess(nb, _notes(softmax_matches_reference=Verdict(
        "softmax", True, "the cell ran without an error", kind=RAN)))
    assert nb.cells[0].outputs[-1].text == "softmax: the cell ran without an error.\n"


def test_save_verdicts_keeps_the_verdict_when_the_stored_outputs_disagree(db_url, caplog):
    """A stored cell whose outputs would score full marks (a later step tampered with them) gets the
    verdict's 0, and the disagreement is logged; written answers keep nbgrader's own rule."""
    from nbgrader.api import Gradebook

    source = factories.lesson(functions=("softmax", "contextualize"), written=("why_answer",))
    lesson = store_lesson(db_url, source)
    with Gradebook(db_url, "attention") as gb:
        gb.update_or_create_student("alice")
        gb.update_or_create_submission(lesson, "alice")
    nb = factories.lesson(functions=("softmax", "contextualize"), written=("why_answer",))
    notes = _notes(softmax_matches_reference=Verdict("softmax", False, "wrong"),
                   contextualize_matches_reference=Verdict("contextualize", True, "right", cases=5))
    nb, res = ApplyVerdicts().preprocess(nb, {**resources(db_url), **notes})
    nb.cells[4].outputs = [factories.stream("tampered: no error any more\n")]
    with caplog.at_level(logging.ERROR):
        SaveVerdicts().preprocess(nb, res)
    with Gradebook(db_url, "attention") as gb:
        grades = {g.name: (g.auto_score, g.needs_manual_grade)
                  for g in gb.find_submission_notebook(lesson, lesson, "alice").grades}
    assert grades == {"softmax_matches_reference": (0.0, False), "contextualize_matches_reference": (3.0, False),
                      "why_answer": (0.0, False)}
    assert "softmax_matches_reference" in caplog.text


def test_every_graded_code_cell_of_every_lesson_has_a_hidden_test():
    """No lesson has a graded code cell judged only on running without an error (which the kernel
    reports): every one carries a hidden test the grader drives."""
    import nbformat

    from attention_grading.cells import CellPlan
    from conftest import ROOT

    for path in sorted((ROOT / "source").glob("*/*.ipynb")):
        plan = CellPlan(nbformat.read(path, as_version=4).cells)
        assert plan.tests and set(plan.tests) == set(plan.hidden), path.name
