"""The grading service (``make serve-grading``) on a real exchange in a temporary folder, with real
nbgrader commands on both sides and the course's sandboxed grading.

One served course for every assertion. Before any service runs, four learners submit lesson 01:
alice the solution, dave the release three times, erin the release once, carol a file that is not
a notebook, mallory a wrong answer that patches numpy and the checks to pass. A first service starts and is killed (SIGKILL, its whole process group) while alice's
submission is being graded; a second takes over, and while it runs a third service and ``make
grade`` are refused. The limit is two graded attempts: dave's third is kept, not graded. Once
everything is answered the second service is stopped with SIGTERM. The instructor grades one of
alice's written answers by hand and alice hands in the same work again (a catch-up run grades it).
Then the course gets a cool-down
of an hour and erin submits again; a catch-up run (``--exit-when-idle``) answers it without
grading. Each learner fetches their feedback with ``nbgrader fetch_feedback``.
"""
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from grading_helpers import LESSON, lesson_points, run_grade
from service_course import (Learner, attempts, journal, served_course, start_service, status, stop_service,
                            wait_until)

pytestmark = [pytest.mark.nbgrader, pytest.mark.full]

SETTINGS = """
c.AttemptLimits.max_attempts = 2
c.GradingService.poll_seconds = 1
c.GradingService.settle_seconds = 0.2
"""
SUBMISSIONS = {"alice": 1, "dave": 3, "erin": 1, "carol": 1, "mallory": 1}
WRITTEN = "self_weight_answer"          # a written answer of lesson 01, graded by hand


def _answered(course):
    return all(len([e for e in journal(course, name, LESSON) if e["state"] != "grading"]) == count
               for name, count in SUBMISSIONS.items())


