"""The pip path (pyproject.toml) and the conda/Binder path (environment.yml) install the same thing."""
import re
import tomllib

from conftest import ROOT


def pyproject_pins():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(_split(spec) for spec in data["project"]["dependencies"])


def environment_pins():
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+==[^\s#]+)", line)
        if match:
            name, version = _split(match.group(1))
            pins[name] = version
    return pins


def _split(spec):
    name, version = spec.split("==")
    return name.strip().lower().replace("_", "-"), version.strip()


def test_every_dependency_is_pinned_exactly():
    """Known-good versions, not ranges: a fresh clone installs what the tests ran on."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    loose = [d for d in data["project"]["dependencies"] if "==" not in d]
    assert not loose, f"unpinned dependencies: {loose}"


def test_environment_yml_matches_pyproject():
    """Same packages, same versions, on both paths."""
    assert environment_pins() == pyproject_pins()


def test_environment_yml_installs_the_course_package():
    """Binder users get attention_course too (pip install -e . from the repository)."""
    assert re.search(r"^\s*-\s+-e \.\s", (ROOT / "environment.yml").read_text(), re.M)


def test_nbgrader_pairs_with_jupyterlab_4_and_notebook_7():
    """nbgrader 0.9.x needs JupyterLab 4 and Notebook 7."""
    pins = pyproject_pins()
    assert pins["nbgrader"].startswith("0.9.")
    assert pins["jupyterlab"].startswith("4.")
    assert pins["notebook"].startswith("7.")
