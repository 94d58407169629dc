"""The course in a real browser: JupyterLab, the widgets and the formgrader, in Debian's Chromium.

Playwright (the PyPI package) drives ``/usr/bin/chromium``, never a downloaded browser. One
JupyterLab serves a disposable copy of the course (``conftest.copy_course``) on 127.0.0.1 with a
random token, from the course root so that nbgrader finds ``nbgrader_config.py``; running
notebooks writes outputs and checkpoints into that copy, never into the repository. A second
test starts ``make lab`` exactly as the README says and stops it again.

Every step leaves a screenshot in ``test-artifacts/browser/`` (one PNG per step, named after the
test), with the browser console of each test and the JupyterLab logs beside them.
"""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, copy_course, course_env, lesson_ids

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
JUPYTER = Path(sys.executable).parent / "jupyter"
VIEWPORT = {"width": 1400, "height": 900}

#: Browser console errors that are not the course's fault. Each entry: (substring, why benign).
BENIGN_CONSOLE_ERRORS = [
]

# JupyterLab's own settings for these servers: no news or update checks (there is no network),
# and nothing read from or written to the user's ~/.jupyter.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}


# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_env(home):
    """The course environment plus private Jupyter folders under ``home``."""
    env = course_env()
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                     ("JUPYTERLAB_SETTINGS_DIR", "settings"), ("IPYTHONDIR", "ipython")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    for name, value in LAB_SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env.pop("JUPYTER_TOKEN", None)
    env.pop("BROWSER", None)
    return env


class Lab:
    """A running JupyterLab: its URL, token, process group and log."""

    def __init__(self, command, cwd, env, port, token, log_path, runtime_dir):
        self.port, self.token, self.log_path = port, token, log_path
        self.runtime_dir = Path(runtime_dir)
        self.base = f"http://127.0.0.1:{port}"
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={self.token}"

    def get(self, path, method="GET", timeout=10):
        request = urllib.request.Request(f"{self.base}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, lines=40):
        self._log.flush()
        return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(self, timeout=180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                self.get("/api/status", timeout=3)
                return self
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.3)
        raise AssertionError(f"JupyterLab did not answer /api/status within {timeout} s:\n{self.log_tail()}")

    def shutdown_kernels(self):
        """Shut the test's kernels down in the background (the server stops at the end anyway)."""
        def shutdown():
            try:
                for session in self.get("/api/sessions"):
                    self.get(f"/api/sessions/{session['id']}", method="DELETE", timeout=60)
            except (urllib.error.URLError, OSError):
                pass
        threading.Thread(target=shutdown, daemon=True).start()

    def in_background(self, path):
        """GET ``path`` in a background thread (to warm something up while other tests run)."""
        def fetch():
            try:
                self.get(path, timeout=180)
            except (urllib.error.URLError, OSError, ValueError):
                pass    # whatever went wrong, the test that needs it will see it
        threading.Thread(target=fetch, daemon=True).start()

    def stop(self):
        """Stop the server's whole process group (make, jupyter, kernels), gently first."""
        if self._log.closed:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        try:    # kernels the server started live in its process group; leave none behind
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._log.close()


def _root_flag():
    return ["--allow-root"] if os.geteuid() == 0 else []


@pytest.fixture(scope="module")
def artifacts():
    """``test-artifacts/browser/``, emptied at the start of a run."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def chromium():
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.fail("Chromium is not installed at /usr/bin/chromium: install the Debian package "
                    "`chromium` (apt-get install chromium), or run `.ci/install-system-packages` "
                    "as root. The browser tests never download a browser.")
    return CHROMIUM


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A disposable copy of the course; the lab below serves it from its root."""
    return copy_course(tmp_path_factory.mktemp("browser-course") / "course")


@pytest.fixture(scope="module")
def make_lab(artifacts, tmp_path_factory):
    """``make lab`` started from the repository as the README says, on a free port with a token.

    Started, not awaited: the lab fixture below asks for it first when the make-lab test is
    selected, so that both JupyterLabs start up at the same time. Yields ``(server, None)``, or ``(None, reason)`` when ``make lab``
    cannot be started without reinstalling the environment.
    """
    home = tmp_path_factory.mktemp("make-lab-jupyter")
    env = _lab_env(home)
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):    # as typed in a shell,
        env.pop(var, None)                                                # not nested in make test
    stale = subprocess.run(["make", "-q", ".venv/.installed"], cwd=ROOT, env=env, capture_output=True)
    if stale.returncode != 0:
        yield None, ("the course environment's stamp .venv/.installed is missing or older than "
                     "pyproject.toml, so `make lab` would (re)install the environment first: run "
                     "`make test` (which refreshes it before the tests) or `make lab` once")
        return
    port, token = _free_port(), secrets.token_hex(24)
    command = ["make", "lab", f"LAB_ARGS=--no-browser --port={port} --ServerApp.token={token}"]
    server = Lab(command, ROOT, env, port, token, artifacts / "make-lab.log",
                 home / "runtime")
    try:
        yield server, None
    finally:
        server.stop()


