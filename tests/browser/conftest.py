"""Fixtures of the browser tests. Every server, browser and folder lives on a fixture: the
package's (``scope="package"``: one Chromium, one JupyterLab on one course copy, stopped when
the last browser test is done) or a test module's own."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, copy_course

from .pages import browser_context, open_tab
from .servers import make_lab_env, make_lab_would_reinstall, start_course_lab, start_make_lab

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="package")
def artifacts():
    """``test-artifacts/browser/``, emptied at the start of the browser tests."""
    folder = ROOT / "test-artifacts" / "browser"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@pytest.fixture(scope="package")
def chromium():
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail("Chromium is not installed at /usr/bin/chromium: install the Debian package "
                    "`chromium` (apt-get install chromium), or run `.ci/install-system-packages` "
                    "as root. The browser tests never download a browser.")
    return CHROMIUM


@pytest.fixture(scope="package")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chrome = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        debian = subprocess.run([str(chromium), "--version"], capture_output=True, text=True).stdout
        assert chrome.version in debian, f"Playwright runs Chromium {chrome.version}, not {debian!r}"
        try:
            yield chrome
        finally:
            chrome.close()


@pytest.fixture(scope="package")
def course(tmp_path_factory):
    """A disposable copy of the course; the lab below serves it from its root."""
    return copy_course(tmp_path_factory.mktemp("browser-course") / "course")


@pytest.fixture(scope="package")
def make_lab(artifacts, tmp_path_factory):
    """``make lab`` started from the repository as the README says, on a port the system chooses,
    with a token.

    Started, not awaited: the lab fixture below asks for it first when a selected test uses it,
    so that both JupyterLabs start up at the same time. Yields ``(server, None)``, or
    ``(None, reason)`` when ``make lab`` cannot be started without reinstalling the environment.
    """
    home = tmp_path_factory.mktemp("make-lab-jupyter")
    env = make_lab_env(home)
    reason = make_lab_would_reinstall(env)
    if reason:
        yield None, reason
        return
    with start_make_lab(env, home, artifacts / "make-lab.log") as server:
        yield server, None


@pytest.fixture(scope="package")
def lab(course, artifacts, tmp_path_factory, request):
    """JupyterLab serving ``course`` from its root (the learner's and the instructor's lab)."""
    if any("make_lab" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("make_lab")     # start `make lab` now, so both start up together
    with start_course_lab(course, tmp_path_factory.mktemp("browser-jupyter"),
                          artifacts / "jupyterlab.log") as server:
        server.wait_ready()
        # The formgrader creates the gradebook (alembic) on first use: let that happen while
        # the notebook tests run rather than inside the formgrader test.
        server.in_background("/formgrader/api/assignments")
        yield server


@pytest.fixture(scope="package")
def lab_context(browser, lab):
    """One browser profile for the course's lab (its cache spares reloading JupyterLab each test)."""
    with browser_context(browser) as context:
        yield context


@pytest.fixture
def tab(lab_context, lab, request, artifacts):
    """A new tab on the course's lab, for this test."""
    with open_tab(lab_context, lab, request, artifacts) as opened:
        yield opened
