"""page_grades and GivenGrades: what a feedback job carries of a submission's grades puts into the
page exactly what nbgrader's GetGrades (and LabelGradedCells) read from the gradebook, for
automatic, manual, extra-credit and ungraded scores, comments and a late penalty."""
import copy

import pytest

from attention_grading.steps.given_grades import GIVEN, GivenGrades
from attention_grading.steps.label_cells import LabelGradedCells
from attention_grading.store import standing
from attention_grading.store.page_grades import LessonMaxima, page_grades

from . import factories
from .conftest import COURSE_ID, resources
from .test_gradebook import LESSON, _by_hand, _graded, _submission


def _two_ways(db_url, learner):
    """(cells' nbgrader metadata, resources) rendered from the gradebook (GetGrades) and from
    what a job carries (GivenGrades), each followed by LabelGradedCells."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import GetGrades

    with Gradebook(db_url, COURSE_ID) as gb:
        given = page_grades(standing.read(gb, LESSON, "alice"), LessonMaxima()(gb, LESSON), LESSON)
    out = []
    for step, extra in ((GetGrades(), {}), (GivenGrades(), {GIVEN: given})):
        nb, res = copy.deepcopy(learner), resources(db_url)
        res["nbgrader"].update(extra)
        nb, res = step.preprocess(nb, res)
        nb, res = LabelGradedCells().preprocess(nb, res)
        res["nbgrader"].pop(GIVEN, None)
        out.append(([(c.metadata.get("nbgrader"), c.metadata.get("attention_feedback")) for c in nb.cells], res))
    return out


@pytest.fixture
def graded(stored_lesson):
    db_url, _, _ = stored_lesson
    _submission(db_url)
    learner = factories.lesson()
    learner.cells[-1].source = "My own answer."
    _graded(db_url, learner)
    return db_url, learner


def test_an_autograded_submission_reads_the_same(graded):
    """Scores and points of every test, no comment, one written answer awaiting grading."""
    db_url, learner = graded
    stock, given = _two_ways(db_url, learner)
    assert stock == given
    assert given[1]["nbgrader"]["late_penalty"] == 0 and given[1]["attention_feedback"]["awaiting_points"] > 0


def test_manual_grades_extra_credit_comments_and_a_penalty_read_the_same(graded):
    """A manual score with extra credit over an automatic one, a comment, a late penalty: the
    page gets nbgrader's score (manual + extra), the manual comment, the score less the penalty."""
    from nbgrader.api import Gradebook

    db_url, learner = graded
    _by_hand(db_url, "self_weight_answer", 0.5, "Half: see lesson 03.")
    with Gradebook(db_url, COURSE_ID) as gb:
        grade = gb.find_grade("softmax_matches_reference", LESSON, LESSON, "alice")
        grade.manual_score, grade.extra_credit = 1.25, 0.5
        gb.find_comment("softmax", LESSON, LESSON, "alice").auto_comment = "automatic"
        gb.find_submission_notebook(LESSON, LESSON, "alice").late_submission_penalty = 1.5
        gb.db.commit()
    stock, given = _two_ways(db_url, learner)
    assert stock == given
    cells, res = given
    assert res["nbgrader"]["late_penalty"] == 1.5
    shown = {meta["grade_id"]: meta for meta, _ in cells if meta and "grade_id" in meta}
    assert shown["softmax_matches_reference"]["score"] == 1.75
    assert shown["self_weight_answer"]["comment"] == "Half: see lesson 03."


def test_a_cell_the_gradebook_lacks_fails_as_getgrades_does(graded):
    """A graded cell with no grade in what the job carries raises nbgrader's MissingEntry."""
    from nbgrader.api import MissingEntry

    db_url, learner = graded
    res = resources(db_url)
    res["nbgrader"][GIVEN] = {"grades": {}, "comments": {}, "score": 0.0, "max_score": 0.0, "late_penalty": None}
    with pytest.raises(MissingEntry):
        GivenGrades().preprocess(copy.deepcopy(learner), res)
