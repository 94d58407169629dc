"""The factories build what nbgrader and the grader's cell roles expect."""
import nbformat

from attention_grading.cells import CellPlan

from . import factories
from .conftest import store_lesson


def test_a_lesson_has_each_role_where_the_grader_looks():
    """Answers, hidden tests and written answers are where CellPlan finds them."""
    nb = factories.lesson(functions=("softmax", "contextualize"), written=("why_answer",))
    plan = CellPlan(nb.cells)
    assert set(plan.solutions) == {"softmax", "contextualize"}
    assert sorted(plan.hidden.values()) == ["contextualize", "softmax"]
    assert len(plan.written) == 1
    nbformat.validate(nb)


def test_a_stored_lesson_has_its_grade_cells(db_url):
    """store_lesson stores grade cells and points as generate_assignment would."""
    from nbgrader.api import Gradebook

    store_lesson(db_url, factories.lesson(functions=("softmax",), written=("w_answer",)))
    with Gradebook(db_url, "attention") as gb:
        nb = gb.find_notebook("01_context_vectors", "01_context_vectors")
        points = {c.name: c.max_score for c in nb.grade_cells}
    assert points == {"softmax_matches_reference": 3.0, "w_answer": 1.0}