@pytest.fixture(scope="module")
def lab(course, artifacts, tmp_path_factory, request):
    if any(item.name == "test_make_lab_serves_the_course_on_loopback" for item in request.session.items):
        request.getfixturevalue("make_lab")     # start `make lab` now, so both start up together
    home = tmp_path_factory.mktemp("browser-jupyter")
    port, token = _free_port(), secrets.token_hex(24)
    command = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               f"--ServerApp.token={token}", f"--ServerApp.root_dir={course}", *_root_flag()]
    server = Lab(command, course, _lab_env(home), port, token, artifacts / "jupyterlab.log",
                 home / "runtime")
    try:
        server.wait_ready()
        # The formgrader creates the gradebook (alembic) on first use: let that happen while
        # the notebook tests run rather than inside the formgrader test.
        server.in_background("/formgrader/api/assignments")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
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


# ---------------------------------------------------------------------------------------------
# One browser tab per test, with its console and its screenshots
# ---------------------------------------------------------------------------------------------


class Tab:
    def __init__(self, page, lab, name):
        self.page, self.lab, self.name = page, lab, name
        self.console = []                  # (type, text) of every console message and page error
        self.shots = 0
        self.started = time.monotonic()
        page.on("console", lambda m: self.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))

    def shot(self, step, full_page=False):
        self.shots += 1
        path = ARTIFACTS / f"{self.name}-{self.shots:02d}-{step}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        with open(ARTIFACTS / "timings.txt", "a") as log:
            log.write(f"{time.monotonic() - self.started:6.1f} s  {path.name}\n")
        return path

    def console_errors(self):
        errors = [(kind, text) for kind, text in self.console if kind in ("error", "pageerror")]
        return [e for e in errors if not any(pattern in e[1] for pattern, _ in BENIGN_CONSOLE_ERRORS)]

    def assert_no_console_errors(self):
        errors = self.console_errors()
        assert not errors, "console errors in the browser:\n" + "\n".join(f"[{k}] {t}" for k, t in errors)

    # -- JupyterLab ----------------------------------------------------------------------------

    def open_lab(self, path=""):
        """JupyterLab in a workspace of its own (nothing restored from another test)."""
        tail = f"/tree/{path}" if path else ""
        self.page.goto(self.lab.url(f"/lab/workspaces/{self.name}{tail}"))
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).wait_for()

    def menu(self, top, item):
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()

    def notebook(self):
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").last

    def wait_for_kernel(self, path, timeout=120):
        """The notebook's kernel is running and idle, and no dialog (kernel chooser) is open."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dialog = self.page.locator(".jp-Dialog")
            if dialog.count():
                self.shot("unexpected-dialog")
                raise AssertionError(f"a dialog opened with {path} (a kernel chooser means missing "
                                     f"kernelspec metadata): {dialog.first.inner_text()!r}")
            sessions = [s for s in self.lab.get("/api/sessions") if s["path"] == path]
            if sessions and sessions[0]["kernel"]["execution_state"] == "idle":
                assert sessions[0]["kernel"]["name"] == "python3", sessions[0]["kernel"]
                self.page.wait_for_function(JS_KERNEL_IDLE, timeout=timeout * 1000)
                return
            time.sleep(0.25)
        raise AssertionError(f"no idle kernel for {path} after {timeout} s")

    def run_all(self, timeout=150):
        started = time.monotonic()
        self.menu("Run", "Run All Cells")
        self.page.wait_for_function(JS_RAN_ALL, timeout=timeout * 1000, polling=250)
        return time.monotonic() - started

    def prompts(self):
        return self.notebook().locator(".jp-CodeCell .jp-InputPrompt").all_text_contents()

    def stderr_outputs(self):
        """Error and stderr outputs (JupyterLab renders both as application/vnd.jupyter.stderr)."""
        return self.notebook().locator(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').all_text_contents()

    def scroll_to(self, locator):
        locator.scroll_into_view_if_needed()
        self.page.wait_for_timeout(300)    # let content-visibility paint what just came into view

    def scroll_top(self, locator):
        """Scroll so that ``locator``'s top is at the top of the notebook (for a screenshot)."""
        locator.evaluate("el => el.scrollIntoView({block: 'start'})")
        self.page.wait_for_timeout(300)


