"""Catalogues of learner answers, one module per lesson, used by the grading tests.

Each module defines ``WRONG`` and ``CORRECT``: ``{function name: {entry name: source}}``.
Every source replaces the solution cell of that function (it must start with the ``def``).
A WRONG entry is a mistake learners really make and must lose points on that function's
tests only; a CORRECT entry is written differently from the reference and must get full marks.
"""
import importlib
import pkgutil


def load(lesson_id):
    """The catalogue module of a lesson, or None when it has none yet."""
    name = "lesson" + lesson_id.split("_", 1)[0]
    if not any(m.name == name for m in pkgutil.iter_modules(__path__)):
        return None
    return importlib.import_module(f"{__name__}.{name}")
