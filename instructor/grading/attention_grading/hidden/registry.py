"""Which hidden tests the course has: every lesson folder's spec (``instructor/lessons/<id>/spec.py``,
importable as ``specs.lesson<id>``), imported here when a test is first asked for. ``spec`` (what a
hidden test is) imports none of them, so no module imports the lessons while they import it."""
from importlib import import_module

from . import spec as spec_module
from . import specs


def load():
    """{name: Spec} of every lesson's hidden tests (each lesson's spec imported once)."""
    for folder in specs.lesson_folders():
        import_module(f"{specs.__name__}.{specs.module_name(folder)}")
    return spec_module.REGISTRY


def get(name):
    """The hidden test registered as ``name`` (``KeyError`` naming it when there is none)."""
    try:
        return load()[name]
    except KeyError:
        raise KeyError(f"no hidden test is registered for {name!r}") from None
