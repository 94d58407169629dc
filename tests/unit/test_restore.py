"""restore (``DropUnreadableMetadata`` and ``RestoreCells``, the sanitising steps of autograde):
every test, written-answer and locked cell a learner removed or edited comes back from the
gradebook, where it was; a deleted answer is reported, not restored (its stored source is the
instructor's); whatever a learner does to cell metadata, each graded cell is what the gradebook
says, and the notebook stays gradable."""
import copy

import nbformat
import pytest
from nbgrader.preprocessors import CheckCellMetadata, DeduplicateIds
from nbgrader.utils import compute_checksum, determine_grade

from attention_grading.cells import CellPlan, grade_id
from attention_grading.errors import UnnamedHiddenTest
from attention_grading.steps.restore import DropUnreadableMetadata, RestoreCells

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


def test_which_hidden_test_a_cell_runs_is_the_lessons_own(lesson, tmp_path, monkeypatch):
    """A learner who points a hidden-test cell at another hidden test (its metadata's
    ``attention_course.spec``), deletes that metadata, or names a hidden test in a cell of their
    own changes nothing: every graded cell names the hidden test the lesson's source notebook gives
    it, and nothing else names one. With no source notebook at hand no cell names one, and the
    grader's plan of the notebook stops with an error naming the cell."""
    db_url, source = lesson
    course = tmp_path / "course"
    (course / "source" / "01_context_vectors").mkdir(parents=True)
    nbformat.write(source, course / "source" / "01_context_vectors" / "01_context_vectors.ipynb")
    monkeypatch.chdir(course)              # the course root RestoreCells reads source/ from
    submission = copy.deepcopy(source)
    cells = {grade_id(c): c for c in submission.cells}
    cells["softmax_matches_reference"].metadata["attention_course"] = {"spec": "contextualize"}
    del cells["contextualize_matches_reference"].metadata["attention_course"]
    cells["softmax"].metadata["attention_course"] = {"spec": "softmax"}
    nb = restore(db_url, submission)
    assert CellPlan(nb.cells).hidden == CellPlan(source.cells).hidden
    assert sorted(CellPlan(nb.cells).hidden.values()) == ["contextualize", "softmax"]
    assert "attention_course" not in nb.cells[ids(nb).index("softmax")].metadata
    assert {"softmax_matches_reference", "softmax"} <= set(nb.metadata["attention_grading"]["restored_metadata"])

    duplicate = copy.deepcopy(source)      # a test cell copied whole: its copy's grade_id goes, and its name
    test_cell = next(c for c in duplicate.cells if grade_id(c) == "softmax_matches_reference")
    copied = copy.deepcopy(test_cell)
    del copied.metadata["nbgrader"]["grade_id"]
    copied["id"] = "a-copy"
    duplicate.cells.insert(duplicate.cells.index(test_cell) + 1, copied)
    before = set(restore(db_url, copy.deepcopy(source)).metadata["attention_grading"]["restored_metadata"])
    nb = restore(db_url, duplicate)
    assert set(nb.metadata["attention_grading"]["restored_metadata"]) == before      # the copy flags nothing
    assert sorted(CellPlan(nb.cells).hidden.values()) == ["contextualize", "softmax"]

    monkeypatch.chdir(tmp_path)            # a course without the lesson's source notebook
    nb = restore(db_url, copy.deepcopy(source))
    with pytest.raises(UnnamedHiddenTest, match="'softmax_matches_reference' has hidden tests but its metadata names none"):
        CellPlan(nb.cells)
    assert set(CellPlan(nb.cells, names=False).hidden.values()) == {""}


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


def _sanitized(db_url, nb):
    """The course's sanitize steps around the restore, as nbgrader autograde runs them."""
    res = resources(db_url)
    for step in (DropUnreadableMetadata(), DeduplicateIds(), RestoreCells(add_missing_cells=True),
                 CheckCellMetadata()):
        nb, res = step.preprocess(nb, res)
    return nb


def _id(cell):
    meta = cell.metadata.get("nbgrader")
    return meta.get("grade_id") if isinstance(meta, dict) else None


def _cell(nb, gid):
    return next(c for c in nb.cells if _id(c) == gid)


def _flip_flags(nb):
    _cell(nb, "softmax_matches_reference").metadata.nbgrader.update(grade=False, solution=True, locked=False)


def _raise_points(nb):
    _cell(nb, "softmax_matches_reference").metadata.nbgrader.update(points=300, checksum="0")


def _grade_the_answer(nb):
    _cell(nb, "softmax").metadata.nbgrader.update(grade=True, points=3, locked=True)


