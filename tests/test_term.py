"""A term (tests/term_class.py): due dates and nbgrader's late penalties, manual grades from the
formgrader, feedback that follows them, one CSV in nbgrader's way, a roster. One class, graded
with ``make grade`` four times (and once by stock ``nbgrader autograde``), read by every test:

1. ``make grade``: five learners of lesson 01 (on time, late, late with a buggy answer, late with
   an extension, blank);
2. written answers graded by hand (scores and a comment, through nbgrader's API as the formgrader
   does), carol hands in again with one written answer changed; ``make grade``;
3. bob is given an extension that makes him on time; ``nbgrader export``; ``make feedback``
   (``--feedback-only``);
4. ``make grade --force --student alice``;
5. bob hands in again (a buggy answer), carol hands in a malformed notebook; ``make grade``.

An account not on the roster (``root``) submitted lesson 01 from the start, and one run is
refused before it changes anything (``--student nobody``, between runs 1 and 2).
"""
import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import term_class as term
from conftest import nbgrader
from grading_helpers import LESSON, REPO, env_for, notebook, submit

pytestmark = [pytest.mark.nbgrader, pytest.mark.full]   # four make grade runs and stock autograde: ~5 min


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """(root, [Snapshot after each of the four runs], [grades.csv, grades-by-learner.csv] as
    `nbgrader export` wrote them after the first run)."""
    root = term.set_up(tmp_path_factory.mktemp("term") / "course")
    submit(root, term.OFF_ROSTER, notebook("correct"), timestamp=term.ON_TIME)
    runs = [term.Snapshot(root, term.run_term(root))]
    saved = tmp_path_factory.mktemp("exported")
    nbgrader(root, "export")
    exported = [shutil.copy(root / name, saved / name) for name in ("grades.csv", "grades-by-learner.csv")]

    term.grade_by_hand(root, "alice", "self_weight_answer", 0.5, term.COMMENT)
    term.grade_by_hand(root, "alice", "row_softmax_answer", 1.0)
    term.grade_by_hand(root, "bob", "row_softmax_answer", 1.0)
    term.grade_by_hand(root, "carol", "self_weight_answer", 1.0, "Right.")
    term.grade_by_hand(root, "carol", "row_softmax_answer", 1.0)
    term.rewrite_answer(root, "carol", "row_softmax_answer", "Every row is one query's budget of attention.")
    refused = refused_runs(root, tmp_path_factory.mktemp("not-a-course"))   # before they change anything
    runs.append(term.Snapshot(root, term.run_term(root)))

    from nbgrader.api import Gradebook

    with Gradebook(term.db_url(root), "attention") as gb:
        gb.grant_extension(LESSON, "bob", days=7)
    nbgrader(root, "export")                    # before any run: the extension must count already
    extended = tmp_path_factory.mktemp("exported-after-extension")
    exported += [shutil.copy(root / name, extended / name) for name in ("grades.csv", "grades-by-learner.csv")]
    runs.append(term.Snapshot(root, term.run_term(root, "--feedback-only")))
    runs.append(term.Snapshot(root, term.run_term(root, "--force", "--student", "alice")))
    carol_page = (root / "feedback" / "carol" / LESSON / f"{LESSON}.html").read_bytes()
    submit(root, "bob", notebook("buggy"), timestamp=term.LATE)
    submit(root, "carol", "{ this is not a notebook", timestamp=term.LATE)
    runs.append(term.Snapshot(root, term.run_term(root)))
    runs[-1].carol_page_before = carol_page
    runs[-1].refused = refused
    return root, runs, exported


def refused_runs(root, elsewhere):
    """Runs refused before they change anything, as scripts and make see them: the grader's console
    script in the course folder (no --course: the current directory) with an unknown --student;
    `make grade` while another run holds the course; the console script outside any course."""
    from attention_grading.run.lock import course_lock

    script = str(Path(sys.executable).parent / "attention-grade")
    done = [subprocess.run([script, "--student", "nobody"], cwd=root, env=env_for(root), capture_output=True,
                           text=True, timeout=600)]
    with course_lock(root, False, lambda *_: None):
        done.append(subprocess.run(["make", "-s", "-C", str(REPO), "-o", ".venv/.installed", "grade",
                                    f"GRADE_ARGS=--course {root}"], env=env_for(root), capture_output=True,
                                   text=True, timeout=600))
    done.append(subprocess.run([script], cwd=elsewhere, env=env_for(root), capture_output=True, text=True,
                               timeout=600))
    return done


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    """The same class graded by stock `nbgrader autograde`, and nbgrader's own CSV export of it."""
    root = term.set_up(tmp_path_factory.mktemp("stock") / "course", lessons=[LESSON])
    nbgrader(root, "autograde", LESSON, timeout=1800)
    nbgrader(root, "export", "--exporter=nbgrader.plugins.CsvExportPlugin", "--to=stock.csv")
    return root


