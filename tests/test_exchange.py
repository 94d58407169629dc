"""The learner's whole loop through nbgrader's exchange, with real Unix accounts.

The instructor (root) releases lesson 01; two learners, each a real account with its own home,
fetch it, work (one pastes the solution, one leaves it blank), validate and submit; the instructor
collects, runs `make grade` (feedback included) and releases the feedback; each learner fetches
their own. The scores equal those of the same notebooks put in `submitted/` by hand (the shared
class of conftest.lesson01_class). On the way, the exchange's privacy: a learner cannot list the
inbound folder, nor read, change or remove another learner's submission, and a submission written
under another learner's name counts as its writer's. Then a learner tampers with her inbound
folder after submitting (links to the reference and source/, a hard link, a pipe, a forged time,
a late change) and another plants a submission that is a link: the course's collect takes only
regular files of each submission, at the time it last changed.

The learners' accounts and their Python: ``accounts``.
"""
import datetime
import json
import re
import shutil
import tempfile
import time
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


# -- A learner tampering with the inbound folder after submitting (the course's collect) ------------

TAMPERERS = ("attention-learner-m", "attention-learner-n")


@pytest.fixture(scope="module")
def tampering():
    skip_unless_accounts_possible()
    base = Path(tempfile.mkdtemp(prefix="attention-exchange-tamper-"))
    base.chmod(0o755)
    created = []
    try:
        yield _tamper(base, created)
    finally:
        remove_accounts(created)
        shutil.rmtree(base, ignore_errors=True)


