"""The hidden reference implementation of every graded function in the course.

Each lesson's reference lives in its folder, beside its spec, catalogue and claims:
``instructor/lessons/<id>/reference.py`` is the module ``attention_reference.lesson<id>``
(``attention_reference.lesson01_context_vectors``), and every public function it defines is a
name of this package (``attention_reference.softmax``), which the judge looks a graded function's
reference up by. A lesson's reference builds on earlier lessons' only, by relative import
(``from .lesson01_context_vectors import softmax``).

Instructor-only: it lives outside the installable learner package and outside
``source/<lesson>/`` (nbgrader copies every non-notebook file there into the release). Hidden
tests never import it inside a learner's kernel; the judge process does (see
``attention_grading.hidden.judge``).

Conventions (COURSE.md): token vectors are rows, float64 everywhere, inputs are
never mutated, leading batch dimensions are allowed, masks are boolean with
True meaning "may attend", applied before the softmax, and a row with nothing
visible gets all-zero weights.
"""
import importlib
import importlib.abc
import importlib.util
import re
import sys
from pathlib import Path

#: ``instructor/lessons/``, found from this file: on a Dask worker, the shipped copy beside it.
LESSONS_DIR = Path(__file__).resolve().parents[2] / "lessons"
PREFIX = "lesson"
#: ``lesson<id>``: the reference of the lesson folder ``<id>`` (``01_context_vectors``).
MODULE_NAME = re.compile(r"^lesson(\d\d_[a-z][a-z0-9_]*)$")

__all__ = []


def lesson_reference_file(name):
    """The file of ``attention_reference.<name>`` (``lesson01_context_vectors``), or None."""
    match = MODULE_NAME.match(name)
    path = LESSONS_DIR / match.group(1) / "reference.py" if match else None
    return path if path is not None and path.is_file() else None


class _LessonReferences(importlib.abc.MetaPathFinder):
    """Finds ``attention_reference.lesson<id>`` in ``instructor/lessons/<id>/reference.py``, so a
    lesson's reference imports an earlier one's as a module of this package."""

    def __init__(self, package):
        self.reference_package = package

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.rpartition(".")
        if package != self.reference_package:
            return None
        file = lesson_reference_file(name)
        return importlib.util.spec_from_file_location(fullname, file) if file else None


def _install_finder():
    """One finder for this package on ``sys.meta_path`` (a second import of it replaces it)."""
    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "reference_package", None) != __name__]
    sys.meta_path.append(_LessonReferences(__name__))


def _lesson_references():
    """Every lesson folder's reference, in lesson order; the public functions each defines join
    the package's names (two lessons defining one name is an error: the judge would find one)."""
    for path in sorted(LESSONS_DIR.glob("[0-9][0-9]_*/reference.py")):
        name = f"{__name__}.{PREFIX}{path.parent.name}"
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if callable(value) and getattr(value, "__module__", None) == name and not key.startswith("_"):
                if key in __all__:
                    raise ImportError(f"{key} is defined by two lessons' references ({name} and "
                                      f"{globals()[key].__module__})")
                globals()[key] = value
                __all__.append(key)


_install_finder()
_lesson_references()
