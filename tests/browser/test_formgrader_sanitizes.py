"""Learner HTML and JavaScript never run in the formgrader or in the feedback.

A hostile learner hands in lesson 01, solved, with script in everything they own: a code cell of
their own that displays HTML (a ``<script>`` and an ``<img onerror>``), Markdown with the same,
and JavaScript; and a written answer (``row_softmax_answer``) with the same ``<script>`` and
``<img onerror>``. Every payload calls a loopback server the test runs, leaves a flag in its
window and opens a dialog (``probes``). ``make grade`` grades it in a course copy of its own
(``attention_grading.sanitize.SanitizeLearnerHTML`` cleans what it stores); the instructor then
opens it in the formgrader inside JupyterLab, and the feedback HTML is opened as the learner
would. Nothing may run, and the learner's words must still be shown.

A control renders the submission as handed in through the formgrader's own template, without
sanitising: every payload runs there, so the checks can fail. Two more tests close holes found
on the way: image size metadata that nbconvert writes into the page unquoted, and a file handed in
beside the notebook that the formgrader would serve from its own origin.
"""
import contextlib
import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

from conftest import copy_course
from grading_helpers import LESSON, notebook, run_grade, submit

from .pages import browser_context, open_tab
from .probes import Probe
from .scripts import JS_ACTIVE_CONTENT
from .servers import start_course_lab

pytestmark = pytest.mark.browser

STUDENT = "mallory"
ANSWER_ID = "row_softmax_answer"
ANSWER_WORDS = "Each row is one token's own budget"
HTML_OUTPUT_WORDS = "Weights the learner printed as HTML"
MARKDOWN_OUTPUT_WORDS = "Weights the learner printed as Markdown"
LINKED_FILE = "derivation.html"     # handed in beside the notebook, linked from the answer
LINK_TEXT = "my derivation"
LEARNER_CELL_ID = "learner-displays"    # the code cell the learner added

#: Where the learner hid script: the payloads of ``hostile_submission``, by vector name.
VECTORS = ["answer-script", "answer-img-onerror", "output-html-script", "output-html-img-onerror",
           "output-javascript", "output-markdown-script", "output-markdown-img-onerror"]

#: The mime type of each ``IPython.display`` object the learner's cell displays.
DISPLAY_TYPES = {"HTML": "text/html", "Javascript": "application/javascript", "Markdown": "text/markdown"}

# The formgrader's view of a submission and the feedback both put the notebook here.
NOTEBOOK_CONTAINER = "#notebook-container"


def learner_displays(probe):
    """(IPython.display class, text) of each output of the learner's own code cell."""
    return [("HTML", probe.html(HTML_OUTPUT_WORDS, "output-html")),
            ("Javascript", probe.script("output-javascript")),
            ("Markdown", probe.html(MARKDOWN_OUTPUT_WORDS, "output-markdown"))]


def learner_code_cell(probe):
    """A code cell the learner added, with the outputs their own run of it produced."""
    displays = learner_displays(probe)
    source = "from IPython.display import HTML, Javascript, Markdown, display\n\n" + "".join(
        f"display({kind}({text!r}))\n" for kind, text in displays)
    outputs = [{"output_type": "display_data", "metadata": {},
                "data": {DISPLAY_TYPES[kind]: text, "text/plain": f"<IPython.core.display.{kind} object>"}}
               for kind, text in displays]
    return {"cell_type": "code", "id": LEARNER_CELL_ID, "metadata": {}, "execution_count": 1,
            "outputs": outputs, "source": source}


def is_written_answer(cell):
    return cell["metadata"].get("nbgrader", {}).get("grade_id") == ANSWER_ID


def hostile_submission(probe):
    """Lesson 01 solved, with script in the written answer and in a code cell of the learner's
    (a notebook as a dict, its last cell the learner's)."""
    nb = json.loads(notebook("correct"))
    answers = [c for c in nb["cells"] if is_written_answer(c)]
    assert len(answers) == 1, f"lesson 01 has no single written answer {ANSWER_ID}"
    answers[0]["source"] = (probe.html(ANSWER_WORDS, "answer")
                            + f"\n\nThe algebra is in [{LINK_TEXT}]({LINKED_FILE}).")
    nb["cells"].append(learner_code_cell(probe))
    return nb


def learner_cells(nb):
    """``nb`` cut down to the cells the learner wrote script into (every payload; quick to render)."""
    return {**nb, "cells": [c for c in nb["cells"] if is_written_answer(c) or c.get("id") == LEARNER_CELL_ID]}


