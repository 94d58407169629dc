"""A lesson in one folder (``instructor/lessons/<id>/``): every lesson of ``source/`` has one, its
hidden tests are found by the folder (importable under ``attention_grading.hidden.specs`` by the
names they always had), and its catalogue, claims and reference are not hidden-test modules."""
import importlib
import sys

import pytest

from attention_grading.hidden import registry, specs
from attention_grading.paths import COURSE_ROOT, LESSONS_DIR


def test_every_lesson_has_a_folder_with_its_spec_catalogue_and_claims():
    """The folders are the lessons of source/, each with its spec, catalogue and claims."""
    lessons = sorted(p.name for p in (COURSE_ROOT / "source").iterdir() if p.is_dir())
    assert [p.name for p in specs.lesson_folders()] == lessons
    for lesson in lessons:
        assert {"spec.py", "catalogue.py", "claims.py"} <= {p.name for p in (LESSONS_DIR / lesson).iterdir()}, lesson


def test_each_hidden_test_is_registered_by_a_module_of_its_lessons_folder():
    """Every registered test comes from a module of a lesson folder, by the name it always had."""
    tests = registry.load()
    assert len(tests) >= 28
    for name, spec in tests.items():
        module = sys.modules[spec.cases.__module__]          # where its cases are drawn
        assert module.__name__.startswith(specs.__name__ + ".lesson"), (name, module.__name__)
        assert module.__file__.startswith(str(LESSONS_DIR) + "/"), (name, module.__file__)
    split = importlib.import_module(f"{specs.__name__}.lesson07_mistakes")
    assert split.__file__ == str(LESSONS_DIR / "07_capstone" / "mistakes.py")
    assert importlib.import_module(f"{specs.__name__}.lesson05_gradients").__file__ == \
        str(LESSONS_DIR / "05_gradients" / "spec.py")


@pytest.mark.parametrize("name", ["lesson01_catalogue", "lesson07_claims", "lesson01_reference", "lesson99_nothing",
                                  "catalogue"])
def test_a_folders_other_files_are_not_hidden_test_modules(name):
    """The tests' catalogue and claims, a lesson's reference, a lesson that does not exist: none
    is importable as a hidden-test module."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{specs.__name__}.{name}")
