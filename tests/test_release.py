"""notebooks/ and solutions/ are exactly what `make release` makes from source/ today;
no stored notebook carries outputs; nothing a learner receives holds the reference or a hidden test."""
import filecmp
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

import background
import leaks
from conftest import ROOT, copy_course, lesson_ids

LEAKS = ["attention_reference", "attention_grading", "BEGIN HIDDEN TESTS", "BEGIN SOLUTION"]


@background.fixture()
def regenerated(folder, session):
    """(a copy of the course whose notebooks/ and solutions/ `make release` made afresh, what the
    command said)."""
    root = copy_course(Path(folder) / "course")
    for generated in ("notebooks", "solutions"):
        for path in (root / generated).rglob("*.ipynb"):
            path.unlink()
    done = subprocess.run([sys.executable, "-m", "attention_grading.cli.release", "--root", str(root)],
                          capture_output=True, text=True, cwd=root,
                          env={"PYTHONPATH": str(ROOT / "instructor" / "grading"), "PATH": "/usr/bin:/bin"})
    return root, done


def test_release_and_solutions_are_up_to_date(regenerated):
    """Regenerating into a copy of the course changes nothing: run `make release` if this fails."""
    root, done = regenerated
    assert done.returncode == 0, done.stderr
    for generated in ("notebooks", "solutions"):
        fresh = sorted(p.relative_to(root) for p in (root / generated).rglob("*.ipynb"))
        stored = sorted(p.relative_to(ROOT) for p in (ROOT / generated).rglob("*.ipynb"))
        assert fresh == stored, f"{generated}/ holds other notebooks than source/ makes"
        stale = [str(p) for p in stored if not filecmp.cmp(ROOT / p, root / p, shallow=False)]
        assert not stale, f"stale, run `make release`: {stale}"


@pytest.mark.parametrize("tree", ["source", "notebooks"])
def test_stored_notebooks_have_no_outputs(tree):
    """Outputs are made by running a notebook, never stored with it."""
    notebooks = list((ROOT / tree).rglob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{path} stores outputs"


def test_every_lesson_is_released():
    """Each lesson in source/ has its learner notebook and its solution."""
    for lesson in lesson_ids():
        assert (ROOT / "notebooks" / lesson / f"{lesson}.ipynb").is_file()
        assert (ROOT / "solutions" / lesson / f"{lesson}.ipynb").is_file()


def test_source_lessons_hold_only_their_notebook():
    """nbgrader copies every other file of source/<id>/ to learners: keep the reference out."""
    for lesson in lesson_ids():
        extra = [p.name for p in (ROOT / "source" / lesson).iterdir()
                 if p.name != f"{lesson}.ipynb" and p.name != ".ipynb_checkpoints"]
        assert not extra, f"source/{lesson} would release {extra}"


def test_learner_release_folder_has_no_reference_or_hidden_tests():
    """Nothing under notebooks/ mentions the reference, the grading helpers or hidden tests, nor
    holds a distinctive line of a lesson's reference (``instructor/lessons/<id>/reference.py``)."""
    reference = leaks.reference_lines()
    assert reference
    for path in (ROOT / "notebooks").rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [leak for leak in LEAKS if leak in text], path
            assert not [line for line in reference if line in text or json.dumps(line)[1:-1] in text], path


@background.fixture()
def wheel(folder, session):
    """The wheel `pip install .` builds from this repository (built once for the tests below)."""
    folder = Path(folder)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "-w", str(folder), str(ROOT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = folder.glob("*.whl")
    return path


def test_installed_package_has_no_reference_or_hidden_tests(wheel):
    """The wheel a learner installs holds attention_course only, and the learners' nbgrader
    configuration (installed in the environment's etc/jupyter/, where nbgrader looks)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        packages = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
        assert packages == {"attention_course"}, packages
        data = [n for n in names if n.split("/")[0].endswith(".data")]
        assert [n.split("/", 2)[2] for n in data] == ["etc/jupyter/nbgrader_config.py"], data
        for name in names:
            if ".dist-info/" in name:   # METADATA carries the README, which describes the layout
                continue
            text = archive.read(name).decode(errors="replace")
            assert not [leak for leak in LEAKS if leak in text], name


def test_the_wheel_carries_lesson_09s_text(wheel):
    """Lesson 09 reads its Shakespeare from the installed package: the wheel must hold the file."""
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("attention_course/data/shakespeare.txt").decode("ascii")
    assert text == (ROOT / "src" / "attention_course" / "data" / "shakespeare.txt").read_text(encoding="ascii")


LESSON_PACKAGES = {"numpy", "matplotlib", "ipywidgets", "tqdm", "jupyterlab", "notebook", "nbgrader",
                   "jsonschema"}
INSTRUCTOR_TOOLS = {"pytest", "nbval", "playwright", "psycopg2-binary", "scipy", "distributed", "dask", "latex2mathml",
                    "cryptography", "pyseccomp", "nh3", "jinja2", "html5lib", "sphinx", "myst-nb", "furo", "watchdog"}


def test_learner_install_brings_the_lessons_packages_and_the_extra_the_tools(wheel):
    """`pip install .` requires what the lessons need and nothing else; the tests' and grading's
    tools (pytest, nbval, Playwright, psycopg2, scipy, Dask, latex2mathml, cryptography, the
    sandbox's and the sanitiser's libraries) and the documentation site's (Sphinx, myst-nb, furo)
    come only with `pip install .[instructor]`; each as pyproject.toml asks."""
    import email
    import tomllib

    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(name))
    required = [Requirement(line) for line in metadata.get_all("Requires-Dist")]
    always = {r.name.lower(): str(r.specifier) for r in required if r.marker is None}
    extra = {r.name.lower(): str(r.specifier) for r in required if str(r.marker) == 'extra == "instructor"'}
    assert len(always) + len(extra) == len(required), "a requirement under another condition"
    assert metadata.get_all("Provides-Extra") == ["instructor"]
    assert set(always) == LESSON_PACKAGES and set(extra) == INSTRUCTOR_TOOLS
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = lambda specs: {r.name.lower(): str(r.specifier) for r in map(Requirement, specs)}  # noqa: E731
    assert always == pinned(project["dependencies"])
    assert extra == pinned(project["optional-dependencies"]["instructor"])
