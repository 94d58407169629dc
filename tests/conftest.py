"""Shared fixtures: a disposable copy of the course and real nbgrader runs inside it."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

sys.path.insert(0, str(ROOT / "tests"))

import background  # noqa: E402  (tests/ on the path first)

#: For the modules that test pure code (the reference, the widgets): its warnings are errors. Not
#: ResourceWarnings, though: those come from other tests' garbage, which the collector reports in
#: whichever test it happens to run, and a warnings filter holds for the whole process.
STRICT_WARNINGS = pytest.mark.filterwarnings(
    "error", "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")

COURSE_PARTS = ["nbgrader_config.py", "source", "notebooks", "solutions", "instructor"]


def lesson_ids():
    return sorted(p.name for p in (ROOT / "source").iterdir()
                  if (p / f"{p.name}.ipynb").is_file())


def quick_tier_keeps(values, kept):
    """``values`` as test parameters, those not in ``kept`` marked ``full``: the quick tier runs
    ``kept``, the full tier every value."""
    return [value if value in kept else pytest.param(value, marks=pytest.mark.full) for value in values]


def copy_course(dest, lessons=None):
    """A working copy of everything nbgrader needs (``lessons``: only those); its own gradebook."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc")
    for part in COURSE_PARTS:
        src = ROOT / part
        if lessons is not None and part in ("source", "notebooks", "solutions"):
            for lesson in lessons:
                shutil.copytree(src / lesson, dest / part / lesson, ignore=ignore)
        elif src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore)
        else:
            shutil.copy2(src, dest / part)
    return dest


