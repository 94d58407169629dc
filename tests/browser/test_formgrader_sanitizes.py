"""Learner HTML and JavaScript never run in the formgrader or in the feedback.

A hostile learner hands in lesson 01, solved, with script in everything they own: a code cell of
their own that displays HTML (a ``<script>`` and an ``<img onerror>``), Markdown with the same,
and JavaScript; and a written answer (``row_softmax_answer``) with the same ``<script>`` and
``<img onerror>``. Every payload calls a loopback server the test runs, leaves a flag in its
window and opens a dialog (``probes``). ``make grade`` grades it in a course copy of its own
(``attention_grading.steps.sanitize.SanitizeLearnerHTML`` cleans what it stores); the instructor then
opens it in the formgrader inside JupyterLab, and the feedback HTML is opened as the learner
would. Nothing may run, and the learner's words must still be shown.

A control renders the submission as handed in through the formgrader's own template, without
sanitising: every payload runs there, so the checks can fail. Two more tests close holes found
on the way: image size metadata that nbconvert writes into the page unquoted, and a file handed in
beside the notebook that the formgrader would serve from its own origin.

The written answer also holds a link for every way of writing a ``javascript:``, ``vbscript:`` or
``data:`` URL (``LINK_VECTORS``); each is clicked in the formgrader and in the feedback, and in
the unsanitised control, where the javascript: ones run. Last, the second wall: the pages carry a
Content-Security-Policy (``attention_grading.steps.csp``; the formgrader's through the server extension
``attention_grading.cli.formgrader``, which ``make formgrader`` enables), and an answer that
reached them unsanitised (written into ``autograded/`` and the feedback by hand) still runs
nothing, while the formgrader's own scripts and a script shipped beside the feedback run.
"""
import contextlib
import html
import importlib.util
import json
import urllib.request
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


#: Links in the written answer: every way we know of writing a script or data URL, each with the
#: words it shows. ``{js}``: the probe's script as one word. Those a browser would run when
#: clicked are ``RUNNABLE_LINKS``.
LINK_VECTORS = {
    "link-markdown": ("markdown link", "[markdown link](javascript:{js})"),
    "link-plain": ("plain link", '<a href="javascript:{js}">plain link</a>'),
    "link-entity-colon": ("entity colon link", '<a href="javascript&colon;{js}">entity colon link</a>'),
    "link-decimal-entity": ("decimal entity link", '<a href="&#106;avascript:{js}">decimal entity link</a>'),
    "link-hex-entity": ("hex entity link", '<a href="&#x6a;avascript&#x3a;{js}">hex entity link</a>'),
    "link-tab": ("tab link", '<a href="java&#9;script:{js}">tab link</a>'),
    "link-newline": ("newline link", '<a href="jav&#x0A;ascript:{js}">newline link</a>'),
    "link-upper-case": ("upper case link", '<a href="JAVASCRIPT:{js}">upper case link</a>'),
    "link-leading-space": ("leading space link", '<a href=" &#x20;javascript:{js}">leading space link</a>'),
    "link-vbscript": ("vbscript link", '<a href="vbscript:{js}">vbscript link</a>'),
    "link-data": ("data link", '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">data link</a>'),
    "link-svg-xlink": ("svg link", '<svg><a xlink:href="javascript:{js}"><text y="15">svg link</text></a></svg>'),
}
RUNNABLE_LINKS = ["link-markdown", "link-plain", "link-entity-colon", "link-decimal-entity", "link-hex-entity",
                  "link-tab", "link-newline", "link-upper-case", "link-leading-space", "link-svg-xlink"]


def link_text(vector):
    """The words a link of ``vector`` shows."""
    return LINK_VECTORS[vector][0]


def hostile_links(probe):
    return "\n\n".join(source.replace("{js}", probe.script_without_spaces(v)) for v, (_, source) in LINK_VECTORS.items())


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
    answers[0]["source"] = (probe.html(ANSWER_WORDS, "answer") + probe.remote_image("answer-remote-image")
                            + f"\n\nThe algebra is in [{LINK_TEXT}]({LINKED_FILE}).\n\n" + hostile_links(probe))
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
    probe.wait_for(file_tab.page, VECTORS)          # each must run here: wait for it, on a busy machine too
    ran = probe.evidence(file_tab.page)
    file_tab.shot("unsanitised-control", full_page=True)
    missing = [vector for vector in VECTORS if vector not in ran["calls"]]
    assert not missing, f"payloads that did not call home even unsanitised: {missing} (ran: {ran})"
    assert set(ran["flags"].get(page.as_uri(), [])) == set(VECTORS), ran["flags"]
    assert sorted(ran["dialogs"]) == sorted(f"pwned: {vector}" for vector in VECTORS), ran["dialogs"]


