"""kernels.demonstrations: which of the lesson's cells grading skips, read from the text alone.
Never a cell the learner wrote or changed, an answer, a test or the set-up; never a cell whose
names a cell that runs (or a hidden test's function) reads; nothing at all where a cell that runs
reaches names the text cannot show. Every lesson's solution loses demonstrations to skip."""
import nbformat
import pytest

from attention_grading.cells import CellPlan
from attention_grading.kernels.demonstrations import demonstrations, hidden_reads, names, needs_whole_run
from attention_grading.kernels.figures import code_digest, lesson_code
from attention_grading.kernels.run_state import RunState

from . import factories

LESSONS = ["01_context_vectors", "07_capstone", "09_small_gpt"]


def skipped(*cells, edited=()):
    """What is skipped in a notebook of ``cells``, the lesson being those cells less ``edited``
    (indices of cells the learner changed or added)."""
    nb = factories.notebook(*cells)
    ours = {code_digest(c.source) for i, c in enumerate(nb.cells) if c.cell_type == "code" and i not in edited}
    return demonstrations(nb.cells, ours, hidden_reads(CellPlan(nb.cells))), nb


def test_a_demonstration_no_cell_needs_is_skipped_and_graded_cells_never_are():
    """A demo that prints, between an answer and its test: skipped; set-up, answer, test run."""
    found, nb = skipped(factories.setup_cell(), factories.answer("softmax", "    return np.exp(x)"),
                        factories.plain_code("shown = softmax(np.ones(3))\nprint(shown)"),
                        factories.hidden_test("softmax"))
    assert found == {2}


def test_a_name_a_running_cell_reads_keeps_its_demonstration():
    """The learner's own cell, or their answer (read when the hidden test calls it), reads what a
    demo binds: the demo runs; a demo that uses data a running cell reads (it could change it) runs."""
    demo = factories.plain_code("SCALE = 2.0")
    found, _ = skipped(factories.setup_cell(), demo, factories.answer("softmax", "    return x * SCALE"),
                       factories.hidden_test("softmax"))
    assert found == set()
    found, _ = skipped(factories.setup_cell("import numpy as np\nrng = np.random.default_rng(0)"),
                       factories.plain_code("rng.normal()"), factories.plain_code("print(rng.normal())"),
                       edited={2})
    assert found == set()
    found, _ = skipped(factories.setup_cell(), factories.plain_code("def helper(x):\n    return x"),
                       factories.plain_code("print(helper(np.pi))"), factories.plain_code("print(helper(1))"),
                       edited={3})
    assert found == {2}                    # a function shared, not data: the demo that only calls it goes


def test_locals_are_not_globals():
    """A function's parameters and assignments, a comprehension's variables are its own."""
    found = names("def f(x):\n    y = x + Z\n    return [k for k in y]\nW = f(1)")
    assert found.reads == {"Z", "f"} and found.binds == {"f", "W"} and found.callables == {"f"}


def test_the_learner_s_changed_or_added_cells_always_run():
    """A demo the learner edited is theirs: it runs, whatever it binds."""
    found, _ = skipped(factories.setup_cell(), factories.plain_code("print(1)"), factories.plain_code("print(2)"),
                       edited={1})
    assert found == {2}


@pytest.mark.parametrize("source", ["x = globals()['SCALE']", "global SCALE\nSCALE = 1", "%time SCALE",
                                    "exec('print(SCALE)')"])
def test_nothing_is_skipped_where_a_running_cell_reaches_names_the_text_hides(source):
    """``globals()``, ``exec``, a ``global`` statement, a magic other than %matplotlib in a cell that runs."""
    found, _ = skipped(factories.setup_cell(), factories.plain_code("SCALE = 2"), factories.plain_code(source),
                       edited={2})
    assert found == set()


def test_a_name_error_after_skipping_asks_for_the_whole_notebook():
    """A NameError in a cell that ran, or in a hidden test's verdict: graded whole again."""
    state = RunState(CellPlan([]), budget=None)
    state.demonstrations = {1}
    state.replies = {0: {"status": "ok"}, 1: {"ename": "NameError"}}
    assert not needs_whole_run(state)               # the skipped cell's own (none, here) does not count
    state.replies[2] = {"status": "error", "ename": "NameError"}
    assert needs_whole_run(state)
    state.replies.pop(2)
    state.notes.verdicts["softmax"] = {"message": "your softmax raised NameError: name 'SCALE' is not defined"}
    assert needs_whole_run(state)


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_skips_demonstrations_and_nothing_graded(lesson):
    """On the solution: demonstrations are skipped, and none is the set-up, an answer or a test."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    nb = nbformat.read(repo / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    plan = CellPlan(nb.cells)
    found = demonstrations(nb.cells, lesson_code(repo, lesson), hidden_reads(plan))
    assert len(found) >= 3
    assert not found & {*plan.answers, *plan.tests, *plan.written}
    assert all(nb.cells[i].metadata.get("nbgrader", {}).get("grade_id") != "setup" for i in found)