def test_every_run_succeeds(course):
    """Each of the first four runs exits 0 (nothing failed), the fifth 1 (carol's resubmission
    could not be graded); none prints a traceback."""
    _, runs, _ = course
    for snapshot in runs:
        assert snapshot.done.returncode == (1 if snapshot is runs[4] else 0), snapshot.out[-4000:]
        assert "Traceback" not in snapshot.out, snapshot.out[-4000:]


def test_late_penalties_are_stock_nbgraders(course, stock):
    """The late class gets, from make grade, exactly the timestamps, late penalties, scores and
    per-cell grades stock `nbgrader autograde` gives it with the same configuration; and
    grades.csv's score is what nbgrader's own CSV export computes from stock's gradebook."""
    _, runs, _ = course
    ours, theirs = runs[0].standings, term.standings(term.db_url(stock))
    assert set(ours) == set(theirs) == set(term.LEARNERS)
    assert ours == theirs
    assert theirs["bob"][1] == theirs["bob"][2] == 6.0           # late: "zero" takes every point
    assert theirs["carol"][1] == theirs["carol"][2] > 0           # late, and only what she earned
    assert theirs["dave"][1] is None and theirs["alice"][1] is None  # extension / on time
    stock_csv = {r["student_id"]: r for r in term._csv(stock / "stock.csv")}
    for student in term.LEARNERS:
        row = runs[0].row(student)
        assert float(row["score"]) == float(stock_csv[student]["score"])
        assert float(row["late_submission_penalty"]) == float(stock_csv[student]["late_submission_penalty"])
        assert float(row["raw_score"]) == float(stock_csv[student]["raw_score"])


