"""Hostile and broken submissions that need a lesson's particulars, on lesson 01.

The cases every lesson gets (reaching for the reference, patched checks, a crash, an infinite
loop, edited, deleted and retyped test cells, chatty output) run with each lesson's catalogue in
test_lessons.py. Here: hard-coded seed outputs, a segfault, a deleted answer cell, and grading the
same submissions twice. Cells time out after 5 s here (30 s in the course's config).
"""
import json

import nbformat
import pytest

from conftest import ROOT, copy_course, nbgrader
from notebook_tools import grade_id, solved, with_answer

LESSON = "01_context_vectors"
pytestmark = pytest.mark.nbgrader


def _answer():
    return solved(ROOT / "notebooks" / LESSON / f"{LESSON}.ipynb",
                  ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")


def _without_solution(nb):
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if grade_id(c) != "softmax"]
    return nb


SUBMISSIONS = {
    "solution": lambda nb: nb,
    "hard_coded_seed_output": lambda nb: with_answer(nb, "softmax", '''
def softmax(x, axis=-1):
    return np.array(examples.BANK_MORTGAGE_SHARES_QUOTED)
'''),
    "segfault": lambda nb: with_answer(nb, "softmax", '''
def softmax(x, axis=-1):
    import ctypes
    return ctypes.string_at(0)
'''),
    "deleted_solution_cell": _without_solution,
}
# (softmax points, contextualize points): the defined outcome of each case.
EXPECTED = {
    "solution": (3, 3), "hard_coded_seed_output": (0, 3), "segfault": (0, 3),
    "deleted_solution_cell": (0, 3),
}


REGRADED = ("solution", "hard_coded_seed_output", "segfault")


def _scores(root):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        return {student: {g.name: g.score for g in gb.find_submission_notebook(LESSON, LESSON, student).grades
                          if not g.needs_manual_grade}
                for student in SUBMISSIONS}


@pytest.fixture(scope="module")
def graded_twice(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("hostile"), lessons=[LESSON])
    answer = _answer()
    for student, build in SUBMISSIONS.items():
        folder = root / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(build(answer), folder / f"{LESSON}.ipynb")
    nbgrader(root, "generate_assignment", LESSON, "--force")
    done = nbgrader(root, "autograde", LESSON, "--force", "--Execute.timeout=5", check=False)
    runs = [_scores(root)]
    for student in REGRADED:
        nbgrader(root, "autograde", LESSON, "--force", "--student", student, "--Execute.timeout=5")
    runs.append(_scores(root))
    notes = {s: json.loads((root / "autograded" / s / LESSON / "grading-notes.json").read_text())
             for s in SUBMISSIONS if (root / "autograded" / s / LESSON / "grading-notes.json").exists()}
    return {"root": root, "runs": runs, "notes": notes, "log": done.stdout}


@pytest.mark.parametrize("student", sorted(SUBMISSIONS))
def test_each_case_gets_its_defined_outcome(student, graded_twice):
    """softmax scores what the case deserves; contextualize keeps its points whatever softmax did."""
    scores = graded_twice["runs"][-1][student]
    got = (scores["softmax_matches_reference"], scores["contextualize_matches_reference"])
    assert got == EXPECTED[student], f"{student}: {got}, notes {graded_twice['notes'].get(student)}"


def test_crashes_are_named(graded_twice):
    """grading-notes.json names the cell that killed the kernel."""
    crashed = graded_twice["notes"]["segfault"]["crashed_cells"]
    assert crashed and crashed[0]["grade_id"] in {"softmax_seed_shares", "softmax_matches_reference"}


def test_grading_twice_gives_identical_scores(graded_twice):
    """autograde --force on the same submissions reproduces every score."""
    first, second = graded_twice["runs"]
    assert {s: first[s] for s in REGRADED} == {s: second[s] for s in REGRADED}
