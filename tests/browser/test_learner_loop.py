"""nbgrader's whole learner loop in JupyterLab, in Chromium, with a real account for the learner.

The instructor (root) releases lesson 01 into an exchange. The learner, a real Unix account whose
JupyterLab runs as that account (``servers.start_lab_as``), fetches it from the Assignments panel
(Nbgrader → Assignment List), opens it, validates and submits it there; their work is the solved
notebook written into the fetched file, as in ``tests/test_exchange.py``. The instructor collects,
grades with ``make grade``'s grader (feedback included), finds the submission and its score in the
formgrader inside their own JupyterLab, and releases the feedback; the learner fetches it from the
panel. One run (the module's fixture) serves every test; each test checks one part of it.
"""
import contextlib
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from accounts import Learner, course_with_exchange, remove_accounts, skip_unless_accounts_possible
from conftest import ROOT, nbgrader
from grading_helpers import LESSON, lesson_points, run_grade
from notebook_tools import solved

from .pages import browser_context, open_tab
from .servers import start_course_lab, start_lab_as

pytestmark = [pytest.mark.browser, pytest.mark.accounts]

LEARNER = "attention-learner-c"
PASSES = "Success! Your notebook passes all the tests."


@pytest.fixture(scope="module")
def loop(artifacts, tmp_path_factory, request):
    """What each step of the loop showed (texts of the panels, dialogs and formgrader); the two
    tabs stay open for the tests."""
    skip_unless_accounts_possible()
    browser = request.getfixturevalue("browser")        # only once the test can run
    # Not under pytest's own temporary folder: that one is closed to other accounts.
    base = Path(tempfile.mkdtemp(prefix="attention-learner-loop-"))
    base.chmod(0o755)
    created = []                # accounts this test made, removed at the end
    try:
        with contextlib.ExitStack() as stack:      # servers and tabs stop before the account goes
            yield _run_loop(stack, base, created, browser, artifacts, tmp_path_factory, request)
    finally:
        remove_accounts(created)
        shutil.rmtree(base, ignore_errors=True)


