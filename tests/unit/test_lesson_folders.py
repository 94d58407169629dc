"""A lesson in one folder (``instructor/lessons/<id>/``): every lesson of ``source/`` has one, its
hidden tests are found by the folder (importable under ``attention_grading.hidden.specs`` by the
names they always had), and its catalogue, claims and reference are not hidden-test modules;
every graded function's reference is defined in its lesson's folder, builds on earlier lessons'
only, and reaches a Dask worker's judge."""
import ast
import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attention_grading.hidden import registry, specs
from attention_grading.hidden.reference import reference
from attention_grading.paths import COURSE_ROOT, LESSONS_DIR, REFERENCE_DIR
from attention_grading.run import cluster


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


# ------------------------------------------------------------------ the lessons' references

#: Hidden tests with no function of their own in the reference: an outcome (the learner's
#: ``adam_step`` trains lesson 07's model; its judge trains the reference's).
OUTCOMES = {"adam_trains_the_model"}


def _folder_of(spec):
    return Path(sys.modules[spec.cases.__module__].__file__).parent


def test_every_graded_functions_reference_is_defined_in_its_lessons_folder():
    """The judge's reference of each graded function (the package's name for it) is defined in the
    ``reference.py`` of the folder whose spec grades it, as the module ``attention_reference.lesson<id>``."""
    R = reference()
    tests = registry.load()
    assert OUTCOMES <= set(tests)
    for name, spec in tests.items():
        if name in OUTCOMES:
            assert not hasattr(R, name), name
            continue
        folder = _folder_of(spec)
        function = getattr(R, name)
        assert inspect.getsourcefile(function) == str(folder / "reference.py"), name
        assert function.__module__ == f"{R.__name__}.lesson{folder.name}", name
    assert {p.name for p in (REFERENCE_DIR / R.__name__).glob("*.py")} == {"__init__.py"}


def test_every_lesson_has_a_reference_and_the_package_names_only_theirs():
    """Each lesson folder has its reference; every public name of the package is one of theirs."""
    R = reference()
    for folder in specs.lesson_folders():
        assert (folder / "reference.py").is_file(), folder.name
        assert sys.modules[f"{R.__name__}.lesson{folder.name}"].__file__ == str(folder / "reference.py")
    assert R.__all__ and all(getattr(R, name).__module__.startswith(f"{R.__name__}.lesson") for name in R.__all__)
    assert len(set(R.__all__)) == len(R.__all__)


def _imported_lessons(path):
    """The lesson ids a reference imports (``from .lesson01_context_vectors import ...``), and
    whether it imports the package any other way."""
    lessons, other = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            lessons.append(node.module.removeprefix("lesson"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            other += [n for n in names if n and n.startswith("attention_reference")]
    return lessons, other


def test_a_lessons_reference_builds_only_on_earlier_lessons():
    """Later lessons' references import earlier ones' (lesson 09's GPT: 01, 04, 06), never a later
    one's nor the package itself: a lesson reads its reference as the course reaches it."""
    seen = {}
    for folder in specs.lesson_folders():
        lessons, other = _imported_lessons(folder / "reference.py")
        assert not other, (folder.name, other)
        assert all(lesson in {p.name for p in specs.lesson_folders()} and lesson < folder.name
                   for lesson in lessons), (folder.name, lessons)
        seen[folder.name] = lessons
    assert set(seen["09_small_gpt"]) == {"01_context_vectors", "04_causal_masking", "06_multi_head"}


def test_the_lessons_references_reach_a_dask_workers_judge(tmp_path):
    """``make grade --scheduler`` ships ``cluster.grader_files()`` to each worker, which unpacks
    them and judges with the grader found there (``run/cluster_worker``): every lesson's reference
    is shipped, and the reference loaded from the unpacked copy alone (not this checkout) has every
    graded function, each from its lesson's folder there."""
    files = cluster.grader_files()
    for folder in specs.lesson_folders():
        assert f"lessons/{folder.name}/reference.py" in files, folder.name
    for relative, data in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(data)
    code = ("import inspect, json, attention_grading\n"
            "from attention_grading.hidden import registry\n"
            "from attention_grading.hidden.reference import reference\n"
            "R = reference()\n"
            "print(json.dumps({'grading': attention_grading.__file__, 'functions': {name: inspect.getsourcefile("
            "getattr(R, name)) for name in registry.load() if hasattr(R, name)}}))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(tmp_path / "grading")}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["grading"].startswith(str(tmp_path / "grading") + "/")
    tests = registry.load()
    assert set(got["functions"]) == set(tests) - OUTCOMES
    for name, file in got["functions"].items():
        assert file == str(tmp_path / "lessons" / _folder_of(tests[name]).name / "reference.py"), name


#: The hostile catalogue's attacks that read or copy the reference's files by path.
READING_ATTACKS = ("spec_from_file_location", "source_file_loader_get_data", "forged_frozen_filename",
                   "linecache_forgery", "copy_in_a_child_process")


@pytest.mark.parametrize("name", READING_ATTACKS)
def test_the_hostile_attacks_on_the_references_files_aim_at_the_real_ones(name, tmp_path):
    """With no wall in the way (a plain Python here, not a sandboxed kernel), each of these attacks
    of tests/hostile_catalogue.py steals the real softmax: their paths are the reference's files,
    so that their failing in a kernel (tests/test_hostile_catalogue.py) is the wall's doing."""
    import hostile_catalogue

    attack = hostile_catalogue.ATTACKS[name]
    code = attack.code.format(course=COURSE_ROOT, marker=hostile_catalogue.PREFIX + name)
    probe = code + ("\nimport numpy as np\n"
                    "print(np.asarray(_steal()(np.log([[1.0, 3.0]]), axis=-1)).round(12).tolist())\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[0.25, 0.75]]


def test_only_a_lesson_folders_reference_is_a_module_of_the_package():
    """``attention_reference.lesson<id>`` is a folder's reference; no other name is found there."""
    R = reference()
    assert importlib.import_module(f"{R.__name__}.lesson01_context_vectors").softmax is R.softmax
    for name in ("lesson99_nothing", "lesson01_context_vectors.spec", "lesson01", "core", "gpt"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"{R.__name__}.{name}")


def test_two_lessons_defining_one_function_is_refused_by_name(tmp_path):
    """The judge looks a reference up by name: a second lesson defining it stops the package's import."""
    package = tmp_path / "reference" / "attention_reference"
    package.mkdir(parents=True)
    (package / "__init__.py").write_bytes((REFERENCE_DIR / "attention_reference" / "__init__.py").read_bytes())
    for lesson in ("01_one", "02_two"):
        (tmp_path / "lessons" / lesson).mkdir(parents=True)
        (tmp_path / "lessons" / lesson / "reference.py").write_text("def centre(x):\n    return x\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import attention_reference"], cwd=tmp_path, capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(package.parent)}, timeout=120)
    assert done.returncode != 0
    assert "ImportError: centre is defined by two lessons' references (attention_reference.lesson02_two and " \
           "attention_reference.lesson01_one)" in done.stderr
