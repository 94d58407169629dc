"""settings: every grading setting declared once (a trait with its help), read from the course's
one configuration, listed in the README from that declaration; loading the configuration changes
nothing else."""
import os
import shutil
import sys

from attention_grading import settings
from attention_grading.course import load_config

from conftest import ROOT


def test_the_readme_lists_every_setting_as_declared():
    """The README's settings block is what ``python -m attention_grading.settings`` prints; to
    refresh it: ``.venv/bin/python -m attention_grading.settings --write README.md``."""
    readme = (ROOT / "README.md").read_text()
    assert settings.with_table(readme) == readme, \
        "README.md's settings table is stale: run .venv/bin/python -m attention_grading.settings --write README.md"


def test_every_setting_has_help_and_a_value():
    """No setting without a sentence saying what it is."""
    for cls in settings.configurables():
        for name, trait in settings._course_settings(cls):
            assert len(trait.help.split()) >= 3, f"{cls.__name__}.{name} has no help text"


def test_loading_the_configuration_changes_no_global_state(tmp_path):
    """Reading nbgrader_config.py leaves sys.path, the environment and the course folder as they were."""
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    path, environment = list(sys.path), dict(os.environ)
    config = load_config(tmp_path)
    assert config.CourseDirectory.course_id == "attention"
    assert sys.path == path and dict(os.environ) == environment
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbgrader_config.py"]


def test_a_setting_in_the_configuration_reaches_the_step_that_uses_it():
    """``c.SandboxLimits.memory_bytes`` set in the configuration is what a sandbox is given."""
    from traitlets.config import Config

    from attention_grading.sandbox import SandboxLimits

    config = Config()
    config.SandboxLimits.memory_bytes = 1 << 30
    limits = SandboxLimits(config=config)
    assert limits.memory_bytes == 1 << 30
    assert SandboxLimits.from_dict(limits.as_dict()).memory_bytes == 1 << 30
