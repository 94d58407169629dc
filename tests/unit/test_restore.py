"""restore (``RestoreCells``, the sanitising step of autograde): every test, written-answer and
locked cell a learner removed or edited comes back from the gradebook, where it was; a deleted
answer is reported, not restored (its stored source is the instructor's)."""
import copy

import pytest

from attention_grading.restore import RestoreCells
from attention_grading.cells import grade_id

from . import factories
from .conftest import resources, store_lesson


@pytest.fixture
def lesson(db_url):
    """(db_url, the source notebook) of a two-function lesson stored in a throwaway gradebook."""
    nb = factories.lesson(functions=("softmax", "contextualize"), written=("why_answer",))
    store_lesson(db_url, copy.deepcopy(nb))
    return db_url, nb


def restore(db_url, submission):
    step = RestoreCells(add_missing_cells=True)
    nb, _ = step.preprocess(submission, resources(db_url))
    return nb


def ids(nb):
    return [grade_id(c) for c in nb.cells]


def test_a_deleted_hidden_test_comes_back_where_it_was(lesson):
    """Deleting softmax's visible check and hidden test: both return after softmax's answer."""
    db_url, source = lesson
    submission = copy.deepcopy(source)
    submission.cells = [c for c in submission.cells if grade_id(c) not in
                        ("softmax_visible_check", "softmax_matches_reference")]
    nb = restore(db_url, submission)
    assert ids(nb) == ids(source)
    restored = nb.cells[ids(nb).index("softmax_matches_reference")]
    assert restored.source == source.cells[ids(source).index("softmax_matches_reference")].source
    assert restored.metadata.nbgrader["points"] == 3
    assert nb.metadata["attention_grading"]["restored_cells"] == ["softmax_visible_check",
                                                                   "softmax_matches_reference"]


def test_an_edited_test_is_graded_as_written_by_the_instructor(lesson):
    """A hidden test whose source and points a learner changed is overwritten from the gradebook."""
    db_url, source = lesson
    submission = copy.deepcopy(source)
    cell = submission.cells[ids(submission).index("contextualize_matches_reference")]
    cell.source = "pass"
    cell.metadata.nbgrader["points"] = 100
    nb = restore(db_url, submission)
    restored = nb.cells[ids(nb).index("contextualize_matches_reference")]
    assert "check(\"contextualize\")" in restored.source
    assert restored.metadata.nbgrader["points"] == 3


def test_a_deleted_answer_is_reported_and_not_restored(lesson):
    """The answer cell of softmax deleted: reported in the notes, its tests stay to fail."""
    db_url, source = lesson
    submission = copy.deepcopy(source)
    submission.cells = [c for c in submission.cells if grade_id(c) != "softmax"]
    nb = restore(db_url, submission)
    assert "softmax" not in ids(nb)
    assert nb.metadata["attention_grading"]["missing_answer_cells"] == ["softmax"]
    assert "softmax_matches_reference" in ids(nb)


def test_a_deleted_written_answer_comes_back_empty(lesson):
    """A written answer deleted: back as the stub, so it grades as no response, not as the key."""
    db_url, source = lesson
    submission = copy.deepcopy(source)
    submission.cells = [c for c in submission.cells if grade_id(c) != "why_answer"]
    nb = restore(db_url, submission)
    assert nb.cells[ids(nb).index("why_answer")].source == "YOUR ANSWER HERE"


def test_a_duplicated_cell_does_not_fail_the_notebook(lesson):
    """A copy of a graded cell whose grade_id DeduplicateIds removed is left as a plain cell."""
    from nbgrader.preprocessors import DeduplicateIds

    db_url, source = lesson
    submission = copy.deepcopy(source)
    index = ids(submission).index("softmax_matches_reference")
    submission.cells.insert(index + 1, copy.deepcopy(submission.cells[index]))
    submission, _ = DeduplicateIds().preprocess(submission, resources(db_url))
    nb = restore(db_url, submission)
    assert ids(nb).count("softmax_matches_reference") == 1
