"""settings: every grading setting declared once (a trait with its help), read from the course's
one configuration, listed on the settings page (docs/settings.md) from that declaration; loading the configuration changes
nothing else."""
import os
import shutil
import sys

from attention_grading.cli import settings
from attention_grading.course import load_config

from conftest import ROOT


def test_the_settings_page_lists_every_setting_as_declared():
    """The settings page's block is what ``python -m attention_grading.cli.settings`` prints; to
    refresh it: ``make docs`` (or ``--write docs/settings.md``)."""
    page = (ROOT / "docs" / "settings.md").read_text()
    assert settings.with_table(page) == page, \
        "docs/settings.md's settings table is stale: run make docs (it writes the table again)"


def test_every_setting_has_help_and_a_value():
    """No setting without a sentence saying what it is."""
    for cls in settings.configurables():
        for name, trait in settings._course_settings(cls):
            assert len(trait.help.split()) >= 3, f"{cls.__name__}.{name} has no help text"


def test_loading_the_configuration_changes_no_global_state(tmp_path, monkeypatch):
    """Reading nbgrader_config.py leaves sys.path, the environment and the course folder as they
    were, but for one thing: the environment's ``bin/`` goes first on a PATH that lacks it (nbgrader
    runs the ``alembic`` found there to create a gradebook), once."""
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    tools = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path, environment = list(sys.path), dict(os.environ)
    config = load_config(tmp_path)
    assert config.CourseDirectory.course_id == "attention"
    assert os.environ["PATH"] == f"{tools}:/usr/bin:/bin"
    assert sys.path == path and dict(os.environ, PATH="/usr/bin:/bin") == environment
    load_config(tmp_path)
    assert os.environ["PATH"] == f"{tools}:/usr/bin:/bin"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbgrader_config.py"]


def test_a_setting_in_the_configuration_reaches_the_step_that_uses_it(tmp_path):
    """``c.GuardedExecute.sandbox_limits`` and ``c.ConversationLimits`` set in the configuration are
    what a kernel's sandbox and a hidden test are given."""
    from traitlets.config import Config

    from attention_grading.steps.execute import GuardedExecute
    from attention_grading.hidden.conversation import ConversationLimits
    from attention_grading.kernels.manager import SandboxRequest

    config = Config()
    config.GuardedExecute.sandbox_limits = {"memory_bytes": 1 << 30}
    config.ConversationLimits.max_axis = 64
    executor = GuardedExecute(config=config)
    (tmp_path / "submission").mkdir()
    request = SandboxRequest.for_submission(tmp_path / "submission", tmp_path, executor.sandbox_limits)
    try:
        assert request.limits.memory_bytes == 1 << 30 and request.limits.cpu_seconds == 900
    finally:
        shutil.rmtree(request.scratch, ignore_errors=True)
    assert ConversationLimits(parent=executor).max_axis == 64
    rows = dict((name, value) for name, value, _ in settings.sandbox_limits(config))
    assert rows["memory_bytes"] == 1 << 30