# The notebook's execution indicator says idle.
JS_KERNEL_IDLE = """() => {
  const panel = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)')].pop();
  const ind = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
  return !!ind && ind.dataset.status === 'idle';
}"""

# After "Run All Cells": the first cell has run, no cell is queued or running, the kernel is idle.
# (Run All marks every cell [*] at once, so this cannot be true before the run has ended; if a
# cell fails, the rest go back to [ ] and this is true as well, and the assertions say which.)
JS_RAN_ALL = """() => {
  const panel = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden)')].pop();
  if (!panel) return false;
  const ind = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
  return !!ind && ind.dataset.status === 'idle' && prompts.length > 0
         && /\\[\\d+\\]/.test(prompts[0]) && !prompts.some(p => p.includes('*'));
}"""


@pytest.fixture(scope="module")
def lab_context(browser, lab):
    """One browser profile for the course's lab (its cache spares reloading JupyterLab each test)."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def tab(lab_context, lab, request):
    name = request.node.name.removeprefix("test_")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
    failed_before = request.session.testsfailed
    page = lab_context.new_page()
    t = Tab(page, lab, name)
    try:
        yield t
    finally:
        if request.session.testsfailed > failed_before:
            try:
                t.shot("FAILED")
            except Exception:   # the page may be gone; the failure itself is what matters
                pass
        (ARTIFACTS / f"{name}-console.txt").write_text(
            "".join(f"[{kind}] {text}\n" for kind, text in t.console))
        page.close()
        lab.shutdown_kernels()


# ---------------------------------------------------------------------------------------------
# What the notebooks are
# ---------------------------------------------------------------------------------------------


def _cells(path):
    return json.loads(Path(path).read_text())["cells"]


def _code_cells(path):
    return [c for c in _cells(path) if c["cell_type"] == "code"]


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _require(course, tree, lesson):
    path = course / tree / lesson / f"{lesson}.ipynb"
    assert path.is_file(), f"{tree}/{lesson}/{lesson}.ipynb is missing: run `make release`"
    return f"{tree}/{lesson}/{lesson}.ipynb"


def _ran_cleanly(tab, course, rel, seconds):
    """Every code cell ran, in order, with no error or stderr output, and the hidden tests passed."""
    prompts = tab.prompts()
    n_code = len(_code_cells(course / rel))
    assert len(prompts) == n_code, f"{rel}: {len(prompts)} code cells in the page, {n_code} in the file"
    unrun = [i for i, p in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", p.strip())]
    errors = tab.stderr_outputs()
    assert not errors, f"{rel}: error/stderr output after Run All ({seconds:.0f} s):\n" + "\n---\n".join(errors)
    assert not unrun, f"{rel}: code cells {unrun} did not run (prompts {prompts})"
    numbers = [int(re.search(r"\d+", p).group()) for p in prompts]
    assert numbers == list(range(1, n_code + 1)), f"{rel}: cells ran out of order: {prompts}"
    # The hidden tests ran in this kernel (the grading helpers are on its path) and passed.
    hidden = [c for c in _code_cells(course / rel) if "BEGIN HIDDEN TESTS" in "".join(c["source"])]
    checked = [name for c in hidden for name in re.findall(r'check\("(\w+)"', "".join(c["source"]))]
    assert len(checked) == len(hidden), f"{rel}: hidden-test cells without check(...): {hidden}"
    outputs = "\n".join(tab.notebook().locator(".jp-OutputArea-output").all_text_contents())
    for name in checked:
        assert f"{name}: hidden tests passed" in outputs, f"{rel}: no 'hidden tests passed' for {name}"


def _run_solution(tab, course, lesson):
    """Open the solved lesson in JupyterLab, Run All Cells, check it ran cleanly; its path."""
    rel = _require(course, "solutions", lesson)
    tab.open_lab(rel)
    tab.notebook().locator(".jp-Cell").first.wait_for()
    tab.wait_for_kernel(rel)
    tab.shot("opened")
    seconds = tab.run_all()
    tab.shot("ran")
    _ran_cleanly(tab, course, rel, seconds)
    return rel


def _explorer(tab, text_selector, plot_selector):
    """The rendered widget's text line, scrolled into view with its plot drawn (screenshot taken)."""
    page = tab.page
    line = page.locator(text_selector)
    assert line.count() == 1, f"the explorer widget did not render (no {text_selector})"
    tab.scroll_to(line)
    page.locator(plot_selector).first.wait_for()
    tab.scroll_top(tab.notebook().locator(".jp-CodeCell", has=page.locator(text_selector)))
    tab.shot("explorer-initial")
    return line


