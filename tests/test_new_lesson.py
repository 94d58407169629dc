"""Adding a lesson is a path a test walks: ``make new-lesson`` scaffolds one in a copy of the
course, which then releases, validates and grades like every other lesson (its catalogue's wrong
answers lose their points, its correct ones keep them), and the scaffold refuses what would
clash with an existing lesson."""
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT, copy_course, nbgrader
from grading_helpers import env_for, run_grade
from notebook_tools import solved, with_answer

pytestmark = pytest.mark.nbgrader
LESSON, FUNCTION = "42_example", "centre_rows"


def scaffold(root, *args):
    return subprocess.run([sys.executable, "-m", "attention_grading.cli.scaffold", *args, "--root", str(root)],
                          env=env_for(root), capture_output=True, text=True, timeout=120)


def files(root):
    """{path under root: digest of its bytes} of every file of a course copy."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def changed(before, after):
    """The files added, changed or removed between two ``files`` snapshots."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


@pytest.fixture(scope="module")
def new_lesson(tmp_path_factory):
    """A course copy (with the site's lesson pages) with lesson 01 and a scaffolded lesson 42,
    released and graded: the solution, the release as it is and every catalogue entry. Returns
    also the files the scaffold changed, and those the release changed after it."""
    root = copy_course(tmp_path_factory.mktemp("course"), lessons=["01_context_vectors"])
    shutil.copytree(ROOT / "docs" / "lessons", root / "docs" / "lessons")
    before = files(root)
    made = scaffold(root, LESSON, "--function", FUNCTION)
    assert made.returncode == 0, made.stderr
    scaffolded = files(root)
    released = subprocess.run([sys.executable, "-m", "attention_grading.cli.release", "--root", str(root), LESSON],
                              env=env_for(root), capture_output=True, text=True, timeout=300)
    assert released.returncode == 0, released.stdout + released.stderr
    touched = {"scaffold": changed(before, scaffolded), "release": changed(scaffolded, files(root))}
    validated = nbgrader(root, "validate", str(root / "source" / LESSON / f"{LESSON}.ipynb"), check=False)

    spec = importlib.util.spec_from_file_location("catalogue42", root / "instructor" / "lessons" / LESSON / "catalogue.py")
    catalogue = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(catalogue)
    release = root / "notebooks" / LESSON / f"{LESSON}.ipynb"
    answer = solved(release, root / "solutions" / LESSON / f"{LESSON}.ipynb")
    students = {"solution": answer, "untouched": nbformat.read(release, as_version=4)}
    for kind in ("WRONG", "CORRECT"):
        for name, source in getattr(catalogue, kind)[FUNCTION].items():
            students[f"{kind.lower()}--{name}"] = with_answer(answer, FUNCTION, source)
    for student, nb in students.items():
        folder = root / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{LESSON}.ipynb")
    graded = run_grade(root, "--lesson", LESSON, "--workers", "2", "--no-report", timeout=600)
    return root, made, validated, graded, touched


def _scores(root):
    import csv

    with open(root / "grades.csv", newline="") as fh:
        return {row["student"]: float(row["score"]) for row in csv.DictReader(fh) if row["lesson"] == LESSON}


def test_the_scaffold_writes_a_lesson_that_releases_and_validates(new_lesson):
    """Its files are written (the notebook, the lesson's folder, the site's page), its release holds
    no solution, nbgrader validate passes it."""
    root, made, validated, _, _ = new_lesson
    for part in (f"source/{LESSON}/{LESSON}.ipynb", *(f"instructor/lessons/{LESSON}/{name}.py" for name in
                                                      ("spec", "reference", "catalogue", "claims")),
                 f"docs/lessons/{LESSON}.lesson"):
        assert (root / part).is_file() and f"wrote {part}" in made.stdout
    release = (root / "notebooks" / LESSON / f"{LESSON}.ipynb").read_text()
    assert "BEGIN SOLUTION" not in release and "BEGIN HIDDEN TESTS" not in release
    assert "Success! Your notebook passes all the tests." in validated.stdout, validated.stdout[-3000:]


def test_the_scaffolded_lesson_grades_like_every_lesson(new_lesson):
    """The solution gets every autograded point, the untouched release none, each catalogued wrong
    answer loses its points and each correct one keeps them."""
    root, _, _, graded, _ = new_lesson
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    scores = _scores(root)
    assert scores["solution"] == 3.0 and scores["untouched"] == 0.0, scores
    wrong = {s: v for s, v in scores.items() if s.startswith("wrong--")}
    correct = {s: v for s, v in scores.items() if s.startswith("correct--")}
    assert len(wrong) == 3 and all(v == 0.0 for v in wrong.values()), wrong
    assert len(correct) == 2 and all(v == 3.0 for v in correct.values()), correct


def test_a_new_lesson_touches_its_folder_its_notebook_and_generated_files_only(new_lesson):
    """``make new-lesson`` writes the lesson's folder, its source notebook and the site's page of
    it (and its row in the lessons table), and changes no other file: no list of lessons, no
    registry, no reference package to edit. ``make release`` then adds only generated files: the
    lesson's release and solution, and the gradebook nbgrader keeps."""
    root, _, _, _, touched = new_lesson
    folder = f"instructor/lessons/{LESSON}/"
    assert touched["scaffold"] == sorted([f"docs/lessons/{LESSON}.lesson", "docs/lessons/index.md",
                                          *(f"{folder}{name}.py" for name in ("catalogue", "claims", "reference", "spec")),
                                          f"source/{LESSON}/{LESSON}.ipynb"]), touched["scaffold"]
    generated = (f"notebooks/{LESSON}/", f"solutions/{LESSON}/", "gradebook.db")
    assert touched["release"] and all(path.startswith(generated) for path in touched["release"]), touched["release"]
    index = (root / "docs" / "lessons" / "index.md").read_text()
    assert f"]({LESSON}.lesson)" in index and (root / "docs" / "lessons" / f"{LESSON}.lesson").read_text().strip() == LESSON


def test_the_scaffold_refuses_what_would_clash(tmp_path):
    """A bad id, a number in use, a function another lesson grades: refused, nothing written."""
    root = copy_course(tmp_path / "course", lessons=["01_context_vectors"])
    before = sorted(str(p) for p in root.rglob("*"))
    for args, words in ((["9_example"], "two digits"), (["01_other"], "number 01 is taken"),
                        (["43_other", "--function", "softmax"], "already grades a function named 'softmax'")):
        done = scaffold(root, *args)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
    assert sorted(str(p) for p in root.rglob("*")) == before
