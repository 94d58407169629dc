"""The grading service in the learner's own JupyterLab, in Chromium, with a real account.

The instructor (root) releases lesson 01 into an exchange and starts the grading service on the
course. The learner, a real Unix account whose JupyterLab runs as that account, fetches the lesson
from the Assignments panel, writes the solved notebook into it and submits it there. Nobody
collects or grades by hand: once the service's journal says it answered the submission, the
learner refreshes the panel, which offers the feedback; Fetch Feedback brings the page with the
score and the attempt's line.
"""
import contextlib
import re
import shutil
import signal
import tempfile
from pathlib import Path

import nbformat
import pytest

from accounts import Learner, course_with_exchange, remove_accounts, skip_unless_accounts_possible
from conftest import ROOT, nbgrader
from grading_helpers import LESSON, lesson_points
from notebook_tools import solved
from service_course import journal, start_service, status, stop_service, wait_until

from .pages import browser_context, open_tab
from .servers import start_lab_as

pytestmark = [pytest.mark.browser, pytest.mark.accounts]

LEARNER = "attention-learner-s"


@pytest.fixture(scope="module")
def served_loop(artifacts, request):
    skip_unless_accounts_possible()
    browser = request.getfixturevalue("browser")
    base = Path(tempfile.mkdtemp(prefix="attention-service-loop-"))
    base.chmod(0o755)
    created, processes = [], []
    try:
        with contextlib.ExitStack() as stack:
            yield _run(stack, base, created, processes, browser, artifacts, request)
    finally:
        for process in processes:
            stop_service(process, signal.SIGKILL)
        remove_accounts(created)
        shutil.rmtree(base, ignore_errors=True)


def _run(stack, base, created, processes, browser, artifacts, request):
    exchange, course = course_with_exchange(base, LESSON)
    learner = Learner(LEARNER, base / "home" / LEARNER, exchange, created)
    (base / "home").chmod(0o755)
    learner.skip_unless_environment_readable()
    out = {"learner": learner, "course": course}

    learner_lab = stack.enter_context(start_lab_as(learner, artifacts / "service-loop-learner-jupyterlab.log"))
    nbgrader(course, "generate_assignment", LESSON, "--force")
    nbgrader(course, "release_assignment", LESSON, "--force")
    service = start_service(course, "--workers", "1")
    processes.append(service)
    learner_lab.wait_ready()
    wait_until(lambda: status(course).get("pid") == service.pid, "the service holds the course", service)

    context = stack.enter_context(browser_context(browser))
    tab = out["tab"] = stack.enter_context(open_tab(context, learner_lab, request, artifacts, name="service-loop"))
    page = tab.page
    tab.open_lab()
    tab.menu("Nbgrader", "Assignment List")
    released = page.locator("#released_assignments_list > .list_item")
    fetched = page.locator("#fetched_assignments_list > .list_item")
    submitted = page.locator("#submitted_assignments_list > .list_item")
    released.first.get_by_role("button", name="Fetch").click()
    fetched.first.wait_for()
    fetched_file = learner.home / LESSON / f"{LESSON}.ipynb"
    fetched_file.write_text(nbformat.writes(solved(fetched_file, ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")))
    learner.chown(fetched_file)
    fetched.first.get_by_role("button", name="Submit").click()
    submitted.first.locator(".nested_list_item").first.wait_for()
    tab.shot("submitted")

    # The service answers; nobody else touches the course.
    wait_until(lambda: [e["state"] for e in journal(course, LEARNER, LESSON)] == ["graded"],
               "the service answered the submission", service)
    page.locator("#refresh_assignments_list").click()
    submitted.first.filter(has_text="feedback available to fetch").wait_for()
    out["feedback_available"] = submitted.all_inner_texts()
    submitted.first.get_by_role("button", name="Fetch Feedback").click()
    submitted.first.get_by_text("(view feedback)").wait_for()
    tab.shot("feedback-fetched")
    pages = list((learner.home / LESSON / "feedback").rglob(f"{LESSON}.html"))
    out["pages"] = [p.read_text() for p in pages]
    out["collected"] = (course / "submitted" / LEARNER / LESSON / f"{LESSON}.ipynb").is_file()
    return out


def test_a_submission_from_the_assignments_tab_gets_feedback_from_the_service(served_loop):
    """Submitted from the panel, collected under the learner's name and graded by the service
    alone; the panel's Fetch Feedback brings the page with the score and the attempt's line."""
    auto, total, _ = lesson_points(served_loop["course"])
    assert served_loop["collected"]
    assert "(feedback available to fetch)" in served_loop["feedback_available"][0]
    assert len(served_loop["pages"]) == 1
    page = served_loop["pages"][0]
    assert f"(Score: {auto:.1f} / {auto:.1f}; {total - auto:.1f} more awaiting" in page
    assert re.search(rf"Attempt 1: graded, {auto:g} / {total:g} points\.", page)


def test_no_console_errors(served_loop):
    """The learner's tab logged no console error."""
    served_loop["tab"].assert_no_console_errors()