@pytest.fixture(scope="module")
def served():
    base = Path(tempfile.mkdtemp(prefix="attention-service-"))
    processes = []
    try:
        yield _serve(base, processes)
    finally:
        for process in processes:
            if process.poll() is None:
                stop_service(process, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


def _serve(base, processes):
    course, exchange = served_course(base, [LESSON], SETTINGS)
    learners = {name: Learner(base, name, exchange) for name in SUBMISSIONS}
    learners["alice"].submit(LESSON, "correct")
    for _ in range(3):
        learners["dave"].submit(LESSON, "blank")
    learners["erin"].submit(LESSON, "blank")
    learners["carol"].submit(LESSON, "broken")
    learners["mallory"].submit(LESSON, "hostile")
    out = {"course": course, "learners": learners}

    first = start_service(course, "--workers", "1")
    processes.append(first)
    wait_until(lambda: attempts(course, "alice", LESSON), "alice's attempt is recorded (her grading began)", first)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    out["journal_after_kill"] = journal(course, "alice", LESSON)

    second = start_service(course, "--workers", "1")
    processes.append(second)
    wait_until(lambda: status(course).get("pid") == second.pid, "the second service holds the course", second)
    third = start_service(course, "--workers", "1")
    processes.append(third)
    out["third"] = third.wait(timeout=300)
    out["grade_beside"] = run_grade(course, "--no-report")
    wait_until(lambda: _answered(course), "every submission is answered", second)
    out["status"] = status(course)
    out["alice_attempts_then"] = len(attempts(course, "alice", LESSON))
    out["alice_score_then"] = _gradebook_score(course, "alice")[0]
    out["sigterm"] = stop_service(second, signal.SIGTERM)
    out["status_after_stop"] = status(course)
    out["table_after_stop"] = (course / "grading-report" / "service-status.txt").read_text()
    out["feedback"] = {name: learner.fetch_feedback(LESSON) for name, learner in learners.items()}

    _grade_by_hand(course, "alice", WRITTEN, 1.0)
    learners["alice"].submit(LESSON, "correct")         # the same work again: the same written answers
    again = start_service(course, "--exit-when-idle")
    processes.append(again)
    out["again"] = again.wait(timeout=600)
    out["alice_again"] = learners["alice"].fetch_feedback(LESSON)

    with open(course / "nbgrader_config.py", "a") as config:
        config.write('\nc.AttemptLimits.keep = "best"\n')
    fay = learners["fay"] = Learner(course.parent, "fay", exchange)
    fay.submit(LESSON, "correct")
    fay.submit(LESSON, "blank")
    best = start_service(course, "--exit-when-idle")
    processes.append(best)
    out["best"] = best.wait(timeout=600)
    out["fay"] = fay.fetch_feedback(LESSON)
    out["fay_grades_csv"] = (course / "grades.csv").read_text()
    out["fay_make_grade"] = run_grade(course, "--student", "fay", "--no-report")

    with open(course / "nbgrader_config.py", "a") as config:
        config.write("\nc.AttemptLimits.cooldown_seconds = 3600\n")
    learners["erin"].submit(LESSON, "blank")
    catch_up = start_service(course, "--exit-when-idle")
    processes.append(catch_up)
    out["catch_up"] = catch_up.wait(timeout=600)
    out["erin_after_cooldown"] = learners["erin"].fetch_feedback(LESSON)
    return out


def _grade_by_hand(course, student, grade_id, points):
    """What the formgrader does when an instructor types a score."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention") as gb:
        grade = gb.find_grade(grade_id, LESSON, LESSON, student)
        grade.manual_score = points
        grade.needs_manual_grade = False
        gb.db.commit()


def _manual_score(course, student, grade_id):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention") as gb:
        return gb.find_grade(grade_id, LESSON, LESSON, student).manual_score


def _gradebook_score(course, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention") as gb:
        submission = gb.find_submission(LESSON, student)
        return submission.score, submission.max_score


def test_the_learner_fetches_feedback_with_their_score(served):
    """alice's submission was graded and its page released: nbgrader fetch_feedback brings her
    the page of make grade's feedback with her score, the attempt's number and the limit."""
    auto, total, _ = lesson_points(served["course"])
    pages = served["feedback"]["alice"]
    assert len(pages) == 1, pages.keys()
    page = next(iter(pages.values()))
    assert f"(Score: {auto:.1f} / {auto:.1f}; {total - auto:.1f} more awaiting" in page
    assert f"Attempt 1 of 2: graded, {auto:g} / {total:g} points." in page
    assert served["alice_score_then"] == auto


def test_a_manual_grade_is_kept_for_the_next_attempt_with_the_same_answer(served):
    """A written answer graded by hand keeps its grade when the next attempt hands in the same
    text (make grade's rule): alice's second attempt is graded with it, and her page says so."""
    course = served["course"]
    auto, total, _ = lesson_points(course)
    assert served["again"] == 0
    assert [e["state"] for e in journal(course, "alice", LESSON)] == ["graded", "graded"]
    assert len(attempts(course, "alice", LESSON)) == 2
    assert _manual_score(course, "alice", WRITTEN) == 1.0
    assert _gradebook_score(course, "alice")[0] == auto + 1
    assert sum(f"Attempt 2 of 2: graded, {auto + 1:g} / {total:g} points." in page
               for page in served["alice_again"].values()) == 1


def test_the_gradebook_keeps_the_best_attempt_when_set_to(served):
    """With keep = "best", fay's blank second attempt is graded (its page says 0 points and that
    her grade stays the first's) while the gradebook, grades.csv, autograded/ and submitted/ keep
    her first, solved attempt."""
    course = served["course"]
    auto, total, _ = lesson_points(course)
    assert served["best"] == 0
    entries = journal(course, "fay", LESSON)
    assert [(e["state"], e["score"]) for e in entries] == [("graded", auto), ("graded", 0.0)]
    assert _gradebook_score(course, "fay")[0] == auto
    second = [p for p in served["fay"].values() if "Attempt 2 of 2: graded, 0 /" in p]
    assert len(second) == 1 and f"Your grade stays that of your best attempt: {auto:g} / {total:g}" in second[0]
    first_kept = course / "history" / "fay" / LESSON / "submissions" / entries[0]["inbound"] / f"{LESSON}.ipynb"
    assert (course / "submitted" / "fay" / LESSON / f"{LESSON}.ipynb").read_bytes() == first_kept.read_bytes()
    row = next(line for line in served["fay_grades_csv"].splitlines() if line.startswith("fay,") or ",fay," in line)
    assert f"{auto:g}" in row or f"{auto:.1f}" in row, row
    # make grade afterwards finds the kept attempt graded from the same files, its page current.
    done = served["fay_make_grade"]
    assert done.returncode == 0 and "graded 0, skipped 1" in done.stdout, done.stdout + done.stderr
    assert "(1 already up to date)" in done.stdout


def test_killed_mid_grading_and_restarted_grades_once(served):
    """The first service was killed while alice's attempt was being graded (its journal says
    so); the next one graded it: one attempt in the ledger (so one set of hidden cases), one
    journal entry, graded."""
    assert [e["state"] for e in served["journal_after_kill"]] == ["grading"]
    course = served["course"]
    first = served["status"]["latest"]
    assert [row["attempt"] for row in first if row["student"] == "alice"] == [1]
    assert served["alice_attempts_then"] == 1


def test_two_services_and_make_grade_beside_a_service_refuse(served):
    """A third service and make grade, started while the second served the course, stop at
    once with exit status 75, doing nothing."""
    assert served["third"] == 75
    assert served["grade_beside"].returncode == 75, served["grade_beside"].stderr
    assert "another make grade" in served["grade_beside"].stderr


def test_an_attempt_over_the_limit_is_kept_not_graded(served):
    """dave's third attempt (limit 2) is answered with a page saying it was not graded; it is
    kept in the history; two attempts were graded; submitted/ holds the second."""
    course = served["course"]
    states = [e["state"] for e in journal(course, "dave", LESSON)]
    assert states == ["graded", "graded", "refused"]
    assert len(attempts(course, "dave", LESSON)) == 2
    third = journal(course, "dave", LESSON)[2]["inbound"]
    assert (course / "history" / "dave" / LESSON / "submissions" / third / f"{LESSON}.ipynb").is_file()
    pages = served["feedback"]["dave"]
    assert len(pages) == 3
    refused = [p for p in pages.values() if "not graded" in p]
    assert len(refused) == 1 and "limit of 2 graded attempt(s)" in refused[0]
    assert sum("Attempt 2 of 2: graded" in p for p in pages.values()) == 1


def test_a_malformed_or_hostile_submission_costs_only_its_own_attempt(served):
    """carol's file that is not a notebook failed, with a page saying why; mallory's patched
    checks scored nothing; everyone else was graded."""
    assert [e["state"] for e in journal(served["course"], "carol", LESSON)] == ["failed"]
    page = next(iter(served["feedback"]["carol"].values()))
    assert "could not be graded" in page
    assert [e["state"] for e in journal(served["course"], "erin", LESSON)][:1] == ["graded"]
    assert [(e["state"], e["score"]) for e in journal(served["course"], "mallory", LESSON)] == [("graded", 0.0)]
    assert "Attempt 1 of 2: graded, 0 /" in next(iter(served["feedback"]["mallory"].values()))


def test_the_queue_is_fair_between_learners(served):
    """The second service answered erin and carol before dave's second and third attempts
    (arrived before theirs): one learner's flood does not delay the others."""
    order = [(row["student"], row["inbound"]) for row in served["status"]["latest"]]
    students = [student for student, _ in order]
    assert students[0] == "alice"
    dave_second = students.index("dave", students.index("dave") + 1)
    assert students.index("erin") < dave_second and students.index("carol") < dave_second


def test_sigterm_stops_cleanly_and_the_status_file_has_the_table(served):
    """SIGTERM stopped the idle service with status 0; its status file said stopped, with
    every answer and the failure."""
    assert served["sigterm"] == 0
    after = served["status_after_stop"]
    assert after["state"] == "stopped" and after["queue"] == 0 and after["answered"] == 7
    assert any("carol" in failure for failure in after["failures"])
    table = served["table_after_stop"]
    assert "alice" in table and "graded" in table


def test_an_attempt_within_the_cool_down_says_when_the_next_is_possible(served):
    """With a cool-down of an hour, erin's second attempt is kept, not graded, and its page
    names the time her next attempt can be graded (an hour after her first was handed in)."""
    import datetime

    assert served["catch_up"] == 0
    entries = journal(served["course"], "erin", LESSON)
    assert [e["state"] for e in entries] == ["graded", "refused"]
    first = datetime.datetime.fromisoformat(entries[0]["arrived"])
    expected = (first + datetime.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    pages = served["erin_after_cooldown"]
    assert len(pages) == 2
    assert sum(f"Your next attempt can be graded from {expected} UTC" in p for p in pages.values()) == 1
    assert len(attempts(served["course"], "erin", LESSON)) == 1