# ---------------------------------------------------------------------------------------------
# Lesson 01: the learner's release and the solution
# ---------------------------------------------------------------------------------------------


def test_learner_opens_lesson_01_release(tab, course):
    """From the file browser, notebooks/ → 01_context_vectors → the notebook: rendered, with its stubs."""
    lesson = "01_context_vectors"
    rel = _require(course, "notebooks", lesson)
    cells = _cells(course / rel)
    stubs = [c for c in cells if c["cell_type"] == "code" and _nbgrader(c).get("solution")]
    answers = [c for c in cells if c["cell_type"] == "markdown" and _nbgrader(c).get("solution")]
    assert stubs and answers, "the release should have code stubs and written answers"
    page = tab.page

    tab.open_lab()
    listing = page.locator(".jp-DirListing-content")
    for folder in ("notebooks", lesson):
        item = listing.locator(".jp-DirListing-item", has=page.locator(
            ".jp-DirListing-itemText", has_text=re.compile(f"^{folder}$")))
        item.wait_for()
        tab.shot(f"file-browser-{folder}")
        item.dblclick()
    item = listing.locator(".jp-DirListing-item", has=page.locator(
        ".jp-DirListing-itemText", has_text=re.compile(rf"^{lesson}\.ipynb$")))
    item.wait_for()
    item.dblclick()

    notebook = tab.notebook()
    notebook.locator(".jp-Cell").first.wait_for()
    tab.wait_for_kernel(rel)
    tab.shot("opened")

    title = notebook.locator(".jp-RenderedMarkdown h1").first
    assert title.text_content().startswith("Lesson 01"), title.text_content()
    current = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel")
    assert current.text_content() == f"{lesson}.ipynb"
    # The exercise stubs are there, as code the learner can edit.
    stub_cells = notebook.locator(".jp-CodeCell", has=page.locator(
        ".cm-content", has_text="raise NotImplementedError()"))
    assert stub_cells.count() == len(stubs), \
        f"{stub_cells.count()} stubs shown, {len(stubs)} solution cells in the release"
    for i in range(stub_cells.count()):
        text = stub_cells.nth(i).locator(".cm-content").text_content()
        assert "# YOUR CODE HERE" in text, text
        assert stub_cells.nth(i).locator(".cm-content").get_attribute("contenteditable") == "true"
    written = notebook.locator(".jp-MarkdownCell .jp-RenderedMarkdown", has_text="YOUR ANSWER HERE")
    assert written.count() == len(answers)
    # A fresh release: nothing has run, nothing is shown as output.
    assert notebook.locator(".jp-OutputArea-output").count() == 0
    assert all(p.strip() in ("[ ]:", "") for p in tab.prompts()), tab.prompts()
    # nbgrader's learner extension: the Validate button in the notebook toolbar.
    assert notebook.locator(".validate-button").count() == 1

    tab.scroll_to(stub_cells.first)
    tab.shot("exercise-1-stub")
    tab.scroll_to(written.first)
    tab.shot("written-answer")
    tab.assert_no_console_errors()