def notebook_node(nb):
    """The notebook ``nb`` (a dict, as on disk or as nbformat holds it) as nbformat reads it."""
    return nbformat.reads(json.dumps(nb), as_version=4)


def formgrader_render(nb, path):
    """The notebook ``nb`` rendered to ``path`` as the formgrader renders a submission
    (its template, its scripts loaded from the installed nbgrader), and nothing else done to it."""
    from nbconvert import HTMLExporter

    # nbgrader/server_extensions/formgrader/{templates,static}, found without importing the server
    formgrader = Path(importlib.util.find_spec("nbgrader").submodule_search_locations[0],
                      "server_extensions", "formgrader")
    exporter = HTMLExporter(template_name="formgrade", extra_template_basedirs=[str(formgrader / "templates")])
    resources = {"assignment_id": LESSON, "notebook_id": LESSON, "submission_id": "control",
                 "index": 0, "total": 1, "student": STUDENT, "first_name": None, "last_name": None,
                 "base_url": formgrader.parent.as_uri(), "notebook_path": ""}
    html, _ = exporter.from_notebook_node(notebook_node(nb), resources=resources)
    path.write_text(html)
    return path


def assert_learner_text_shown(page_or_frame, *words):
    for text in words:
        shown = page_or_frame.get_by_text(text, exact=False)
        assert shown.count() >= 1 and shown.first.is_visible(), f"the learner's words {text!r} are not shown"


def assert_no_active_content(frame, where):
    active = frame.evaluate(JS_ACTIVE_CONTENT, NOTEBOOK_CONTAINER)
    assert not active, f"{where} holds elements that can run script: {active}"


# ---------------------------------------------------------------------------------------------
# Fixtures: one probe, one graded course and one JupyterLab for the module
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def probe():
    listening = Probe()
    try:
        yield listening
    finally:
        listening.close()


@pytest.fixture(scope="module")
def hostile_course(tmp_path_factory, probe):
    """A course copy (lesson 01 only) with the hostile submission in ``submitted/``."""
    root = copy_course(tmp_path_factory.mktemp("sanitising") / "course", lessons=[LESSON])
    folder = submit(root, STUDENT, json.dumps(hostile_submission(probe), indent=1))
    (folder / LINKED_FILE).write_text(f"<h1>Derivation</h1><script>{probe.script('linked-file')}</script>")
    return root


@pytest.fixture(scope="module")
def formgrader_lab(hostile_course, artifacts, tmp_path_factory):
    """JupyterLab at the root of the hostile course; ``make grade`` grades it while the lab starts."""
    with start_course_lab(hostile_course, tmp_path_factory.mktemp("sanitising-jupyter"),
                          artifacts / "formgrader-sanitizes-jupyterlab.log") as server:
        graded = run_grade(hostile_course, "--workers", "1", "--no-report")
        assert graded.returncode == 0, f"make grade failed:\n{graded.stdout}\n{graded.stderr[-3000:]}"
        server.wait_ready()
        yield server


@contextlib.contextmanager
def watched_tab(browser, lab, request, artifacts, probe):
    """A tab in a browser profile of its own (on ``lab``, or on files when None), watched by the probe."""
    with browser_context(browser) as context, open_tab(context, lab, request, artifacts) as tab:
        probe.watch(tab.page)
        yield tab


@pytest.fixture
def grader_tab(browser, formgrader_lab, request, artifacts, probe):
    """A tab on the hostile course's lab."""
    with watched_tab(browser, formgrader_lab, request, artifacts, probe) as tab:
        yield tab


@pytest.fixture
def file_tab(browser, request, artifacts, probe):
    """A tab for pages opened from files (no server)."""
    with watched_tab(browser, None, request, artifacts, probe) as tab:
        yield tab


def submission_id(lab):
    """The formgrader's id of the one graded notebook of the hostile course."""
    graded = lab.get(f"/formgrader/api/submitted_notebooks/{LESSON}/{LESSON}")
    assert [s["student"] for s in graded] == [STUDENT], graded
    return graded[0]["id"]


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


