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


def test_a_fresh_kernel_gets_the_lessons_given_code_and_the_answers_not_the_demonstrations():
    """``definitions_before``: the given cells (set-up, provided functions) and the answer cells
    before a test, never a visible check, a graded test or a demonstration."""
    from pathlib import Path

    from attention_grading.cells import grade_id

    root = Path(__file__).resolve().parents[2] / "source"
    for lesson, test, given, answers in (
            ("08_long_context", "tiled_attention_matches_reference", ["setup", "full_attention_given"],
             ["tiled_attention"]),
            ("09_small_gpt", "generate_matches_reference", ["setup", "provided_training"],
             ["positional_encoding", "numerical_gradient", "split_heads", "merge_heads", "multi_head_attention",
              "layer_norm", "layer_norm_backward", "transformer_block", "sample_next", "generate"])):
        cells = nbformat.read(root / lesson / f"{lesson}.ipynb", as_version=4).cells
        plan = CellPlan(cells)
        index = next(i for i, c in enumerate(cells) if grade_id(c) == test)
        before = plan.definitions_before(index)
        assert [[grade_id(cells[i]) for i in part] for part in before] == [given, answers]