def test_lesson_01_solution_runs_clean(tab, course):
    """The solved lesson 01: Run All Cells; no error output, hidden tests pass, plots and seed 001's numbers shown."""
    rel = _run_solution(tab, course, "01_context_vectors")

    notebook = tab.notebook()
    plots = sum("plt.show()" in "".join(c["source"]) for c in _code_cells(course / rel))
    images = notebook.locator(".jp-OutputArea-output img")
    assert images.count() >= plots, f"{images.count()} images for {plots} plots"
    weights = notebook.locator(".jp-OutputArea-output", has_text="cat's weights:")
    assert weights.count() >= 1
    shown = re.search(r"cat's weights: \[([^\]]*)\]", weights.first.text_content())
    assert shown, weights.first.text_content()
    np.testing.assert_allclose([float(v) for v in shown.group(1).split()], [0.432, 0.389, 0.179],
                               atol=1e-3, err_msg="seed 001: cat's weights ≈ (0.432, 0.389, 0.179)")
    tab.scroll_to(images.nth(0))
    tab.shot("shares-plot")
    tab.scroll_to(weights.first)
    tab.shot("cat-dog-phone")
    tab.assert_no_console_errors()


# ---------------------------------------------------------------------------------------------
# Lessons 02 and 03: the explorers
# ---------------------------------------------------------------------------------------------


def _parse_read(text):
    """'"it" reads (causal): The 0.127 · cat 0.559 · ... → output [0.230, 0.681]'."""
    match = re.fullmatch(r'"(\w+)" reads \((causal|no mask)\): (.*) → output \[(.*)\]', text.strip())
    assert match, f"unexpected explorer text: {text!r}"
    query, mask, shares, output = match.groups()
    pairs = [s.rsplit(" ", 1) for s in shares.split(" · ")]
    return {"query": query, "causal": mask == "causal", "tokens": [t for t, _ in pairs],
            "weights": np.array([float(w) for _, w in pairs]),
            "output": np.array([float(v) for v in output.split(",")])}


def _expected_read(x_it, query, causal):
    from attention_course import widgets
    from attention_reference import self_attention

    return widgets.it_example_state(self_attention, x_it, query=query, causal=causal)


def _check_read(shown, x_it, query, causal):
    expected = _expected_read(x_it, query, causal)
    assert shown["query"] == query and shown["causal"] == causal, shown
    assert shown["tokens"] == expected["tokens"]
    np.testing.assert_allclose(shown["weights"], expected["weights"], atol=1.5e-3,
                               err_msg=f"weights shown for x_it={x_it}, query={query}, causal={causal}")
    np.testing.assert_allclose(shown["output"], expected["output"], atol=1.5e-3)
    return expected


def _changed(tab, selector, before, what, timeout=60_000):
    """Wait until the text (or img src) at ``selector`` differs from ``before``."""
    tab.page.wait_for_function(
        """([sel, before, what]) => {
             const el = document.querySelector(sel);
             if (!el) return false;
             const now = what === 'src' ? el.getAttribute('src') : el.textContent;
             return !!now && now !== before;
           }""", arg=[selector, before, what], timeout=timeout)


def _img_src(tab, selector):
    return tab.page.locator(selector).first.get_attribute("src")


def test_lesson_02_explorer_responds(tab, course):
    """The "it" explorer of lesson 02: sliders, query dropdown and causal mask redraw weights and plot."""
    _run_solution(tab, course, "02_queries_keys_values")
    page = tab.page
    LINE, IMG = ".it-explorer-weights", ".it-explorer-plot img"
    line = _explorer(tab, LINE, IMG)
    first = _parse_read(line.text_content())
    # As the widget starts: seed 004's sentence, "it" reads under the causal mask.
    expected = _check_read(first, (0.2, 0.3, 0.0), "it", True)
    np.testing.assert_allclose(first["weights"], [0.127, 0.559, 0.136, 0.178], atol=1e-3)
    assert first["weights"][expected["tokens"].index("cat")] == first["weights"].max()

    # Drag the handle of x_it[1] to the right.
    slider = page.locator(".widget-slider", has=page.locator(".widget-label", has_text=re.compile(r"^x_it\[1\]$")))
    readout = slider.locator(".widget-readout")
    assert readout.text_content().strip() == "0.30"
    text, src = line.text_content(), _img_src(tab, IMG)
    handle = slider.locator(".noUi-handle")
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 30, box["y"] + box["height"] / 2, steps=6)
    page.mouse.up()
    _changed(tab, LINE, text, "text")
    _changed(tab, IMG, src, "src")
    x1 = float(readout.text_content())
    assert x1 > 0.3, f"dragging right moved x_it[1] to {x1}"
    tab.shot("explorer-x_it1-moved")
    moved = _parse_read(line.text_content())
    _check_read(moved, (0.2, x1, 0.0), "it", True)
    assert not np.allclose(moved["weights"], first["weights"])

    # Another reader: "cat", still causal, reads only "The" and itself.
    text, src = line.text_content(), _img_src(tab, IMG)
    page.locator(".widget-dropdown", has_text="query").locator("select").select_option("cat")
    _changed(tab, LINE, text, "text")
    _changed(tab, IMG, src, "src")
    tab.shot("explorer-query-cat")
    cat = _parse_read(line.text_content())
    _check_read(cat, (0.2, x1, 0.0), "cat", True)
    assert cat["weights"][2:].tolist() == [0.0, 0.0], cat

    # Mask off: "cat" may now read "sat" and "it" too.
    text, src = line.text_content(), _img_src(tab, IMG)
    page.locator(".widget-checkbox", has_text="causal mask").locator("input[type=checkbox]").uncheck()
    _changed(tab, LINE, text, "text")
    _changed(tab, IMG, src, "src")
    tab.shot("explorer-mask-off")
    unmasked = _parse_read(line.text_content())
    _check_read(unmasked, (0.2, x1, 0.0), "cat", False)
    assert unmasked["weights"][3] > 0, unmasked
    tab.assert_no_console_errors()


