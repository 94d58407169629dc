"""attention_course.autograding(): the switch that shortens the longest demonstrations while
nbgrader runs a notebook (lessons 07 and 08), and only then."""
from attention_course import autograding


def test_autograding_is_on_only_while_nbgrader_runs_the_notebook(monkeypatch):
    """Off when a learner runs the notebook; on when nbgrader autogrades or validates it."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not autograding()
    monkeypatch.setenv("NBGRADER_EXECUTION", "")
    assert not autograding()
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert autograding()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert autograding()