def _code_written_answer(nb):
    cell = _cell(nb, "self_weight_answer")
    cell.cell_type, cell.outputs, cell.execution_count = "code", [], None
    cell.metadata.nbgrader.update(solution=False)


CHANGES = {"flags flipped on the locked test cell": _flip_flags, "points raised": _raise_points,
           "the answer cell marked graded": _grade_the_answer,
           "a written answer made an autograded code cell": _code_written_answer}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changed_metadata_is_the_gradebooks_again(db_url, change):
    """Every graded cell's flags, points, checksum and type come back from the gradebook (flags
    flipped on a locked test cell once raised "Inconsistent checksums": a blank, not a 0)."""
    source = factories.lesson()
    store_lesson(db_url, source)
    nb = factories.lesson()
    CHANGES[change](nb)
    nb = _sanitized(db_url, nb)
    for original in source.cells:
        gid = original.metadata.get("nbgrader", {}).get("grade_id")
        if gid:
            cell = _cell(nb, gid)
            assert cell.cell_type == original.cell_type
            assert {k: v for k, v in cell.metadata.nbgrader.items() if k not in ("checksum", "cell_type")} == \
                {k: v for k, v in original.metadata.nbgrader.items() if k not in ("checksum", "cell_type")}
            assert compute_checksum(cell) == original.metadata.nbgrader["checksum"] or not cell.metadata.nbgrader["locked"]
    assert nb.metadata["attention_grading"]["restored_metadata"]
    assert determine_grade(_cell(nb, "self_weight_answer")) == (0, 1.0)


def test_unreadable_or_unknown_metadata_is_dropped(db_url):
    """nbgrader metadata nbgrader cannot read (a string, no grade_id, a number for an id) and a
    graded cell the gradebook does not know are dropped; the renamed test comes back restored."""
    store_lesson(db_url, factories.lesson())
    nb = factories.lesson()
    nb.cells[0].metadata["nbgrader"] = "graded, please"
    nb.cells.append(factories.plain_code("pass"))
    nb.cells[-1].metadata["nbgrader"] = {"grade": True, "points": 9}
    nb.cells.append(factories.hidden_test("bonus", points=50, grade_id="bonus_points"))
    _cell(nb, "contextualize_matches_reference").metadata.nbgrader["grade_id"] = 123
    nb = _sanitized(db_url, nb)
    ids = [_id(c) for c in nb.cells]
    assert "bonus_points" not in ids and 123 not in ids
    assert ids.count("contextualize_matches_reference") == 1
    assert "nbgrader" not in nb.cells[0].metadata


def test_an_untouched_release_keeps_its_metadata_and_raises_no_flag(db_url):
    """The lesson's own release, answered, as a learner hands it in: nothing restored, nothing
    flagged (nbgrader's generate_assignment writes keys such as cell_type that must match)."""
    import nbformat

    from conftest import ROOT

    from notebook_tools import solved

    lesson = "01_context_vectors"
    release = ROOT / "notebooks" / lesson / f"{lesson}.ipynb"
    store_lesson(db_url, nbformat.read(release, as_version=4))
    nb = _sanitized(db_url, solved(release, ROOT / "solutions" / lesson / f"{lesson}.ipynb"))
    assert nb.metadata["attention_grading"]["restored_metadata"] == []


def test_a_copied_solution_is_named_for_its_missing_stamps_not_as_changed_metadata(db_url):
    """The notebook of solutions/ handed in as it is (its cells carry no nbgrader checksum or cell
    type): no cell counts as changed metadata; the cells are listed as unstamped, which the grader's
    flag says in words (kernels.run_state)."""
    import nbformat

    from conftest import ROOT

    from attention_grading.cells import CellPlan
    from attention_grading.kernels.run_state import RunState

    lesson = "01_context_vectors"
    store_lesson(db_url, nbformat.read(ROOT / "notebooks" / lesson / f"{lesson}.ipynb", as_version=4))
    nb = _sanitized(db_url, nbformat.read(ROOT / "solutions" / lesson / f"{lesson}.ipynb", as_version=4))
    notes = nb.metadata["attention_grading"]
    assert notes["restored_metadata"] == []
    assert "self_weight_answer" in notes["unstamped_metadata"] and "softmax" in notes["unstamped_metadata"]
    state = RunState(plan=CellPlan(nb.cells), budget=None)
    (flag,) = state.finish(nb, max_restarts=0).flags
    assert "carry no nbgrader checksum or cell type" in flag["why"] and "solutions/" in flag["why"]
    assert "was changed" not in flag["why"]
