"""attention_course.autograding(): the switch that shortens the longest demonstrations while
nbgrader autogrades (lessons 07 and 08), and only then."""
from attention_course import autograding


def test_autograding_is_on_only_under_nbgrader_autograde(monkeypatch):
    """Off when a learner runs the notebook or validates it; on when nbgrader autogrades it."""
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not autograding()
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert not autograding()
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert autograding()