def _run_loop(stack, base, created, browser, artifacts, tmp_path_factory, request):
    exchange, course = course_with_exchange(base, LESSON)
    learner = Learner(LEARNER, base / "home" / LEARNER, exchange, created)
    (base / "home").chmod(0o755)
    learner.skip_unless_environment_readable()
    out = {"learner": learner, "course": course, "exchange": exchange}

    # Both JupyterLabs start up while the instructor releases the lesson.
    learner_lab = stack.enter_context(start_lab_as(learner, artifacts / "learner-loop-learner-jupyterlab.log"))
    instructor_lab = stack.enter_context(start_course_lab(
        course, tmp_path_factory.mktemp("learner-loop-jupyter"), artifacts / "learner-loop-instructor-jupyterlab.log"))
    nbgrader(course, "generate_assignment", LESSON, "--force")
    nbgrader(course, "release_assignment", LESSON, "--force")
    learner_lab.wait_ready()
    instructor_lab.wait_ready()

    context = stack.enter_context(browser_context(browser))
    tab = out["learner_tab"] = stack.enter_context(
        open_tab(context, learner_lab, request, artifacts, name="learner-loop-learner"))
    page = tab.page
    tab.open_lab()
    tab.menu("Nbgrader", "Assignment List")
    released = page.locator("#released_assignments_list > .list_item")
    fetched = page.locator("#fetched_assignments_list > .list_item")
    submitted = page.locator("#submitted_assignments_list > .list_item")
    released.first.wait_for()
    tab.shot("released")
    out["released"] = released.all_inner_texts()

    released.first.get_by_role("button", name="Fetch").click()
    fetched.first.wait_for()
    tab.shot("fetched")
    out["released_after_fetch"], out["downloaded"] = released.count(), fetched.all_inner_texts()
    fetched_file = learner.home / LESSON / f"{LESSON}.ipynb"
    out["fetched_owner"] = fetched_file.stat().st_uid if fetched_file.exists() else None

    fetched.first.locator(".assignment-notebooks-link").click()        # unfold its notebooks
    notebook_row = fetched.first.locator(".assignment-notebooks .nested_list_item", has_text=LESSON)
    notebook_row.get_by_role("link", name=LESSON).click()
    tab.notebook().locator(".jp-Cell").first.wait_for()
    tab.wait_for_kernel(f"{LESSON}/{LESSON}.ipynb")     # started by the learner's server, idle
    tab.shot("notebook-opened")
    out["opened"] = [s["path"] for s in learner_lab.get("/api/sessions")]
    out["opened_cells"] = tab.notebook().locator(".jp-Cell").count()
    # Closed before the work lands on disk, so that JupyterLab saves nothing over it. Once its
    # kernel is up JupyterLab may count the notebook as changed (metadata) and ask: discard.
    tab.menu("File", "Close Tab")
    panel = page.locator("#nbgrader-assignment-list:not(.lm-mod-hidden)")
    panel.or_(page.locator(".jp-Dialog")).wait_for()
    if not panel.is_visible():
        page.locator(".jp-Dialog-footer button", has_text="Discard").click()
        panel.wait_for()

    # The learner's work: every answer cell filled in, written as the learner's own file.
    fetched_file.write_text(nbformat.writes(solved(fetched_file, ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")))
    learner.chown(fetched_file)

    validate = notebook_row.get_by_role("button", name="Validate")
    validate.click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator("#validation-message").wait_for(timeout=180_000)
    tab.shot("validated")
    out["validation"] = dialog.locator("#validation-message").inner_text()
    dialog.locator(".jp-Dialog-footer button", has_text="Ok").click()
    dialog.wait_for(state="detached")
    out["validate_button"] = validate.get_attribute("class")

    fetched.first.get_by_role("button", name="Submit").click()
    submitted.first.locator(".nested_list_item").first.wait_for()
    tab.shot("submitted")
    out["submitted"] = submitted.all_inner_texts()
    out["inbound"] = sorted(p.name for p in (exchange / "attention" / "inbound").iterdir())

    # The instructor: collect, grade (feedback included), the formgrader, release the feedback.
    nbgrader(course, "collect", LESSON)
    with ThreadPoolExecutor(1) as pool:     # the instructor's JupyterLab loads while grading runs
        grading = pool.submit(run_grade, course, "--workers", "1", "--no-report")
        instructor_context = stack.enter_context(browser_context(browser))
        grader = out["instructor_tab"] = stack.enter_context(
            open_tab(instructor_context, instructor_lab, request, artifacts, name="learner-loop-instructor"))
        grader.open_lab()
        graded = grading.result()
    if graded.returncode != 0:      # nothing for the formgrader to show: say why, not a timeout
        raise AssertionError(f"make grade failed:\n{graded.stdout}\n{graded.stderr}")
    frame = grader.formgrader()
    frame.locator(f'td.num-submissions a[href$="/formgrader/manage_submissions/{LESSON}"]').click()
    rows = frame.locator("tbody tr", has=frame.locator("td.student-id"))
    rows.first.locator("td.score").filter(has_text=re.compile(r"\d")).wait_for()
    grader.shot("manage-submissions")
    out["formgrader"] = [tuple(row.locator(f"td.{column}").inner_text().strip()
                               for column in ("student-id", "status", "score")) for row in rows.all()]
    nbgrader(course, "release_feedback", LESSON)

    # The learner again: the panel, refreshed, offers the feedback; Fetch Feedback brings it.
    page.locator("#refresh_assignments_list").click()
    submitted.first.filter(has_text="feedback available to fetch").wait_for()
    tab.shot("feedback-available")
    out["feedback_available"] = submitted.all_inner_texts()
    submitted.first.get_by_role("button", name="Fetch Feedback").click()
    view = submitted.first.get_by_text("(view feedback)")
    view.wait_for()
    tab.shot("feedback-fetched")
    out["feedback_fetched"] = submitted.all_inner_texts()
    view.click()                # the file browser goes to the feedback's folder
    listing = page.locator(".jp-DirListing-content .jp-DirListing-itemText", has_text=f"{LESSON}.html")
    listing.wait_for()
    tab.shot("feedback-folder")
    out["feedback_pages"] = [str(p.relative_to(learner.home))
                             for p in (learner.home / LESSON / "feedback").rglob(f"{LESSON}.html")]
    if out["feedback_pages"]:
        # In a tab of its own: nbconvert's page asks a CDN for require.js and MathJax, which
        # fails offline; the lab tab's console stays the lab's.
        with open_tab(context, learner_lab, request, artifacts, name="learner-loop-feedback") as feedback:
            feedback.page.goto(learner_lab.url(f"/files/{out['feedback_pages'][0]}"))
            out["feedback_heading"] = feedback.page.locator("h4").first.inner_text()
            feedback.shot("feedback-page")
    return out


def test_learner_fetches_and_opens_the_release_in_the_assignments_panel(loop):
    """The release is listed for course attention; Fetch moves it to the learner's home, and its
    notebook opens from the panel."""
    assert [re.split(r"\s+", text.strip()) for text in loop["released"]] == [[LESSON, "attention", "Fetch"]], \
        loop["released"]
    assert loop["released_after_fetch"] == 0
    assert len(loop["downloaded"]) == 1 and LESSON in loop["downloaded"][0], loop["downloaded"]
    # Fetched by the learner's own server: the file is theirs.
    assert loop["fetched_owner"] == loop["learner"].entry.pw_uid
    assert loop["opened"] == [f"{LESSON}/{LESSON}.ipynb"], loop["opened"]
    assert loop["opened_cells"] > 0


def test_validate_says_the_solved_notebook_passes(loop):
    """Validate in the panel runs the learner's work: the dialog says it passes."""
    assert PASSES in loop["validation"], loop["validation"]
    assert "btn-success" in loop["validate_button"], loop["validate_button"]


def test_submit_hands_the_work_in(loop):
    """Submit lists a timestamped submission and puts one folder, in the learner's name, in the exchange."""
    assert len(loop["submitted"]) == 1, loop["submitted"]
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", loop["submitted"][0]), loop["submitted"]
    assert [name.split("+")[0] for name in loop["inbound"]] == [LEARNER], loop["inbound"]


def test_formgrader_lists_the_graded_submission(loop):
    """After collect and make grade, Manage Submissions lists the learner's submission with every
    autograded point scored (written answers await manual grading)."""
    auto, total, _ = lesson_points(loop["course"])
    assert len(loop["formgrader"]) == 1, loop["formgrader"]
    student, status, score = loop["formgrader"][0]
    assert student == LEARNER
    assert status == "needs manual grading", status
    assert [float(x) for x in score.split("/")] == [auto, total], score


def test_learner_fetches_the_feedback_from_the_panel(loop):
    """After release_feedback the panel offers the feedback; Fetch Feedback brings it into the
    learner's home, with its score."""
    assert "(feedback available to fetch)" in loop["feedback_available"][0], loop["feedback_available"]
    assert "(view feedback)" in loop["feedback_fetched"][0], loop["feedback_fetched"]
    assert len(loop["feedback_pages"]) == 1, loop["feedback_pages"]
    auto, total, _ = lesson_points(loop["course"])
    assert f"(Score: {auto:.1f} / {auto:.1f}; {total - auto:.1f} more awaiting" in loop["feedback_heading"], \
        loop["feedback_heading"]


def test_no_console_errors(loop):
    """Neither the learner's nor the instructor's tab logged a console error."""
    loop["learner_tab"].assert_no_console_errors()
    loop["instructor_tab"].assert_no_console_errors()
