"""What the course says it installs is what installs: pyproject.toml's dependencies are ranges that
fit an existing image, constraints.txt holds the exact versions `make` installs and the tests ran
on, environment.yml (conda, Binder) lists the same versions, and the lowest Python that
`requires-python` claims can resolve the learner's requirements."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

import background
from conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LEARNER = [Requirement(spec) for spec in PROJECT["dependencies"]]
INSTRUCTOR = [Requirement(spec) for spec in PROJECT["optional-dependencies"]["instructor"]]


def _name(name):
    return name.strip().lower().replace("_", "-")


def constraints():
    """{package: version} of constraints.txt."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[_name(name)] = version.strip()
    return pins


def environment_lines():
    """{package: (version, comment)} of environment.yml's pinned pip lines."""
    lines = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+)==([^\s#]+)\s*(?:#\s*(.*))?$", line)
        if match:
            lines[_name(match.group(1))] = (match.group(2), match.group(3) or "")
    return lines


def lowest_python():
    """The lowest Python version `requires-python` allows, as "3.N"."""
    allowed = SpecifierSet(PROJECT["requires-python"])
    return next(f"3.{minor}" for minor in range(6, 30) if f"3.{minor}" in allowed)


def test_dependencies_are_ranges_holding_the_tested_versions():
    """Every dependency is a range (never one exact version), and constraints.txt pins each of
    them exactly, inside its range: `pip install .` fits an image, `make` installs what was tested."""
    pins = constraints()
    for requirement in LEARNER + INSTRUCTOR:
        specifiers = list(requirement.specifier)
        assert specifiers and not any(s.operator in ("==", "===") for s in specifiers), requirement
        name = _name(requirement.name)
        assert name in pins, f"{name} has no tested version in constraints.txt"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement}"
    assert set(pins) == {_name(r.name) for r in LEARNER + INSTRUCTOR}, "constraints.txt pins other packages"


def test_the_extra_only_adds_packages():
    """No package is listed twice (once for learners, again in the extra)."""
    assert not {_name(r.name) for r in LEARNER} & {_name(r.name) for r in INSTRUCTOR}


def test_environment_yml_matches_constraints():
    """Same packages, same versions, on both paths: conda/Binder and `make`."""
    assert {name: version for name, (version, _) in environment_lines().items()} == constraints()


def test_environment_yml_marks_the_instructor_only_packages():
    """Each package says why it is there; exactly the extra's are marked "instructor only"."""
    lines = environment_lines()
    assert all(comment for _, comment in lines.values()), lines
    marked = {name for name, (_, comment) in lines.items() if comment.startswith("instructor only")}
    assert marked == {_name(r.name) for r in INSTRUCTOR}


def test_environment_yml_installs_the_course_package():
    """Binder users get attention_course too (pip install -e . from the repository)."""
    assert re.search(r"^\s*-\s+-e \.\s", (ROOT / "environment.yml").read_text(), re.M)


def test_environment_yml_python_is_the_lowest_claimed():
    """conda's Python is the one requires-python claims (and the tests run on)."""
    assert re.search(rf"^\s*-\s+python={re.escape(lowest_python())}\s*$", (ROOT / "environment.yml").read_text(), re.M)


def test_make_installs_with_the_constraints():
    """`make` installs the tested versions (constraints.txt), and reinstalls when they change."""
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^\$\(STAMP\):.*\bconstraints\.txt\b", makefile, re.M)
    assert "-c constraints.txt -e '.[instructor]'" in makefile


def test_nbgrader_pairs_with_jupyterlab_4_and_notebook_7():
    """nbgrader 0.9.x needs JupyterLab 4 and Notebook 7, in the ranges and in the tested set."""
    pins = constraints()
    assert pins["nbgrader"].startswith("0.9.") and pins["jupyterlab"].startswith("4.")
    assert pins["notebook"].startswith("7.")
    ranges = {_name(r.name): r.specifier for r in LEARNER}
    assert not ranges["jupyterlab"].contains("5.0") and not ranges["notebook"].contains("8.0")


def _resolve(*args):
    """What pip would install for the learner's requirements on the lowest claimed Python, binary
    wheels only, from the package index this machine uses (nothing is installed)."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                           "--python-version", lowest_python(), "--only-binary=:all:", "--quiet",
                           "--disable-pip-version-check", "--report", "-", *args,
                           *[str(r) for r in LEARNER]], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    return {_name(item["metadata"]["name"]): item["metadata"]["version"] for item in report["install"]}


IMAGE = {"numpy": "2.1.3", "matplotlib": "3.9.2", "ipywidgets": "8.1.5", "tqdm": "4.66.5",
         "jupyterlab": "4.2.5", "notebook": "7.2.2"}


@background.fixture()
def resolutions(folder, session):
    """pip's resolutions of the learner's requirements on the lowest claimed Python: as they are
    (``"open"``), with constraints.txt (``"tested"``) and with the pins of an existing image
    (``"image"``, IMAGE). In the background: each is a run of pip's resolver, about 30 s."""
    image = Path(folder) / "image.txt"
    image.write_text("".join(f"{name}=={version}\n" for name, version in IMAGE.items()))
    return {"open": _resolve(), "tested": _resolve("-c", str(ROOT / "constraints.txt")),
            "image": _resolve("-c", str(image))}


@pytest.mark.full      # pip's resolver: the quick tier keeps the other packaging checks
def test_the_lowest_claimed_python_resolves_the_learners_requirements(resolutions):
    """pip resolves `pip install .`'s requirements for the lowest requires-python version, and
    with constraints.txt it picks exactly the tested versions."""
    assert {_name(r.name) for r in LEARNER} <= set(resolutions["open"])
    tested = resolutions["tested"]
    for requirement in LEARNER:
        assert tested[_name(requirement.name)] == constraints()[_name(requirement.name)]


@pytest.mark.full   # a pip resolution of its own
def test_an_existing_image_keeps_its_packages(resolutions):
    """An image that already has older NumPy, Matplotlib, JupyterLab and Notebook releases (a
    JupyterHub image of 2024) takes the course without any of them being replaced."""
    resolved = resolutions["image"]
    assert {name: resolved[name] for name in IMAGE} == IMAGE


def test_readme_names_the_lowest_python():
    """The set-up section names the Python that requires-python claims."""
    assert f"`python3` ({lowest_python()} or newer)" in (ROOT / "README.md").read_text()
