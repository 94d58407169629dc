"""Open the course's nbgrader configuration from Python, in one process for many steps."""
import os
import sys
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader

from .paths import COURSE_ROOT

# What nbgrader itself writes beside a submitted notebook (``submit``, ``collect``): the
# submission's time and secret. They travel with it to autograded/ and feedback/
# (``release_feedback`` reads the secret); they are never a learner's own files.
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")
# The grader's own files beside an autograded notebook, never a learner's (nbgrader_config.py's
# CourseDirectory.ignore keeps "grading-*.json" out of feedback/ and of what is copied from submitted/).
NOTES_FILE = "grading-notes.json"       # results.NotebookNotes: what happened while it ran
RESULT_FILE = "grading-result.json"     # results.GradingResult: what the store recorded
PAGE_FILE = "grading-feedback.json"     # what its feedback page was made from (store.pages)
GRADER_FILES = (NOTES_FILE, RESULT_FILE)


def load_config(root=None):
    """The traitlets Config of ``<root>/nbgrader_config.py`` (root defaults to this course)."""
    root = Path(root or COURSE_ROOT).resolve()
    return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()


def environment_tools_on_path():
    """Put the course environment's ``bin/`` on this process's PATH: nbgrader runs ``alembic``
    from PATH when it creates a gradebook. For the command lines (``make release``, ``make
    grade``) to call at start, so that they work when the environment is not activated; the
    configuration itself changes no environment."""
    tools = str(Path(sys.executable).parent)
    if tools not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([tools, os.environ.get("PATH", "")])


def lesson_ids(root=None):
    """Assignment ids in course order: the folders of ``source/`` holding a same-named notebook."""
    source = Path(root or COURSE_ROOT) / "source"
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())