def _parse_saturation(text):
    match = re.search(r"d_k = (\d+), divisor ([\d.e+-]+): weights \[(.*)\]; max weight ([\d.]+), "
                      r"entropy ([\d.]+) nats", text)
    assert match, f"unexpected explorer text: {text!r}"
    d_k, divisor, weights, max_weight, entropy = match.groups()
    return {"d_k": int(d_k), "divisor": float(divisor),
            "weights": np.array([float(w) for w in weights.split(",")]),
            "max_weight": float(max_weight), "entropy": float(entropy)}


def _check_saturation(shown, d_k, temperature, scaled):
    from attention_course import widgets
    from attention_reference import softmax, softmax_jacobian

    expected = widgets.saturation_state(softmax, softmax_jacobian, d_k, temperature, scaled)
    assert shown["d_k"] == d_k, shown
    np.testing.assert_allclose(shown["weights"], expected["weights"], atol=1.5e-3,
                               err_msg=f"weights shown for d_k={d_k}, T={temperature}, scaled={scaled}")
    assert abs(shown["max_weight"] - expected["max_weight"]) < 1.5e-3
    assert abs(shown["entropy"] - expected["entropy"]) < 1.5e-3
    return expected


def test_lesson_03_explorer_responds(tab, course):
    """The saturation explorer of lesson 03: d_k and temperature sliders and √d_k checkbox redraw it."""
    from playwright.sync_api import expect

    _run_solution(tab, course, "03_scaling")
    page = tab.page
    LINE, IMG = ".saturation-explorer-numbers", ".saturation-explorer-plot img"
    line = _explorer(tab, LINE, IMG)
    _check_saturation(_parse_saturation(line.text_content()), 64, 1.0, True)

    def width_slider():
        return page.locator(".widget-slider", has=page.locator(".widget-label", has_text=re.compile(r"^d_k$")))

    # d_k one notch up, from the keyboard: 64 → 128.
    text, src = line.text_content(), _img_src(tab, IMG)
    width_slider().locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    _changed(tab, LINE, text, "text")
    _changed(tab, IMG, src, "src")
    tab.shot("explorer-d_k-128")
    wide = _check_saturation(_parse_saturation(line.text_content()), 128, 1.0, True)

    # Temperature down two notches (10^-0.1 ≈ 0.79): the weights sharpen.
    heat = page.locator(".widget-slider", has=page.locator(".widget-label", has_text=re.compile(r"^temperature$")))
    text, src = line.text_content(), _img_src(tab, IMG)
    heat.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(heat.locator(".widget-readout")).to_have_text("0.79", timeout=60_000)
    expect(line).to_contain_text(f"divisor {0.1 ** 0.1 * np.sqrt(128):.3g}:", timeout=60_000)
    _changed(tab, IMG, src, "src")
    tab.shot("explorer-temperature-0.79")
    cooler = _check_saturation(_parse_saturation(line.text_content()), 128, 10 ** -0.1, True)
    assert cooler["max_weight"] > wide["max_weight"] and cooler["entropy"] < wide["entropy"]

    # Stop dividing by √d_k: the softmax saturates.
    text, src = line.text_content(), _img_src(tab, IMG)
    page.locator(".widget-checkbox", has_text="divide by").locator("input[type=checkbox]").uncheck()
    _changed(tab, LINE, text, "text")
    _changed(tab, IMG, src, "src")
    tab.shot("explorer-unscaled")
    raw = _check_saturation(_parse_saturation(line.text_content()), 128, 10 ** -0.1, False)
    assert raw["max_weight"] > 0.9 and raw["max_weight"] > cooler["max_weight"], raw["max_weight"]
    tab.assert_no_console_errors()