def _tamper(base, created):
    """m submits the solution, then, in her own inbound folder: links to the reference, to source/
    and upwards, a hard link to a file of her home, a named pipe, a forged timestamp.txt, and a
    change to the notebook; n plants a submission that is a link to source/ and one with a name
    nbgrader cannot read. The instructor collects, m changes her notebook once more and the
    instructor collects with --update; make grade grades what was collected."""
    exchange, course = course_with_exchange(base, LESSON)
    (base / "home").mkdir()
    (base / "home").chmod(0o755)
    m, n = (Learner(name, base / "home" / name, exchange, created) for name in TAMPERERS)
    m.skip_unless_environment_readable()
    nbgrader(course, "generate_assignment", LESSON, "--force")
    nbgrader(course, "release_assignment", LESSON, "--force")
    m.nbgrader("fetch_assignment", LESSON)
    fetched = m.home / LESSON / f"{LESSON}.ipynb"
    fetched.write_text(nbformat.writes(solved(fetched, ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")))
    m.nbgrader("submit", LESSON)
    inbound = exchange / "attention" / "inbound"
    (mine,) = [p for p in inbound.iterdir() if p.name.startswith(m.name + "+")]
    reference = next((course / "instructor" / "reference").rglob("*.py"))
    out = {"course": course, "m": m, "n": n, "inbound": inbound, "mine": mine, "reference": reference,
           "submitted": course / "submitted" / m.name / LESSON}
    time.sleep(1.1)
    out["changed_after"] = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    out["tamper"] = m.python(f"""
import os, json
folder = {str(mine)!r}
os.symlink({str(reference)!r}, os.path.join(folder, "reference.py"))
os.symlink({str(course / "source")!r}, os.path.join(folder, "source"))
os.symlink("../../../../course/instructor", os.path.join(folder, "up"))
with open(os.path.expanduser("~/kept.txt"), "w") as fh:
    fh.write("a file of my home")
os.link(os.path.expanduser("~/kept.txt"), os.path.join(folder, "hard.txt"))
os.mkfifo(os.path.join(folder, "pipe"))
with open(os.path.join(folder, "timestamp.txt"), "w") as fh:
    fh.write("2000-01-01 00:00:00.000000 UTC")
path = os.path.join(folder, "{LESSON}.ipynb")
nb = json.load(open(path))
nb["cells"].append({{"cell_type": "markdown", "metadata": {{}}, "source": "changed after submitting"}})
json.dump(nb, open(path, "w"))
""")
    out["plant"] = n.python(f"""
import os
os.symlink({str(course / "source" / LESSON)!r}, os.path.join({str(inbound)!r}, "{n.name}+{LESSON}+2026-01-01 00:00:00.000000 UTC"))
os.mkdir(os.path.join({str(inbound)!r}, "{n.name}+{LESSON}+not a time"))
""")
    out["collect"] = nbgrader(course, "collect", LESSON)
    out["first_timestamp"] = (out["submitted"] / "timestamp.txt").read_text()
    out["first_files"] = sorted(str(p.relative_to(out["submitted"])) for p in out["submitted"].rglob("*"))
    out["first_notebook"] = (out["submitted"] / f"{LESSON}.ipynb").read_text()
    time.sleep(1.1)
    out["second_change"] = m.python(f"import os; os.utime({str(mine / (LESSON + '.ipynb'))!r}, (0, 0)); "
                                    f"open({str(mine / 'late.txt')!r}, 'w').write('late')")
    out["update"] = nbgrader(course, "collect", "--update", LESSON)
    out["second_timestamp"] = (out["submitted"] / "timestamp.txt").read_text()
    out["grade"] = run_grade(course, "--workers", "1", "--no-report", "--no-feedback")
    return out


def _utc(text):
    return datetime.datetime.strptime(text.strip().removesuffix(" UTC"), "%Y-%m-%d %H:%M:%S.%f")


def test_collect_copies_no_link_pipe_or_hard_link_from_the_inbound_folder(tampering):
    """After m's tampering: her notebook and nbgrader's files are collected; no link to the
    reference, source/ or upwards, no hard link, no pipe, and nothing of what they point at."""
    assert tampering["tamper"].returncode == 0, tampering["tamper"].stderr
    files = tampering["first_files"]
    assert files == sorted([f"{LESSON}.ipynb", "submission_secret.txt", "timestamp.txt"]), files
    assert not any(p.is_symlink() for p in tampering["submitted"].rglob("*"))
    stdout = tampering["collect"].stdout
    for name, why in (("reference.py", "a symbolic link"), ("source", "a symbolic link"), ("up", "a symbolic link"),
                      ("hard.txt", "a hard link"), ("pipe", "a named pipe")):
        assert re.search(rf"{re.escape(name)} is {why}.*not collected", stdout), (name, stdout[-3000:])
    everything = b"".join(p.read_bytes() for p in tampering["course"].joinpath("submitted").rglob("*") if p.is_file())
    assert tampering["reference"].read_bytes() not in everything


def test_a_submission_planted_as_a_link_or_under_a_bad_name_is_not_collected(tampering):
    """n's link to source/ and n's unreadable name are named and skipped; collect goes on for m."""
    assert tampering["plant"].returncode == 0, tampering["plant"].stderr
    stdout = tampering["collect"].stdout
    assert "is a symbolic link, not a submission: not collected" in stdout, stdout[-3000:]
    assert "is not a submission's name" in stdout, stdout[-3000:]
    assert not (tampering["course"] / "submitted" / TAMPERERS[1]).exists()


def test_a_change_after_submitting_is_a_later_submission(tampering):
    """m's forged timestamp.txt is not believed: the collected time is when she last changed the
    folder; her change is in the collected notebook; a change after collecting is collected by
    --update as a newer submission (an old modification time set with utime does not hide it)."""
    first = _utc(tampering["first_timestamp"])
    assert first >= tampering["changed_after"] - datetime.timedelta(seconds=1), (first, tampering["changed_after"])
    assert "changed after submitting" in tampering["first_notebook"]
    assert tampering["second_change"].returncode == 0, tampering["second_change"].stderr
    assert _utc(tampering["second_timestamp"]) > first
    assert "Updating submission" in tampering["update"].stdout, tampering["update"].stdout[-2000:]
    assert (tampering["submitted"] / "late.txt").read_text() == "late"


def test_what_was_collected_grades_with_full_marks_and_nothing_more(tampering):
    """make grade on the collected class: m (the solution, beside the tampering) has full marks;
    her autograded folder holds nothing of the reference."""
    done = tampering["grade"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    auto, _, _ = lesson_points(tampering["course"])
    table = grade_table(f"sqlite:///{tampering['course'] / 'gradebook.db'}")
    assert sum(score or 0 for key, (score, _) in table.items() if key[0] == TAMPERERS[0]) == auto, table
    graded = tampering["course"] / "autograded" / TAMPERERS[0] / LESSON
    assert not any(p.is_symlink() for p in graded.rglob("*"))
    assert all(tampering["reference"].read_bytes() not in p.read_bytes() for p in graded.rglob("*") if p.is_file())