def _agree(snapshot, shown):
    """grades.csv, grades-by-learner.csv, the table, the report and every feedback page's header
    hold the gradebook's final score (raw less penalty, never below 0) for every learner."""
    for student, (_, penalty, raw, grades) in snapshot.standings.items():
        final = max(0.0, raw - (penalty or 0.0))
        row = snapshot.row(student)
        assert float(row["score"]) == final and float(row["raw_score"]) == raw, (student, row)
        assert float(row["late_submission_penalty"]) == (penalty or 0.0)
        learner = next(r for r in snapshot.learners if r["student"] == student)
        assert float(learner[f"{LESSON} points"]) == final
        if student in shown:
            assert snapshot.table_cell(student).split("/")[0] == f"{final:g}"
        assert term.page_score(snapshot.pages[student])[0] == round(final, 2), student
        awaiting = sum(1.0 for name in term.WRITTEN if grades[name][0] is None and grades[name][1] is None)
        assert term.page_score(snapshot.pages[student])[1] == float(row["max_score"]) - awaiting
    graded = [float(r["score"]) for r in snapshot.grades
              if r["lesson"] == LESSON and r["status"] in ("graded", "needs manual grading")]
    line = next(line for line in snapshot.summary.splitlines() if line.startswith(f"| {LESSON} |"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    assert cells[1] == str(len(graded)) and cells[5] == f"{sum(graded) / len(graded):.2f}", line


@pytest.mark.parametrize("run", [0, 1, 2, 3, 4])
def test_every_output_agrees_with_the_gradebook(course, run):
    """After each run (a manual grade and a comment given, a penalty changed by an extension, a
    forced regrade, a resubmission and a malformed one), every output shows the gradebook's final
    scores."""
    _agree(course[1][run], {"alice"} if run == 3 else set(term.LEARNERS))


def test_manual_grades_and_penalties_reach_every_output(course):
    """Alice's 0.5 and 1.0 by hand count everywhere; bob's late "zero" penalty follows his new
    score, then goes when an extension makes him on time."""
    _, runs, _ = course
    assert float(runs[0].row("alice")["score"]) == 6.0 and float(runs[1].row("alice")["score"]) == 7.5
    assert runs[1].table_cell("alice") == "7.5/8"
    assert float(runs[1].row("bob")["late_submission_penalty"]) == 7.0 and float(runs[1].row("bob")["score"]) == 0
    assert runs[1].table_cell("bob") == "0/8*L"
    assert float(runs[2].row("bob")["late_submission_penalty"]) == 0 and float(runs[2].row("bob")["score"]) == 7.0
    assert "Late submission penalty" in runs[1].pages["bob"] and "Late submission penalty" not in runs[2].pages["bob"]


def test_feedback_is_rendered_again_where_grades_or_comments_changed(course):
    """Run 2 writes the pages of alice and bob (graded by hand) and carol (graded again), not the
    others; run 3 (make feedback) bob's alone (his penalty went); the formgrader's comment is in
    alice's page."""
    _, runs, _ = course
    assert "feedback pages written 5 (0 already up to date)" in runs[0].out
    assert "graded 1, skipped 4" in runs[1].out and "feedback pages written 3 (2 already up to date)" in runs[1].out
    assert "feedback pages written 1 (4 already up to date)" in runs[2].out and "graded " not in runs[2].out
    for student in ("dave", "erin"):
        assert runs[1].pages[student] == runs[0].pages[student]
    assert runs[2].pages["alice"] == runs[1].pages["alice"] and runs[2].pages["bob"] != runs[1].pages["bob"]
    assert "Close: the rows are scaled by" in runs[1].pages["alice"] and "Comments:" in runs[1].pages["alice"]
    assert "Close: the rows are scaled by" not in runs[0].pages["alice"]


def test_a_regrade_keeps_the_manual_grades_of_unchanged_written_answers(course):
    """A forced regrade keeps alice's manual grades and comment, confirmed, and says so; carol's
    unchanged answer keeps its grade, her changed one keeps its score but asks to be confirmed."""
    _, runs, _ = course
    alice = runs[3].standings["alice"][3]
    assert alice["self_weight_answer"] == (None, 0.5, False) and alice["row_softmax_answer"] == (None, 1.0, False)
    assert "kept the manual grades of 2 written answer(s)" in runs[3].out
    assert "alice / 01_context_vectors: self_weight_answer, row_softmax_answer" in runs[3].out
    assert float(runs[3].row("alice")["score"]) == 7.5 and runs[3].row("alice")["status"] == "graded"
    assert "Close: the rows are scaled by" in runs[3].pages["alice"]
    carol = runs[1].standings["carol"][3]
    assert carol["self_weight_answer"] == (None, 1.0, False) and carol["row_softmax_answer"] == (None, 1.0, True)
    assert "carol / 01_context_vectors: row_softmax_answer" in runs[1].out.split("needs confirming", 1)[1]


def test_nbgrader_export_writes_the_same_files(course):
    """`nbgrader export` (the course's export plugin, from nbgrader_config.py) writes exactly the
    grades.csv and grades-by-learner.csv make grade wrote."""
    _, runs, exported = course
    assert open(exported[0], "rb").read() == runs[0].grades_bytes
    assert open(exported[1], "rb").read() == runs[0].learners_bytes


def test_nbgrader_export_after_an_extension_writes_no_stale_penalty(course):
    """bob's extension, granted after grading, counts in `nbgrader export` before any run: it
    writes the grades.csv and LMS file the next make feedback writes (bob 7, no penalty), not the
    stale "zero" penalty the gradebook held."""
    _, runs, exported = course
    assert float(runs[1].row("bob")["late_submission_penalty"]) == 7.0       # before the extension
    rows = term._csv(exported[2])
    bob = next(r for r in rows if r["student"] == "bob" and r["lesson"] == LESSON)
    assert float(bob["late_submission_penalty"]) == 0.0 and float(bob["score"]) == 7.0
    assert open(exported[2], "rb").read() == runs[2].grades_bytes
    assert open(exported[3], "rb").read() == runs[2].learners_bytes


def test_roster_names_reach_both_csvs_and_the_formgrader(course):
    """The roster imported with `nbgrader db student import` gives every learner their names and
    e-mail in both CSVs and in the formgrader's list; zoe, who submitted nothing, is listed."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    root, runs, _ = course
    for student, first, last, email in term.ROSTER:
        row = runs[0].row(student)
        assert (row["first_name"], row["last_name"], row["email"]) == (first, last, email)
        learner = next(r for r in runs[0].learners if r["student"] == student)
        assert (learner["first_name"], learner["last_name"], learner["email"]) == (first, last, email)
    assert runs[0].row("zoe")["status"] == "not submitted"
    coursedir = CourseDirectory(root=str(root))
    coursedir.db_url = term.db_url(root)
    coursedir.course_id = "attention"
    listed = {s["id"]: (s["first_name"], s["last_name"], s["email"]) for s in NbGraderAPI(coursedir).get_students()}
    # nbgrader's formgrader lists every folder of submitted/: root, kept apart, with no name and no grade
    assert listed.pop(term.OFF_ROSTER) == (None, None, None)
    assert listed == {student: (first, last, email) for student, first, last, email in term.ROSTER}


def test_the_lms_file_counts_only_lessons_that_are_due(course):
    """grades.csv has every lesson; the LMS file lesson 01 (due) alone: not lesson 02 (released
    through the exchange with no due date: it would drop every percentage before anything is
    due) nor lesson 03 (due in 2099); the totals are lesson 01's."""
    _, runs, _ = course
    assert {r["lesson"] for r in runs[0].grades} == set(term.LESSONS)
    header = list(runs[0].learners[0])
    assert f"{LESSON} points" in header
    assert not [h for h in header if h.startswith((term.NOT_YET_DUE, term.RELEASED))]
    for learner in runs[0].learners:
        student = learner["student"]
        assert float(learner["total points"]) == float(runs[0].row(student, LESSON)["score"])


def test_feedback_folders_hold_only_what_a_learner_receives(course):
    """feedback/<student>/<lesson>/ holds the page and nbgrader's timestamp, never the grader's
    notes or results."""
    root, _, _ = course
    for folder in (root / "feedback").glob(f"*/{LESSON}"):
        assert {p.name for p in folder.iterdir()} <= {f"{LESSON}.html", "timestamp.txt", "submission_secret.txt"}
        assert (folder / f"{LESSON}.html").is_file()


def test_gradebook_copies_before_each_run(course):
    """Each run copied the gradebook first (at most the last five kept), but not the run refused
    before it changed anything (an unknown --student: exit status 2); the newest copy is the
    gradebook as the last run found it: alice's manual grades are in it."""
    root, runs, _ = course
    unknown, busy, _ = runs[4].refused
    assert unknown.returncode == 2 and "unknown student(s): nobody" in unknown.stderr
    assert busy.returncode == 2 and "make grade: exit status 75 (another run holds the course)" in busy.stderr
    copies = sorted((root / "gradebook-backups").glob("gradebook-*.db"))
    assert len(copies) == 5
    last = term.standings(f"sqlite:///{copies[-1]}")
    assert last["alice"][3]["self_weight_answer"][1] == 0.5
    first = term.standings(f"sqlite:///{copies[0]}")
    assert first.keys() == {"dave"}               # before the first run: dave's extension alone
    assert not filecmp.cmp(copies[0], copies[-1], shallow=False)


def test_every_attempt_is_kept_with_its_grade_and_feedback(course):
    """history/<student>/<lesson>/<n>/ keeps each graded attempt: the submitted notebook's digest,
    its timestamp, score, per-test verdicts, the autograded notebook and its latest feedback page;
    bob's first attempt (7 after his extension) is there beside his second (buggy)."""
    import hashlib
    import json

    root, runs, _ = course
    folder = root / "history" / "bob" / LESSON
    first, second = (json.loads((folder / str(n) / "attempt.json").read_text()) for n in (1, 2))
    assert first["attempt"] == 1 and second["attempt"] == 2
    assert first["raw_score"] == 6.0 and first["score"] == 0.0    # as graded: late, written answers awaiting
    assert second["score"] == float(runs[4].row("bob")["score"]) < 7.0
    submitted = (root / "submitted" / "bob" / LESSON / f"{LESSON}.ipynb").read_bytes()
    assert second["notebook_sha256"] == hashlib.sha256(submitted).hexdigest() != first["notebook_sha256"]
    assert second["timestamp"].startswith("2026-01-10 12:00:00")
    failed = {v["grade_id"] for v in second["verdicts"] if v["status"] == "failed"}
    assert failed and failed.isdisjoint({v["grade_id"] for v in first["verdicts"] if v["status"] == "failed"})
    assert (folder / "1" / f"{LESSON}.html").read_text() == runs[3].pages["bob"]
    assert (folder / "2" / f"{LESSON}.html").read_text() == runs[4].pages["bob"]
    assert (folder / "2" / f"{LESSON}.ipynb").is_file()
    carol = [json.loads(p.read_text())["attempt"] for p in (root / "history" / "carol" / LESSON).glob("*/attempt.json")]
    assert sorted(carol) == [1, 2]                                # her rewritten answer was a new attempt


def test_each_run_prints_and_saves_its_changes(course):
    """Each run says what changed, old → new (a manual grade, an extension, a resubmission), and
    saves it in history/changes-<time>.txt and history/changes.log."""
    root, runs, _ = course
    assert f"alice {LESSON}: – → 6 (attempt 1)" in runs[0].out
    assert f"alice {LESSON}: 6 → 7.5" in runs[1].out
    assert f"bob {LESSON}: 0 → 7" in runs[2].out and "no grade changed in this run" in runs[3].out
    bob_now = runs[4].row("bob")["score"]
    assert f"bob {LESSON}: 7 → {float(bob_now):g} (attempt 2)" in runs[4].out
    log = (root / "history" / "changes.log").read_text()
    for line in (f"alice {LESSON}: 6 → 7.5", f"bob {LESSON}: 0 → 7", f"bob {LESSON}: 7 → {float(bob_now):g}"):
        assert line in log
    assert len(list((root / "history").glob("changes-*.txt"))) >= 4


def test_a_malformed_resubmission_leaves_the_last_good_grade_everywhere(course):
    """carol's malformed resubmission is not graded: her last good grade stands in the gradebook,
    grades.csv (with a note), the LMS file and her feedback page (unchanged); the run says so in
    its output and change log, and exits 1."""
    _, runs, _ = course
    before, after = runs[3], runs[4]
    assert after.standings["carol"] == before.standings["carol"]
    row = after.row("carol")
    assert row["status"] == before.row("carol")["status"] and row["score"] == before.row("carol")["score"]
    assert "a resubmission could not be graded" in row["note"] and "the last good grade stands" in row["note"]
    learner = next(r for r in after.learners if r["student"] == "carol")
    assert float(learner[f"{LESSON} points"]) == float(row["score"])
    assert after.pages["carol"].encode() == after.carol_page_before
    assert f"carol {LESSON}: resubmission NOT GRADED" in after.out


def test_an_account_not_on_the_roster_is_named_and_kept_apart(course):
    """root, not on the roster, is named by every run and graded nowhere: no row in either CSV, the
    table or the report, nothing in autograded/, feedback/ or the gradebook."""
    root, runs, _ = course
    assert f"[not on the roster] {term.OFF_ROSTER}: {LESSON} kept apart: no grade" in runs[0].out
    assert f"{term.OFF_ROSTER} {LESSON}: not on the roster, kept apart" in runs[0].out
    for snapshot in runs:
        assert term.OFF_ROSTER not in {r["student"] for r in snapshot.grades}
        assert term.OFF_ROSTER not in {r["student"] for r in snapshot.learners}
        assert term.OFF_ROSTER not in snapshot.standings and f"{term.OFF_ROSTER} /" not in snapshot.summary
    assert not (root / "autograded" / term.OFF_ROSTER).exists() and not (root / "feedback" / term.OFF_ROSTER).exists()
    assert (root / "submitted" / term.OFF_ROSTER / LESSON / f"{LESSON}.ipynb").is_file()


def test_the_grader_grades_the_course_it_is_run_in(course):
    """The console script run in the course folder with no --course grades that course (it refused
    the unknown learner of *this* class, naming its learners' count), and refuses outside a course
    folder, saying how to name one (exit status 2; make would turn any status into 2: its recipe
    prints the real one, above)."""
    _, runs, _ = course
    unknown, _, elsewhere = runs[4].refused
    assert f"({len(term.ROSTER)})" in unknown.stderr
    assert elsewhere.returncode == 2 and "is not a course folder (it has no nbgrader_config.py)" in elsewhere.stderr
    assert "--course PATH" in elsewhere.stderr


def _section(summary, title):
    return summary.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_the_report_groups_mistakes_leaves_blank_notebooks_apart_and_counts_written_answers(course):
    """After the last run: erin's blank notebook is listed apart (not among the failures); each
    diagnosed mistake names its learners; the written answers of the five learners are counted."""
    import re

    _, runs, _ = course
    summary = runs[4].summary
    blank = _section(summary, "Left blank")
    assert f"erin / {LESSON}" in blank and "alice" not in blank and "bob" not in blank
    for line in _section(summary, "Most frequent diagnosed mistakes").strip().splitlines():
        assert line == "- (none)" or re.search(r"\(([a-z]+, )*[a-z]+\)$", line), line
    assert f"{LESSON}: {2 * len(term.LEARNERS)} written answer(s)" in _section(summary, "Written answers")
