"""The pip path (pyproject.toml) and the conda/Binder path (environment.yml) install the same thing:
pyproject's dependencies (what `pip install .` gives a learner) and its `instructor` extra."""
import re
import tomllib

from conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LEARNER = PROJECT["dependencies"]
INSTRUCTOR = PROJECT["optional-dependencies"]["instructor"]


def pins(specs):
    return dict(_split(spec) for spec in specs)


def environment_lines():
    """{package: (version, comment)} of environment.yml's pinned pip lines."""
    lines = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+==[^\s#]+)\s*(?:#\s*(.*))?$", line)
        if match:
            name, version = _split(match.group(1))
            lines[name] = (version, match.group(2) or "")
    return lines


def _split(spec):
    name, version = spec.split("==")
    return name.strip().lower().replace("_", "-"), version.strip()


def test_every_dependency_is_pinned_exactly():
    """Known-good versions, not ranges, in the learner's list and in the extra: a fresh clone
    installs what the tests ran on."""
    loose = [d for d in LEARNER + INSTRUCTOR if "==" not in d]
    assert not loose, f"unpinned dependencies: {loose}"


def test_the_extra_only_adds_packages():
    """No package is pinned twice (once for learners, again in the extra)."""
    assert not set(pins(LEARNER)) & set(pins(INSTRUCTOR))


def test_environment_yml_matches_pyproject():
    """Same packages, same versions, on both paths: the learner's and the instructor's."""
    listed = {name: version for name, (version, _) in environment_lines().items()}
    assert listed == {**pins(LEARNER), **pins(INSTRUCTOR)}


def test_environment_yml_marks_the_instructor_only_packages():
    """Each package says why it is there; exactly the extra's are marked "instructor only"."""
    lines = environment_lines()
    assert all(comment for _, comment in lines.values()), lines
    marked = {name for name, (_, comment) in lines.items() if comment.startswith("instructor only")}
    assert marked == set(pins(INSTRUCTOR))


def test_environment_yml_installs_the_course_package():
    """Binder users get attention_course too (pip install -e . from the repository)."""
    assert re.search(r"^\s*-\s+-e \.\s", (ROOT / "environment.yml").read_text(), re.M)


def test_nbgrader_pairs_with_jupyterlab_4_and_notebook_7():
    """nbgrader 0.9.x needs JupyterLab 4 and Notebook 7."""
    learner = pins(LEARNER)
    assert learner["nbgrader"].startswith("0.9.")
    assert learner["jupyterlab"].startswith("4.")
    assert learner["notebook"].startswith("7.")
