"""Every lesson's hidden tests, found by folder: ``instructor/lessons/<NN_name>/spec.py`` is the
module ``attention_grading.hidden.specs.lessonNN_name``, and another module of that folder
(``instructor/lessons/07_capstone/mistakes.py``) is ``attention_grading.hidden.specs.lesson07_mistakes``.

The finder below is the small loader that keeps those names importable (``registry`` imports a
lesson's spec by them, tests import them directly), so a lesson's spec lives beside its catalogue
and prose claims and a spec's relative imports (``from ..spec import register``,
``from .masks import key_mask``) work as they did when the modules were here. Only this package's
own modules (``masks``) stay in this folder.
"""
import importlib.abc
import importlib.util
import re
import sys

from ...paths import LESSONS_DIR

#: ``lessonNN_rest``: the spec of folder ``NN_rest``, or the module ``rest.py`` of folder ``NN_*``.
MODULE_NAME = re.compile(r"^lesson(\d\d)_([a-z][a-z0-9_]*)$")
#: The files of a lesson's folder that are not hidden tests (the tests' catalogue, the lesson's
#: prose claims, its part of the reference, which ``attention_reference`` loads): never importable
#: under this package.
NOT_MODULES = ("catalogue", "claims", "reference")


def lesson_folders():
    """The lesson folders that hold a spec, in lesson order."""
    return sorted(p for p in LESSONS_DIR.glob("[0-9][0-9]_*") if (p / "spec.py").is_file())


def module_name(folder):
    """The importable name of a lesson folder's spec (``lesson01_context_vectors``)."""
    return f"lesson{folder.name}"


def module_file(name):
    """The file of ``attention_grading.hidden.specs.<name>`` in a lesson folder, or None."""
    match = MODULE_NAME.match(name)
    if not match:
        return None
    number, rest = match.groups()
    spec = LESSONS_DIR / f"{number}_{rest}" / "spec.py"
    if spec.is_file():
        return spec
    if rest in NOT_MODULES:
        return None
    found = [p for p in sorted(LESSONS_DIR.glob(f"{number}_*/{rest}.py")) if p.is_file()]
    return found[0] if found else None


class LessonFolders(importlib.abc.MetaPathFinder):
    """Finds ``attention_grading.hidden.specs.lessonNN_*`` in ``instructor/lessons/``."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package != __name__:
            return None
        file = module_file(name)
        return importlib.util.spec_from_file_location(fullname, file) if file else None


if not any(isinstance(finder, LessonFolders) for finder in sys.meta_path):
    sys.meta_path.append(LessonFolders())