def test_image_size_metadata_adds_no_event_handler(file_tab, probe, tmp_path):
    """An image output whose width metadata smuggles an onerror handler runs nothing once sanitised."""
    from attention_grading.steps.sanitize import SanitizeLearnerHTML

    nb = learner_cells(hostile_submission(probe))
    nb["cells"] = nb["cells"][-1:]    # the learner's code cell alone (the answer's remote image is another matter)
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


# ---------------------------------------------------------------------------------------------
# Every link of the answer clicked; the Content-Security-Policy as a second wall
# ---------------------------------------------------------------------------------------------


def click_every_link(page, frame, where, probe, back_to, expected=()):
    """Click each hostile link of the answer in ``frame`` (by its words), going back to
    ``back_to`` whenever a click navigates; {vector: what ran} for the clicks that ran something.
    ``expected``: the vectors that must run here (the unsanitised control), each waited for."""
    ran = {}
    for vector in LINK_VECTORS:
        link = frame.get_by_text(link_text(vector)).first
        assert link.count() == 1 and link.is_visible(), f"{where}: the link {link_text(vector)!r} is not shown"
        before = page.url
        probe.forget()
        link.click(no_wait_after=True)
        if vector in expected:
            probe.wait_for(page, [vector])
        page.wait_for_timeout(300)
        evidence = probe.evidence(page, settle_ms=200) if page.url == before else {"calls": probe.calls(),
                                                                                  "dialogs": list(probe.dialogs)}
        if evidence.get("calls") or evidence.get("dialogs") or evidence.get("flags"):
            ran[vector] = evidence
        if page.url != before:
            page.goto(back_to)
    return ran


def submission_url(lab):
    return lab.url(f"/formgrader/submissions/{submission_id(lab)}/")


def test_every_link_of_the_answer_runs_nothing_in_the_formgrader_and_the_feedback(grader_tab, formgrader_lab,
                                                                                  hostile_course, probe):
    """The formgrader's view of the submission and the feedback (from /files/ and as a file):
    each of the answer's links clicked, nothing ran."""
    page = grader_tab.page
    feedback = hostile_course / f"feedback/{STUDENT}/{LESSON}/{LESSON}.html"
    for where, url in (("the formgrader", submission_url(formgrader_lab)),
                       ("the feedback from /files/", formgrader_lab.url(f"/files/feedback/{STUDENT}/{LESSON}/{LESSON}.html")),
                       ("the feedback as a file", feedback.as_uri())):
        page.goto(url)
        ran = click_every_link(page, page.main_frame, where, probe, url)
        grader_tab.shot(f"links-clicked-{where.split()[1]}")
        assert not ran, f"clicking links of the answer in {where} ran learner script: {ran}"


def test_the_links_run_when_clicked_where_nothing_sanitises(file_tab, probe, tmp_path):
    """Control: in the unsanitised rendering, clicking the javascript: links runs them."""
    page = formgrader_render(learner_cells(hostile_submission(probe)), tmp_path / "unsanitised-links.html")
    file_tab.page.goto(page.as_uri())
    file_tab.page.wait_for_load_state()
    ran = click_every_link(file_tab.page, file_tab.page.main_frame, "the unsanitised page", probe, page.as_uri(),
                           expected=RUNNABLE_LINKS)
    assert set(RUNNABLE_LINKS) <= set(ran), f"links that did not run even unsanitised: {set(RUNNABLE_LINKS) - set(ran)}"