def test_formgrader_shows_the_submission_without_running_its_script(grader_tab, probe):
    """Nbgrader → Formgrader → Manual Grading → the submission: no learner script runs, the learner's words show."""
    tab = grader_tab
    tab.open_lab()
    frame = tab.formgrader()
    frame.get_by_role("link", name="Manual Grading").click()
    frame.locator(f'td.name a[href$="/formgrader/gradebook/{LESSON}"]').click()
    frame.locator(f'td.name a[href$="/formgrader/gradebook/{LESSON}/{LESSON}"]').click()
    frame.get_by_role("link", name="Submission #1").click()
    answer = frame.locator(".nbgrader_cell", has=frame.locator(f"#{ANSWER_ID}"))
    answer.wait_for()
    submission = next((f for f in tab.page.frames if "/formgrader/submissions/" in f.url), None)
    assert submission, f"no frame shows the submission: {[f.url for f in tab.page.frames]}"
    tab.shot("submission")

    probe.assert_nothing_ran(tab.page, "the formgrader's view of the submission")
    assert_no_active_content(submission, "the formgrader's view of the submission")
    assert_learner_text_shown(answer, ANSWER_WORDS)
    assert_learner_text_shown(frame.locator(".output_area"), HTML_OUTPUT_WORDS, MARKDOWN_OUTPUT_WORDS)
    tab.scroll_to(answer)
    tab.shot("written-answer")
    tab.scroll_to(frame.locator(".output_area", has_text=HTML_OUTPUT_WORDS))
    tab.shot("learner-outputs")


def test_feedback_shows_the_submission_without_running_its_script(grader_tab, formgrader_lab,
                                                                  hostile_course, probe):
    """The feedback HTML, from JupyterLab's /files/ and as a file: no learner script runs, the learner's words show."""
    tab = grader_tab
    feedback = f"feedback/{STUDENT}/{LESSON}/{LESSON}.html"
    assert (hostile_course / feedback).is_file(), f"make grade wrote no {feedback}"
    for where, url in (("files", formgrader_lab.url(f"/files/{feedback}")),
                       ("file", (hostile_course / feedback).as_uri())):
        tab.page.goto(url)
        probe.assert_nothing_ran(tab.page, f"the feedback opened from {url}")
        assert_no_active_content(tab.page.main_frame, f"the feedback opened from {url}")
        assert_learner_text_shown(tab.page, ANSWER_WORDS, HTML_OUTPUT_WORDS, MARKDOWN_OUTPUT_WORDS)
        tab.scroll_to(tab.page.get_by_text(ANSWER_WORDS).first)
        tab.shot(f"feedback-from-{where}")


def test_every_payload_runs_where_nothing_sanitises(file_tab, probe, tmp_path):
    """Control: the learner's cells as handed in, rendered by the formgrader's template unsanitised, run every payload."""
    page = formgrader_render(learner_cells(hostile_submission(probe)), tmp_path / "unsanitised.html")
    file_tab.page.goto(page.as_uri())
    ran = probe.evidence(file_tab.page)
    file_tab.shot("unsanitised-control", full_page=True)
    missing = [vector for vector in VECTORS if vector not in ran["calls"]]
    assert not missing, f"payloads that did not call home even unsanitised: {missing} (ran: {ran})"
    assert set(ran["flags"].get(page.as_uri(), [])) == set(VECTORS), ran["flags"]
    assert sorted(ran["dialogs"]) == sorted(f"pwned: {vector}" for vector in VECTORS), ran["dialogs"]


def test_image_size_metadata_adds_no_event_handler(file_tab, probe, tmp_path):
    """An image output whose width metadata smuggles an onerror handler runs nothing once sanitised."""
    from attention_grading.sanitize import SanitizeLearnerHTML

    nb = learner_cells(hostile_submission(probe))
    nb["cells"][-1]["outputs"] = [{   # what display({"image/png": ...}, raw=True, metadata=...) sends
        "output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": "a plot"},
        "metadata": {"image/png": {"width": f"1 onerror={probe.script_without_spaces('image-width')}"}}}]
    sanitised, _ = SanitizeLearnerHTML().preprocess(notebook_node(nb), {})
    page = formgrader_render(sanitised, tmp_path / "sanitised.html")
    file_tab.page.goto(page.as_uri())
    file_tab.shot("image-metadata")
    probe.assert_nothing_ran(file_tab.page, "the formgrader's rendering of a sanitised image output")


def test_a_file_linked_from_the_answer_runs_no_script(grader_tab, formgrader_lab, probe):
    """Clicking a link in the answer to a file handed in with the notebook runs none of its script."""
    tab = grader_tab
    tab.page.goto(formgrader_lab.url(f"/formgrader/submissions/{submission_id(formgrader_lab)}/"))
    with tab.page.expect_navigation():
        tab.page.get_by_role("link", name=LINK_TEXT).click()
    tab.shot("linked-file")
    probe.assert_nothing_ran(tab.page, f"the page {tab.page.url} linked from the answer")
