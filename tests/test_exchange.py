"""The learner's whole loop through nbgrader's exchange, with real Unix accounts.

The instructor (root) releases lesson 01; two learners, each a real account with its own home,
fetch it, work (one pastes the solution, one leaves it blank), validate and submit; the instructor
collects, runs `make grade` (feedback included) and releases the feedback; each learner fetches
their own. The scores equal those of the same notebooks put in `submitted/` by hand (the shared
class of conftest.lesson01_class). On the way, the exchange's privacy: a learner cannot list the
inbound folder, nor read, change or remove another learner's submission, and a submission written
under another learner's name counts as its writer's.

The learners' accounts and their Python: ``accounts``.
"""
import json
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest

from accounts import Learner, course_with_exchange, remove_accounts, skip_unless_accounts_possible
from conftest import ROOT, nbgrader
from grading_helpers import LESSON, grade_table, lesson_points, run_grade
from notebook_tools import solved

pytestmark = [pytest.mark.nbgrader, pytest.mark.accounts]

LEARNERS = ("attention-learner-a", "attention-learner-b")


@pytest.fixture(scope="module")
def loop(lesson01_class):
    skip_unless_accounts_possible()
    # Not under pytest's own temporary folder: that one is closed to other accounts.
    base = Path(tempfile.mkdtemp(prefix="attention-exchange-loop-"))
    base.chmod(0o755)
    created = []                # accounts this test made, removed at the end
    try:
        yield _run_loop(base, lesson01_class, created)
    finally:
        remove_accounts(created)
        shutil.rmtree(base, ignore_errors=True)


def _run_loop(base, lesson01_class, created):
    exchange, course = course_with_exchange(base, LESSON)
    learners = [Learner(name, base / "home" / name, exchange, created) for name in LEARNERS]
    (base / "home").chmod(0o755)
    a, b = learners
    a.skip_unless_environment_readable()
    out = {"a": a, "b": b, "course": course, "exchange": exchange, "class": lesson01_class}

    nbgrader(course, "generate_assignment", LESSON, "--force")
    nbgrader(course, "release_assignment", LESSON, "--force")
    for learner, kind in ((a, "correct"), (b, "blank")):
        learner.nbgrader("fetch_assignment", LESSON)
        fetched = learner.home / LESSON / f"{LESSON}.ipynb"
        if kind == "correct":           # the learner's work: every answer cell filled in
            work = solved(fetched, ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")
            fetched.write_text(nbformat.writes(work))
            out["work_of_a"] = fetched.read_text()
        out[f"validate_{kind}"] = learner.nbgrader("validate", str(fetched), check=False)
        learner.nbgrader("submit", LESSON)
    inbound = exchange / "attention" / "inbound"
    out["submissions"] = {p.name.split("+")[0]: p for p in inbound.iterdir()}
    submission_of_a = out["submissions"][a.name]
    out["b_lists_inbound"] = b.python(f"import os; print(os.listdir({str(inbound)!r}))")
    out["b_reads_a"] = b.python(f"print(open({str(submission_of_a / (LESSON + '.ipynb'))!r}).read()[:20])")
    out["b_lists_a"] = b.python(f"import os; print(os.listdir({str(submission_of_a)!r}))")
    out["b_removes_a"] = b.python(f"import shutil; shutil.rmtree({str(submission_of_a)!r})")
    # b also submits a copy of the release under a's name, after a's own submission.
    out["b_as_a"] = b.nbgrader("submit", LESSON, f"--student={a.name}", check=False)

    nbgrader(course, "collect", LESSON)
    out["grade"] = run_grade(course, "--workers", "2", "--no-report")
    nbgrader(course, "release_feedback", LESSON)
    for learner in learners:
        learner.nbgrader("fetch_feedback", LESSON)
    return out


def test_learners_fetch_validate_and_submit(loop):
    """Each learner fetched the release into their home, Validate ran the visible checks, submit put
    one folder per learner in the inbound folder."""
    assert "Success! Your notebook passes all the tests." in loop["validate_correct"].stdout, \
        loop["validate_correct"].stdout + loop["validate_correct"].stderr
    assert "failed" in loop["validate_blank"].stdout.lower(), loop["validate_blank"].stdout
    assert set(loop["submissions"]) == set(LEARNERS)


def test_a_learner_cannot_see_or_touch_another_learners_submission(loop):
    """The inbound folder cannot be listed; another learner's submission cannot be listed, read or
    removed; the instructor still reads it."""
    for attempt in ("b_lists_inbound", "b_lists_a", "b_reads_a", "b_removes_a"):
        done = loop[attempt]
        assert done.returncode != 0 and "PermissionError" in done.stderr, (attempt, done.stdout, done.stderr)
    assert (loop["submissions"][LEARNERS[0]] / f"{LESSON}.ipynb").is_file()


def test_a_submission_in_another_learners_name_counts_as_its_writers(loop):
    """b's submission named for a is collected as b's: a's own submission is the one graded."""
    assert loop["b_as_a"].returncode == 0, loop["b_as_a"].stderr
    a_collected = (loop["course"] / "submitted" / LEARNERS[0] / LESSON / f"{LESSON}.ipynb").read_text()
    assert json.loads(a_collected)["cells"] == json.loads(loop["work_of_a"])["cells"]


def test_scores_equal_grading_the_same_notebooks_by_hand(loop):
    """make grade on the collected submissions gives every check the score the same notebooks
    got when put in submitted/ by hand (alice: the solution; bob: the release; the hidden tests
    come from the gradebook either way)."""
    done = loop["grade"]
    assert done.returncode == 0, done.stdout + done.stderr
    collected = grade_table(f"sqlite:///{loop['course'] / 'gradebook.db'}")
    by_hand = grade_table(f"sqlite:///{loop['class'][0] / 'gradebook.db'}")
    for learner, twin in zip(LEARNERS, ("alice", "bob")):
        ours = {k[1:]: v for k, v in collected.items() if k[0] == learner}
        theirs = {k[1:]: v for k, v in by_hand.items() if k[0] == twin}
        assert ours and ours == theirs, (learner, ours, theirs)


def test_each_learner_fetches_their_own_feedback(loop):
    """After release_feedback, fetch_feedback brings each learner the feedback of their own
    submission, and only that."""
    auto, total, _ = lesson_points(loop["course"])
    for learner, expected in ((loop["a"], f"(Score: {auto:.1f} / {auto:.1f}; {total - auto:.1f} more awaiting"),
                              (loop["b"], f"(Score: 0.0 / {total:.1f})")):
        pages = list((learner.home / LESSON / "feedback").rglob(f"{LESSON}.html"))
        assert len(pages) == 1, (learner.name, pages)
        html = pages[0].read_text()
        assert expected in html, (learner.name, html[html.find("<h4>"):html.find("</h4>")])