def fetch(lab, path):
    """(headers, body) of GET ``path`` on ``lab``, with its token."""
    request = urllib.request.Request(f"{lab.base}{path}", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.headers, response.read().decode()


def policies(headers):
    return [v for k, v in headers.items() if k.lower() == "content-security-policy"]


# The formgrader's own scripts ran: its static files, and its template's inline scripts.
JS_FORMGRADER_RAN = """() => typeof window.jQuery === 'function' && typeof window.FormGrader === 'function'
    && typeof window.toggle_name === 'function' && typeof window.submission_id === 'string'"""


def bypassing_answer(probe):
    """The written answer as if the sanitiser had let everything through."""
    return probe.html(ANSWER_WORDS, "bypass") + f'\n\n<a href="javascript:{probe.script_without_spaces("bypass-link")}">bypass link</a>'


@contextlib.contextmanager
def replaced(path, text):
    original = path.read_bytes()
    path.write_text(text)
    try:
        yield path
    finally:
        path.write_bytes(original)


def test_the_formgrader_view_runs_only_its_own_scripts_even_unsanitised(grader_tab, formgrader_lab, hostile_course,
                                                                        probe, file_tab, tmp_path):
    """The view of a submission carries a Content-Security-Policy without 'unsafe-inline'; the
    formgrader's own scripts run under it; an answer written into autograded/ unsanitised runs
    nothing there, clicked or not; the same page without the policy (a file) runs it (control)."""
    headers, _ = fetch(formgrader_lab, f"/formgrader/submissions/{submission_id(formgrader_lab)}/")
    ours = [p for p in policies(headers) if "script-src" in p]
    assert len(ours) == 1 and "'unsafe-inline'" not in ours[0].split("script-src", 1)[1].split(";")[0], policies(headers)
    notebook_path = hostile_course / "autograded" / STUDENT / LESSON / f"{LESSON}.ipynb"
    nb = json.loads(notebook_path.read_text())
    for cell in nb["cells"]:
        if is_written_answer(cell):
            cell["source"] = bypassing_answer(probe)
    page = grader_tab.page
    with replaced(notebook_path, json.dumps(nb)):
        url = submission_url(formgrader_lab)
        page.goto(url)
        page.wait_for_function(JS_FORMGRADER_RAN)
        probe.assert_nothing_ran(page, "the formgrader's view of an unsanitised answer")
        page.get_by_text("bypass link", exact=True).click(no_wait_after=True)
        grader_tab.shot("unsanitised-answer-under-the-policy")
        probe.assert_nothing_ran(page, "the formgrader's view of an unsanitised answer, its link clicked")
        _, body = fetch(formgrader_lab, f"/formgrader/submissions/{submission_id(formgrader_lab)}/")
    control = tmp_path / "same-page-without-the-policy.html"
    control.write_text(body)
    file_tab.page.goto(control.as_uri())
    assert {"bypass-script", "bypass-img-onerror"} <= set(probe.evidence(file_tab.page)["calls"])


def test_the_feedback_runs_only_the_courses_own_scripts_even_unsanitised(file_tab, grader_tab, formgrader_lab,
                                                                         hostile_course, probe):
    """The feedback page carries the policy in its head; with an unsanitised answer put into it,
    nothing of the learner's runs, from a file or from /files/, while a script file shipped beside
    it (as the course ships its own) runs from a file (under /files/, Jupyter's own policy puts
    the page in a sandbox of its own origin, which decides whether it may load more)."""
    folder = hostile_course / "feedback" / STUDENT / LESSON
    page_text = (folder / f"{LESSON}.html").read_text()
    head = page_text[:page_text.index("</head>")]
    # The policy comes before any script (the page has none of its own: formulas are MathML).
    policy_at = head.find('http-equiv="Content-Security-Policy"')
    assert policy_at >= 0 and "<script" not in head[:policy_at], head[:policy_at + 100]
    shipped = folder / "course-shipped.js"
    shipped.write_text("window.__course_script_ran = true;")
    container = 'id="notebook-container">'
    bypassed = (page_text.replace("</head>", '<script src="course-shipped.js"></script></head>', 1)
                .replace(container, container + bypassing_answer(probe), 1))
    assert bypassing_answer(probe) in bypassed and "course-shipped.js" in bypassed
    bypass = folder / "bypassed.html"
    bypass.write_text(bypassed)
    try:
        for tab, url, shipped_runs in ((file_tab, bypass.as_uri(), True),
                                       (grader_tab, formgrader_lab.url(f"/files/feedback/{STUDENT}/{LESSON}/bypassed.html"), False)):
            tab.page.goto(url)
            if shipped_runs:
                tab.page.wait_for_function("() => window.__course_script_ran === true")
            probe.assert_nothing_ran(tab.page, f"the feedback with an unsanitised answer at {url}")
            tab.page.get_by_text("bypass link", exact=True).click(no_wait_after=True)
            probe.assert_nothing_ran(tab.page, f"the feedback with an unsanitised answer at {url}, its link clicked")
    finally:
        bypass.unlink()
        shipped.unlink()