# ---------------------------------------------------------------------------------------------
# The formgrader
# ---------------------------------------------------------------------------------------------


def test_formgrader_lists_the_assignments(tab, course):
    """Nbgrader → Formgrader inside JupyterLab: every lesson of source/ listed, no setup warning."""
    page = tab.page
    tab.open_lab()
    tab.menu("Nbgrader", "Formgrader")
    frame = page.frame_locator("#formgrader-iframe iframe")
    names = frame.locator("td.name a")
    lessons = lesson_ids()
    names.nth(len(lessons) - 1).wait_for()
    tab.shot("manage-assignments")
    listed = sorted(names.all_text_contents())
    assert listed == lessons, f"formgrader lists {listed}, source/ has {lessons}"
    # Each row links to its release (notebooks/<id>) for preview; nothing warns about the setup.
    rows = frame.locator("tbody tr")
    for i in range(rows.count()):
        row = rows.nth(i)
        assert row.locator("td.preview a").count() == 1, row.inner_text()
        assert row.locator("td.status").inner_text().strip() in ("draft", "released")
    warnings = frame.locator(".alert-warning, .alert-danger").filter(visible=True)
    assert warnings.count() == 0, warnings.all_inner_texts()
    tab.assert_no_console_errors()


# ---------------------------------------------------------------------------------------------
# make lab
# ---------------------------------------------------------------------------------------------


def test_make_lab_serves_the_course_on_loopback(make_lab, browser, artifacts):
    """`make lab` as the README says: JupyterLab on 127.0.0.1, serving notebooks/, with the lessons."""
    server, reason = make_lab
    if server is None:
        pytest.fail(reason)
    before = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").rglob("*"))
    port = server.port
    try:
        server.wait_ready()
        # Where it serves: loopback, and the release folder as its root.
        info = [json.loads(p.read_text()) for p in server.runtime_dir.glob("jpserver-*.json")]
        assert len(info) == 1, info
        assert info[0]["port"] == port and info[0]["hostname"] in ("127.0.0.1", "localhost"), info[0]
        assert Path(info[0]["root_dir"]).resolve() == (ROOT / "notebooks").resolve(), info[0]
        assert server.proc.poll() is None
        with pytest.raises(urllib.error.HTTPError) as refused:    # the token is required
            urllib.request.urlopen(f"{server.base}/api/contents", timeout=10)
        assert refused.value.code == 403
        top = {item["name"] for item in server.get("/api/contents")["content"]}
        assert set(lesson_ids()) <= top, f"notebooks/ served as {sorted(top)}"
        lesson = server.get("/api/contents/01_context_vectors")
        assert "01_context_vectors.ipynb" in {item["name"] for item in lesson["content"]}

        # And in the browser: the file browser shows the lessons.
        context = browser.new_context(viewport=VIEWPORT)
        try:
            page = context.new_page()
            page.goto(server.url("/lab"))
            page.locator(".jp-DirListing-itemText", has_text="01_context_vectors").wait_for(timeout=90_000)
            page.screenshot(path=str(artifacts / "make_lab-01-file-browser.png"))
            shown = page.locator(".jp-DirListing-itemText").all_text_contents()
            assert set(lesson_ids()) <= set(shown), shown
        finally:
            context.close()
    finally:
        server.stop()
    assert server.proc.returncode is not None
    with pytest.raises(OSError):       # stopped: nothing answers on the port any more
        urllib.request.urlopen(f"{server.base}/api/status", timeout=5)
    after = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").rglob("*"))
    assert after == before, "make lab wrote into notebooks/: " + str(sorted(set(after) ^ set(before)))
