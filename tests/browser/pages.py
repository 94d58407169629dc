"""The page object ``Tab`` (one browser tab per test, with its console and screenshots), what
the tests look up in notebooks and in JupyterLab, and the lesson explorers."""
import contextlib
import json
import re
import time
from pathlib import Path

from .scripts import JS_CHANGED, JS_KERNEL_IDLE, JS_RAN_ALL

VIEWPORT = {"width": 1400, "height": 900}

#: Browser console errors that are not the course's fault. Each entry: (substring, why benign).
BENIGN_CONSOLE_ERRORS = [
    ("Could not restore the debugger state: Canceled future for debug_request message",
     "JupyterLab's debugger asks a kernel that has just started for its state; a notebook closed "
     "before the kernel answers (the learner loop closes it once its kernel is idle) cancels that "
     "request of JupyterLab's own: nothing of the page or the course failed"),
]


class Tab:
    """One browser tab of a test: its console, its numbered screenshots in ``artifacts``."""

    def __init__(self, page, lab, name, artifacts):
        self.page, self.lab, self.name, self.artifacts = page, lab, name, Path(artifacts)
        self.console = []                  # (type, text) of every console message and page error
        self.shots = 0
        self.started = time.monotonic()
        page.on("console", lambda m: self.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))

    def shot(self, step, full_page=False):
        self.shots += 1
        path = self.artifacts / f"{self.name}-{self.shots:02d}-{step}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        with open(self.artifacts / "timings.txt", "a") as log:
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

    def formgrader(self):
        """Nbgrader → Formgrader: the formgrader's frame inside JupyterLab."""
        self.menu("Nbgrader", "Formgrader")
        return self.page.frame_locator("#formgrader-iframe iframe")

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


@contextlib.contextmanager
def browser_context(browser):
    """A browser profile of its own, with the tests' viewport and a 60 s default timeout."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    try:
        yield context
    finally:
        context.close()


def artifact_name(request):
    """The test's name as used in artifact file names: no ``test_`` prefix, no odd characters."""
    name = request.node.name.removeprefix("test_")
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")


@contextlib.contextmanager
def open_tab(context, lab, request, artifacts, name=None):
    """A new tab in ``context`` for the test of ``request`` (artifacts named ``name``, by default
    the test's); on the way out a screenshot if the test failed, its console in
    ``<name>-console.txt``, the tab closed, its kernels shut down."""
    name = name or artifact_name(request)
    failed_before = request.session.testsfailed
    page = context.new_page()
    tab = Tab(page, lab, name, artifacts)
    try:
        yield tab
    finally:
        if request.session.testsfailed > failed_before:
            try:
                tab.shot("FAILED")
            except Exception:   # the page may be gone; the failure itself is what matters
                pass
        (Path(artifacts) / f"{name}-console.txt").write_text(
            "".join(f"[{kind}] {text}\n" for kind, text in tab.console))
        page.close()
        if lab is not None:
            lab.shutdown_kernels()


# ---------------------------------------------------------------------------------------------
# What the notebooks are
# ---------------------------------------------------------------------------------------------


def cells(path):
    return json.loads(Path(path).read_text())["cells"]


def code_cells(path):
    return [c for c in cells(path) if c["cell_type"] == "code"]


def nbgrader_metadata(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def require(course, tree, lesson):
    """``<tree>/<lesson>/<lesson>.ipynb`` of the course copy, relative to it; it must exist."""
    path = course / tree / lesson / f"{lesson}.ipynb"
    assert path.is_file(), f"{tree}/{lesson}/{lesson}.ipynb is missing: run `make release`"
    return f"{tree}/{lesson}/{lesson}.ipynb"


def assert_ran_cleanly(tab, course, rel, seconds):
    """Every code cell ran, in order, with no error or stderr output, and the hidden tests passed."""
    prompts = tab.prompts()
    n_code = len(code_cells(course / rel))
    assert len(prompts) == n_code, f"{rel}: {len(prompts)} code cells in the page, {n_code} in the file"
    unrun = [i for i, p in enumerate(prompts) if not re.fullmatch(r"\[\d+\]:", p.strip())]
    errors = tab.stderr_outputs()
    assert not errors, f"{rel}: error/stderr output after Run All ({seconds:.0f} s):\n" + "\n---\n".join(errors)
    assert not unrun, f"{rel}: code cells {unrun} did not run (prompts {prompts})"
    numbers = [int(re.search(r"\d+", p).group()) for p in prompts]
    assert numbers == list(range(1, n_code + 1)), f"{rel}: cells ran out of order: {prompts}"
    # The hidden tests ran in this kernel (the grading helpers are on its path) and passed.
    hidden = [c for c in code_cells(course / rel) if "BEGIN HIDDEN TESTS" in "".join(c["source"])]
    checked = [c["metadata"].get("attention_course", {}).get("spec") for c in hidden]     # the hidden test each names
    assert all(checked), f"{rel}: hidden-test cells that name no hidden test: {hidden}"
    outputs = "\n".join(tab.notebook().locator(".jp-OutputArea-output").all_text_contents())
    for name in checked:
        assert f"{name}: hidden tests passed" in outputs, f"{rel}: no 'hidden tests passed' for {name}"


def run_solution(tab, course, lesson):
    """Open the solved lesson in JupyterLab, Run All Cells, check it ran cleanly; its path."""
    rel = require(course, "solutions", lesson)
    tab.open_lab(rel)
    tab.notebook().locator(".jp-Cell").first.wait_for()
    tab.wait_for_kernel(rel)
    tab.shot("opened")
    seconds = tab.run_all()
    tab.shot("ran")
    assert_ran_cleanly(tab, course, rel, seconds)
    return rel


# ---------------------------------------------------------------------------------------------
# The lesson explorers (ipywidgets)
# ---------------------------------------------------------------------------------------------


def explorer(tab, text_selector, plot_selector):
    """The rendered widget's text line, scrolled into view with its plot drawn (screenshot taken)."""
    page = tab.page
    line = page.locator(text_selector)
    assert line.count() == 1, f"the explorer widget did not render (no {text_selector})"
    tab.scroll_to(line)
    page.locator(plot_selector).first.wait_for()
    tab.scroll_top(tab.notebook().locator(".jp-CodeCell", has=page.locator(text_selector)))
    tab.shot("explorer-initial")
    return line


def wait_changed(tab, selector, before, what, timeout=60_000):
    """Wait until the text (``what="text"``) or img src (``what="src"``) at ``selector`` differs
    from ``before``."""
    tab.page.wait_for_function(JS_CHANGED, arg=[selector, before, what], timeout=timeout)


def img_src(tab, selector):
    return tab.page.locator(selector).first.get_attribute("src")


def widget_slider(page, label):
    """The ipywidgets slider whose label is exactly ``label``."""
    return page.locator(".widget-slider",
                        has=page.locator(".widget-label", has_text=re.compile(f"^{re.escape(label)}$")))
