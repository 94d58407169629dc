"""Catalogues of learner answers, one module per lesson, used by the grading tests.

Each module defines ``WRONG`` and ``CORRECT``: ``{function name: {entry name: source}}``.
Every source replaces the solution cell of that function (it must start with the ``def``).
A WRONG entry is a mistake learners really make and must lose points on that function's
tests only; a CORRECT entry is written differently from the reference and must get full marks.

Each entry is a whole notebook through real nbgrader, so ``make test`` grades the first
``LIMITS`` entries of each function (always including a correct answer that warns or writes
to stderr); ``CATALOGUE=full make test`` grades every entry.
"""
import importlib
import os
import pkgutil

LIMITS = {"WRONG": 3, "CORRECT": 2}
NOISY = ("warn", "stderr", "chatty", "noisy")


def load(lesson_id):
    """The catalogue module of a lesson, or None when it has none yet."""
    name = "lesson" + lesson_id.split("_", 1)[0]
    if not any(m.name == name for m in pkgutil.iter_modules(__path__)):
        return None
    return importlib.import_module(f"{__name__}.{name}")


def entries(lesson_id, kind):
    """``{function: {name: source}}`` of one kind, trimmed to ``LIMITS`` unless CATALOGUE=full."""
    module = load(lesson_id)
    table = getattr(module, kind, {}) if module else {}
    if os.environ.get("CATALOGUE") == "full":
        return table
    trimmed = {}
    for function, variants in table.items():
        names = list(variants)
        keep = names[: LIMITS[kind]]
        noisy = [n for n in names if any(word in n for word in NOISY)]
        if noisy and not set(noisy) & set(keep):
            keep[-1] = noisy[0]
        trimmed[function] = {name: variants[name] for name in keep}
    return trimmed


def size(lesson_id, kind):
    """How many entries of one kind the catalogue holds, trimmed or not."""
    module = load(lesson_id)
    return sum(len(v) for v in (getattr(module, kind, {}) if module else {}).values())
