"""Which hidden tests the course has: every lesson's spec module (``specs/lessonNN_*.py``),
imported here when a test is first asked for. ``spec`` (what a hidden test is) imports none of
them, so no module imports the lessons while they import it."""
from importlib import import_module
from pathlib import Path

from . import spec as spec_module

SPECS = Path(__file__).with_name("specs")


def load():
    """{name: Spec} of every lesson's hidden tests (each lesson's module imported once)."""
    for path in sorted(SPECS.glob("lesson*.py")):
        import_module(f"{__package__}.specs.{path.stem}")
    return spec_module.REGISTRY


def get(name):
    """The hidden test registered as ``name`` (``KeyError`` naming it when there is none)."""
    try:
        return load()[name]
    except KeyError:
        raise KeyError(f"no hidden test is registered for {name!r}") from None