def course_env(root):
    """The environment of a command run on the course copy at ``root``: the course environment's
    tools on PATH, and that copy's grading package first on the import path (the one `make`
    installs is the repository's)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(Path(root) / "instructor" / "grading")
    env.pop("ATTENTION_GRADEBOOK_URL", None)
    env.pop("ATTENTION_EXCHANGE", None)
    env.pop("ATTENTION_DASK_SCHEDULER", None)
    return env


def fresh_python(code, *args, input=None, timeout=300, env=None):
    """``code`` (with ``args``) run by a fresh interpreter with this process's import path: the
    tests' helpers, the grading package and the hidden reference (``env``: variables to add). For
    what must be measured away from the pytest process, whose background threads allocate beside
    it. Its stdout, once it has succeeded."""
    env = dict(os.environ, **(env or {}), PYTHONPATH=os.pathsep.join(
        str(ROOT / folder) for folder in ("tests", "instructor/reference", "instructor/grading")))
    done = subprocess.run([sys.executable, "-c", code, *args], input=input, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT / "tests", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def nbgrader(root, *args, check=True, timeout=900):
    """Run a real ``nbgrader`` command in ``root``; stderr is merged into ``stdout``, in order."""
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=course_env(root),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"nbgrader {' '.join(args)} failed:\n{done.stdout}")
    return done


@pytest.fixture(scope="session")
def lessons():
    return lesson_ids()


def grade_lesson01_class(folder):
    """(course root, make grade's result, hash of submitted/ before): a lesson-01 class with
    good, blank, buggy, crashing, grader-killing and broken submissions, graded with 2 workers."""
    from grading_helpers import LESSON, copy_course as lesson01_course, notebook, run_grade, submit, tree_hash

    root = lesson01_course(Path(folder) / "course")
    submit(root, "alice", notebook("correct"))
    (root / "submitted" / "alice" / LESSON / "notes.txt").write_text("my notes")
    submit(root, "bob", notebook("blank"))
    submit(root, "carol", notebook("buggy"))
    submit(root, "gina", notebook("crash"))
    submit(root, "hank", notebook("kills_grader"))
    submit(root, "dave", '{"cells": [ {"cell_type": ')          # invalid JSON
    submit(root, "erin", "")                                     # empty file
    submit(root, "frank", notebook("correct"), name="my_lesson.ipynb")
    (root / "submitted" / "README.txt").write_text("stray file")
    before = tree_hash(root / "submitted")
    done = run_grade(root, "--workers", "2")
    return root, done, before


@pytest.fixture(scope="session")
@background.waits
def lesson01_class(request):
    """``grade_lesson01_class``, shared by the tests of the grading command, slips, the exchange,
    Dask and PostgreSQL (started in the background when validation is done)."""
    return background.result(request.session, "lesson01_class", grade_lesson01_class)


# ---------------------------------------------------------------- background runs (tests/background.py)

HOSTILE_LESSON = "01_context_vectors"


def lessons_using(session, fixture):
    """The lessons of the selected tests that use ``fixture``."""
    return sorted({item.callspec.params["lesson"] for item in session.items
                   if fixture in getattr(item, "fixturenames", ())
                   and "lesson" in getattr(getattr(item, "callspec", None), "params", {})})


def _uses(item, fixture):
    return fixture in getattr(item, "fixturenames", ())


def plain_nbgrader_half_selected(session):
    """Do the selected tests read the hostile catalogue graded by plain ``nbgrader autograde``?"""
    return any(_uses(item, "nbgrader_half") or (_uses(item, "hostile") and getattr(
        getattr(item, "callspec", None), "params", {}).get("way") == "nbgrader autograde")
        for item in session.items)


def graded_selection(session):
    """(lessons, with attacks, sampled) of the one ``make grade`` run that serves the catalogue
    tests and the hostile catalogue's ``make grade`` half: one run keeps both cores busy to the end.
    The quick tier grades a sample of each lesson's catalogue."""
    attacks = any(_uses(item, "hostile") or _uses(item, "make_grade_half") for item in session.items)
    lessons = set(lessons_using(session, "graded")) | ({HOSTILE_LESSON} if attacks else set())
    return sorted(lessons), attacks, not full_tier(session.config)


@pytest.fixture(scope="session")
@background.waits
def graded(request):
    """{lesson: results} of autograding the selected lessons' catalogues, with the hostile
    catalogue's ``make grade`` half when selected (``lesson_grading.grade_all``; started in the
    background as soon as the tests are collected)."""
    import lesson_grading

    return background.result(request.session, "graded", lesson_grading.grade_all, *graded_selection(request.session))


def full_tier(config):
    """``pytest --full`` (the root conftest.py defines the option and leaves the rest out without it)."""
    return bool(config.getoption("full", default=False))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """Tests that read a background run go last: the run gets the whole session to finish."""
    late = [item for item in items if background.waiting(item)]
    if late:
        moved = {id(item) for item in late}
        items[:] = [item for item in items if id(item) not in moved] + late


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    import lesson_grading

    selected = lessons_using(session, "validation")
    if selected:
        background.start(session, "validation", lesson_grading.validate_all, selected)
    selected = lessons_using(session, "learner_validation")
    if selected:
        background.start(session, "learner_validation", lesson_grading.validate_as_learner, selected,
                         after="validation")
    if any(_uses(item, "lesson01_class") for item in session.items):
        background.start(session, "lesson01_class", grade_lesson01_class, after="validation")
    lessons, attacks, sampled = graded_selection(session)
    if lessons:
        background.start(session, "graded", lesson_grading.grade_all, lessons, attacks, sampled)
    if plain_nbgrader_half_selected(session):
        import test_hostile_catalogue

        # One notebook at a time: it starts when validation is done, beside the catalogue's four
        # workers, so that neither ends alone on one core while the other core waits.
        background.start(session, "hostile", test_hostile_catalogue.grade_with_nbgrader, after="validation")
    background.start_declared(session)


CLOSING_NOTES = pytest.StashKey[list]()
BACKGROUND_TIMES = pytest.StashKey[list]()        # what each background run took, printed at the end


def closing_notes(session):
    """Lines for the very end of the run (tests append): the end of a CI log is often all one sees."""
    return session.config.stash.setdefault(CLOSING_NOTES, [])


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    runs = terminalreporter.config.stash.get(BACKGROUND_TIMES, [])
    if runs:
        terminalreporter.section("background runs")
        for line in runs:
            terminalreporter.write_line(line)
    notes = terminalreporter.config.stash.get(CLOSING_NOTES, [])
    if notes:
        terminalreporter.section("grading problems (details in the failures above)")
        for line in notes:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[BACKGROUND_TIMES] = background.timings(session)
    background.cleanup(session)
