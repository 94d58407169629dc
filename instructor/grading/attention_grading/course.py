"""Open the course's nbgrader configuration from Python, in one process for many steps."""
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader

from .paths import COURSE_ROOT


def load_config(root=None):
    """The traitlets Config of ``<root>/nbgrader_config.py`` (root defaults to this course)."""
    root = Path(root or COURSE_ROOT).resolve()
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def lesson_ids(root=None):
    """Assignment ids in course order: the folders of ``source/`` holding a same-named notebook."""
    source = Path(root or COURSE_ROOT) / "source"
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())
