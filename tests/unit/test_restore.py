"""restore: whatever a learner does to cell metadata, each graded cell is what the gradebook says,
and the notebook stays gradable."""
import pytest
from nbgrader.preprocessors import CheckCellMetadata, DeduplicateIds
from nbgrader.utils import compute_checksum, determine_grade

from attention_grading.restore import DropUnreadableMetadata, RestoreCells

from . import factories
from .conftest import resources, store_lesson


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
