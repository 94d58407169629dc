"""`make grade` (python -m attention_grading.cli.grade) on a temporary copy of the course, lesson 01."""
import csv
import json
import os
import shutil

import numpy as np
import pytest

import conftest
import leaks
from conftest import nbgrader

from grading_helpers import (LESSON, copy_course, grade_table, lesson_points, notebook,
                             run_grade, run_stock, submit, tree_hash)

pytestmark = pytest.mark.nbgrader


@pytest.fixture(scope="module")
def graded_class(lesson01_class):
    """The class of conftest.lesson01_class: good, blank, buggy, crashing, grader-killing and broken
    submissions, graded with 2 workers (tests/test_postgres.py compares with it too)."""
    return lesson01_class


def rows(root):
    with open(root / "grades.csv") as fh:
        return {(r["student"], r["lesson"]): r for r in csv.DictReader(fh)}


def test_bad_input_is_named_and_everyone_else_is_graded(graded_class):
    root, done, _ = graded_class
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "could NOT be graded" in out
    assert f"dave / {LESSON}: submitted/dave/{LESSON}/{LESSON}.ipynb" in out and "not valid JSON" in out
    assert f"erin / {LESSON}: submitted/erin/{LESSON}/{LESSON}.ipynb" in out and "empty file" in out
    assert f"submitted/frank/{LESSON}/my_lesson.ipynb" in out and "wrong name" in out
    assert "submitted/README.txt" in out and "extra file" in out
    assert f"submitted/alice/{LESSON}/notes.txt" in out
    table = rows(root)
    for student in ("dave", "erin", "frank"):
        assert table[student, LESSON]["status"] == "ungradable"
    assert "not valid JSON" in table["dave", LESSON]["note"]     # grades.csv says why, too


def test_scores_csv_table_and_feedback(graded_class):
    root, done, _ = graded_class
    table = rows(root)
    assert set(table) == {(s, LESSON) for s in ("alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank")}
    alice, bob, carol = (float(table[s, LESSON]["score"]) for s in ("alice", "bob", "carol"))
    auto, total, _ = lesson_points(root)
    top = float(table["alice", LESSON]["max_score"])
    assert top == total and alice == auto   # every autograded point; written answers await a human
    assert bob == 0.0 and 0.0 < carol < alice
    assert table["alice", LESSON]["student_total"] == table["alice", LESSON]["score"]
    assert "student" in done.stdout and "total" in done.stdout and f"{auto:g}/{total:g}" in done.stdout
    for student in ("alice", "bob", "carol"):
        assert (root / "feedback" / student / LESSON / f"{LESSON}.html").is_file()
        assert (root / "autograded" / student / LESSON / f"{LESSON}.ipynb").is_file()
    html = (root / "feedback" / "carol" / LESSON / f"{LESSON}.html").read_text()
    assert "attention_grading.hidden" not in html           # the course's feedback filter ran


def test_feedback_names_each_check_and_awaits_manual_grading(graded_class):
    """The feedback's summary names every graded cell (exercise and check, or question) and shows
    written answers nobody has graded yet as awaiting manual grading, out of the score shown."""
    import re

    import nbformat
    from attention_grading.cells import CellPlan, check_title
    from markupsafe import escape       # the template escapes names as Jinja does

    root, _, _ = graded_class
    auto, total, _ = lesson_points(root)
    release = nbformat.read(conftest.ROOT / "notebooks" / LESSON / f"{LESSON}.ipynb", as_version=4)
    plan = CellPlan(release.cells)
    html = (root / "feedback" / "alice" / LESSON / f"{LESSON}.html").read_text()
    toc = html.split('id="toc"', 1)[1].split("</ol>", 1)[0]
    assert "Test cell" not in toc and "Written response" not in toc
    for index in plan.tests:
        title = str(escape(check_title(release.cells[index], plan.owner.get(index))))
        assert re.search(re.escape(title) + r"</a> \(Score: \d", toc), title
    for index in plan.written:
        title = str(escape(check_title(release.cells[index])))
        assert f"{title}</a> (awaiting manual grading" in toc, title
    assert f"(Score: {auto:.1f} / {auto:.1f}; {total - auto:.1f} more awaiting manual grading)" in html
    bob = (root / "feedback" / "bob" / LESSON / f"{LESSON}.html").read_text()   # left the questions blank
    assert "awaiting manual grading" not in bob and f"(Score: 0.0 / {total:.1f})" in bob


def test_feedback_pages_are_stock_generate_feedbacks(graded_class, tmp_path):
    """Every page make grade wrote (its grades carried to the worker, no gradebook there) is the
    page plain `nbgrader generate_feedback` renders from the course gradebook (GetGrades) for the
    same autograded notebook, byte for byte: the same scores, maximum scores, comments and penalty."""
    root, _, _ = graded_class
    stock = tmp_path / "stock-feedback"
    nbgrader(root, "generate_feedback", LESSON, f"--CourseDirectory.feedback_directory={stock}")
    ours = {p.parent.parent.name: p for p in (root / "feedback").glob(f"*/{LESSON}/{LESSON}.html")}
    assert {"alice", "bob", "carol"} <= set(ours)
    for student, page in ours.items():
        theirs = (stock / student / LESSON / f"{LESSON}.html").read_bytes()
        assert page.read_bytes() == theirs, student
    assert "(Score: 0.0 / " in (stock / "bob" / LESSON / f"{LESSON}.html").read_text()


def test_pages_are_rendered_while_submissions_are_still_graded(graded_class):
    """A submission's page is handed to a worker as soon as the submission is stored, ahead of
    the grading jobs still to start: the run says how many pages began before its last grading
    job (an order the run records, not a timing)."""
    import re

    _, done, _ = graded_class
    written = re.search(r"feedback pages written (\d+) \(\d+ already up to date\), (\d+) of them begun while "
                        r"submissions were still to be graded", done.stdout)
    assert written, done.stdout[-2000:]
    assert 1 <= int(written[2]) <= int(written[1])


def test_grading_report(graded_class):
    root, _, _ = graded_class
    report = root / "grading-report"
    assert (report / "index.html").is_file() and (report / "scores.png").is_file()
    summary = (report / "summary.md").read_text()
    assert "01_context_vectors · contextualize · contextualize_matches_reference" in summary
    assert "This is exactly" not in summary                  # reported as the bare diagnosis
    assert "## Most frequent diagnosed mistakes" in summary
    assert "dave / 01_context_vectors" in summary             # ungradable submissions listed


def test_a_crashing_submission_fails_alone(graded_class):
    root, done, _ = graded_class
    # a kernel that dies (os._exit) is either recovered by the course's executor or reported
    # as this one submission's failure; either way everyone else is graded
    status = rows(root)["gina", LESSON]["status"]
    if status == "ungradable":
        assert f"gina / {LESSON}" in done.stdout
    else:
        assert float(rows(root)["gina", LESSON]["score"]) < lesson_points(root)[0] or \
            lesson_points(root)[0] == 0
    assert rows(root)["alice", LESSON]["status"] != "ungradable"
    assert rows(root)["carol", LESSON]["status"] != "ungradable"


def test_a_submission_that_tries_to_kill_its_grader_is_just_graded(graded_class):
    """Its kernel cannot see or signal any grading process: it is graded like any other (its
    softmax, the killing code, scores 0), and nobody needed a second attempt."""
    root, done, _ = graded_class
    table = rows(root)
    assert table["hank", LESSON]["status"] != "ungradable", done.stdout[-3000:]
    scores = grade_table(f"sqlite:///{root / 'gradebook.db'}")
    assert scores["hank", LESSON, "softmax_matches_reference"][0] == 0
    assert scores["hank", LESSON, "contextualize_matches_reference"][0] == 3
    for student in ("alice", "bob", "carol", "hank"):
        assert table[student, LESSON]["note"] == "", table[student, LESSON]


def test_submitted_is_never_modified(graded_class):
    root, _, before = graded_class
    assert tree_hash(root / "submitted") == before


def test_scores_equal_stock_sequential_autograde(graded_class, tmp_path):
    root, _, _ = graded_class
    stock = copy_course(tmp_path / "stock")
    for student, kind in (("alice", "correct"), ("bob", "blank"), ("carol", "buggy")):
        submit(stock, student, notebook(kind))
    done = run_stock(stock)
    assert done.returncode == 0, done.stderr[-3000:]
    ours = grade_table(f"sqlite:///{root / 'gradebook.db'}")
    theirs = grade_table(f"sqlite:///{stock / 'gradebook.db'}")
    assert theirs and {k: v for k, v in ours.items() if k[0] in {"alice", "bob", "carol"}} == theirs


def test_second_run_skips_then_force_and_filters(graded_class):
    """Unchanged submissions are skipped; --student/--force regrade one; grades.csv keeps the class."""
    root, _, before = graded_class
    alice_before = rows(root)["alice", LESSON]["score"]
    again = run_grade(root, "--workers", "2", "--no-report")
    assert "5 submission(s) already graded and unchanged: skipped" in again.stdout, again.stdout
    assert "grading 0 submission(s)" in again.stdout
    assert again.returncode == 1            # the broken submissions are still broken
    only = run_grade(root, "--student", "alice", "--lesson", LESSON, "--force", "--no-report")
    assert only.returncode == 0, only.stdout + only.stderr
    assert "grading 1 submission(s)" in only.stdout
    assert rows(root)["alice", LESSON]["score"] == alice_before
    assert set(rows(root)) == {(s, LESSON) for s in ("alice", "bob", "carol", "dave", "erin", "frank",
                                                     "gina", "hank")}, "a partial run dropped the class"
    assert tree_hash(root / "submitted") == before


def test_an_older_gradebook_is_indexed_keeps_every_grade_and_stock_nbgrader_reads_it(graded_class, tmp_path):
    """A gradebook made before the indexes (dropped here), with a grade set by hand: make grade
    adds them (store.indexes) and changes no grade, comment or submission; stock nbgrader
    commands (its alembic upgrade, the student list, its export) still work on it."""
    import sqlite3

    from attention_grading.store import indexes

    root = tmp_path / "course"
    shutil.copytree(graded_class[0], root, symlinks=True)
    tables = ("grade", "comment", "submitted_notebook", "submitted_assignment", "student", "alembic_version")

    def every_row():
        with sqlite3.connect(root / "gradebook.db") as db:
            names = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
            return names, {t: sorted(map(repr, db.execute(f"SELECT * FROM {t}"))) for t in tables}

    with sqlite3.connect(root / "gradebook.db") as db:
        for table, column in indexes.INDEXED:
            db.execute(f"DROP INDEX {indexes.index_name(table, column)}")      # make grade made them
        db.execute("UPDATE grade SET manual_score = 0.5, needs_manual_grade = 0 WHERE id = "
                   "(SELECT id FROM grade ORDER BY id LIMIT 1)")
    names, before = every_row()
    assert not {indexes.index_name(*pair) for pair in indexes.INDEXED} & names
    done = run_grade(root, "--student", "alice", "--student", "bob", "--no-report", "--no-feedback")
    assert done.returncode == 0 and "grading 0 submission(s)" in done.stdout, done.stdout + done.stderr
    names, after = every_row()
    assert {indexes.index_name(*pair) for pair in indexes.INDEXED} <= names
    assert after == before and len(before["grade"]) > 10
    assert "0.5" in "".join(after["grade"])
    assert nbgrader(root, "db", "upgrade").returncode == 0
    assert "alice" in nbgrader(root, "db", "student", "list").stdout
    nbgrader(root, "export", "--to", str(tmp_path / "stock-export.csv"))
    assert every_row() == (names, before)


@pytest.mark.full   # a copy of the class graded three more times; the quick tier's re-runs are the test above
def test_stale_stored_tests_stop_grading_and_content_hashes_decide_what_is_graded(graded_class, tmp_path):
    """A stored hidden test that is not source/'s stops the run before anything is graded, with
    the command that fixes it. After that command, content hashes decide: a new notebook dated in
    the past is graded, a touched but unchanged one is not."""
    import sqlite3

    root = tmp_path / "course"
    shutil.copytree(graded_class[0], root, symlinks=True)
    with sqlite3.connect(root / "gradebook.db") as db:
        db.execute("UPDATE source_cell SET source = 'pass  # always passes' WHERE name = "
                   "'softmax_matches_reference'")
    stopped = run_grade(root, "--workers", "1", "--force", "--no-report", "--no-feedback")
    assert stopped.returncode != 0
    out = stopped.stdout + stopped.stderr
    assert "softmax_matches_reference" in out and "nbgrader generate_assignment" in out, out
    assert "grading " not in stopped.stdout
    nbgrader(root, "generate_assignment", LESSON, "--force")      # the command the message names
    carol = root / "submitted" / "carol" / LESSON / f"{LESSON}.ipynb"
    bob = root / "submitted" / "bob" / LESSON / f"{LESSON}.ipynb"
    carol.write_text(notebook("correct"))
    os.utime(carol, (0, 0))                       # 1970: older than any autograded file
    os.utime(bob, (4_000_000_000, 4_000_000_000))  # 2096: newer, unchanged content
    again = run_grade(root, "--workers", "2", "--no-report", "--no-feedback")
    assert "grading 1 submission(s)" in again.stdout, again.stdout
    assert float(rows(root)["carol", LESSON]["score"]) == float(rows(root)["alice", LESSON]["score"])


def test_no_sandbox_no_grading_unless_asked(graded_class, tmp_path):
    """Where the sandbox cannot be set up, make grade stops and names what is missing; with
    --unsandboxed it grades, warns, and the report says so on its first line."""
    root = tmp_path / "course"
    shutil.copytree(graded_class[0], root, symlinks=True)
    refused = run_grade(root, "--force", "--no-report", ATTENTION_SANDBOX_PRETEND_MISSING="landlock")
    assert refused.returncode != 0
    assert "Landlock" in refused.stdout + refused.stderr and "--unsandboxed" in refused.stdout + refused.stderr
    assert "grading " not in refused.stdout
    allowed = run_grade(root, "--force", "--student", "alice", "--unsandboxed", "--no-feedback",
                        ATTENTION_SANDBOX_PRETEND_MISSING="landlock")
    assert "WITHOUT a sandbox" in allowed.stdout and "grading 1 submission(s)" in allowed.stdout
    first = (root / "grading-report" / "summary.md").read_text().splitlines()
    assert "WITHOUT a sandbox" in "\n".join(first[:3])
    notes = json.loads((root / "autograded" / "alice" / LESSON / "grading-notes.json").read_text())
    assert notes["sandbox"] is None


def test_unknown_lesson_is_refused(graded_class):
    root, _, _ = graded_class
    done = run_grade(root, "--lesson", "99_nope", "--no-report")
    assert done.returncode != 0 and "unknown lesson" in (done.stdout + done.stderr)


def test_feedback_teaches_without_leaking(graded_class):
    """Every feedback file: names, points and diagnoses; never hidden test code, reference code or paths."""
    root, _, _ = graded_class
    files = list((root / "feedback").rglob("*.html"))
    assert files
    for path in files:
        assert not leaks.found_in(path.read_text(), root), path
    carol = (root / "feedback" / "carol" / LESSON / f"{LESSON}.html").read_text()
    assert "contextualize agrees with the reference" in carol           # the check's docstring
    assert "not divided by" in carol                                    # the judge's diagnosis
    assert "hidden tests run here" in carol


def test_make_grade_prints_no_runtime_warning(graded_class):
    """Neither the command nor its workers warn (the class is graded with 2 workers, and one is
    killed and replaced): nothing imports attention_grading.cli.grade before runpy runs it in a
    worker (pool.PRELOAD leaves it out)."""
    _, done, _ = graded_class
    out = done.stdout + done.stderr
    assert "RuntimeWarning" not in out and "found in sys.modules" not in out, out[-3000:]


def test_grades_by_learner_is_grades_csv_one_row_per_learner(graded_class, tmp_path):
    """grades-by-learner.csv (for a learning-management system): one row per learner, points and
    percent per lesson, totals; the same numbers as grades.csv; an ungradable lesson's cells empty
    and the note saying why. Lesson 01 has no due date here: make grade's file counts no lesson
    (c.CourseGradesExport.lms_counts = "due"); `nbgrader export` with lms_counts "released" counts it."""
    root, _, _ = graded_class
    table = rows(root)
    with open(root / "grades-by-learner.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == ["student", "first_name", "last_name", "email", "total points",
                                     "total max points", "total percent", "note"]
        assert len(list(reader)) == 8
    nbgrader(root, "export", f"--to={tmp_path / 'grades.csv'}", "--CourseGradesExport.lms_counts=released")
    with open(tmp_path / "grades-by-learner.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        header, learners = reader.fieldnames, list(reader)
    assert header == ["student", "first_name", "last_name", "email", f"{LESSON} points", f"{LESSON} percent",
                      "total points", "total max points", "total percent", "note"]
    assert [r["student"] for r in learners] == sorted({student for student, _ in table}) == \
        ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank"]
    for learner in learners:
        row = table[learner["student"], LESSON]
        score, top = float(row["score"]), float(row["max_score"])
        if row["status"] == "ungradable":
            assert learner[f"{LESSON} points"] == learner[f"{LESSON} percent"] == ""
            assert f"{LESSON} could not be graded" in learner["note"] and row["note"] in learner["note"]
        else:
            assert float(learner[f"{LESSON} points"]) == score
            assert float(learner[f"{LESSON} percent"]) == pytest.approx(100 * score / top, abs=0.005)
            assert len(learner[f"{LESSON} percent"].partition(".")[2]) <= 2
            assert learner["note"] == ""
        total, total_top = float(row["student_total"]), float(row["student_max_total"])
        assert (float(learner["total points"]), float(learner["total max points"])) == (total, total_top)
        assert float(learner["total percent"]) == pytest.approx(100 * total / total_top, abs=0.005)
    by_student = {r["student"]: r for r in learners}
    assert {"dave", "erin", "frank"} <= {s for s, r in by_student.items() if r[f"{LESSON} points"] == ""}
    assert float(by_student["alice"][f"{LESSON} percent"]) > float(by_student["carol"][f"{LESSON} percent"]) > 0


IDENTITY_SOFTMAX = "def softmax(x, axis=-1):\n    return np.asarray(x, dtype=float)\n"


@pytest.mark.full   # five gradings of one notebook, both ways; tests/unit/test_attempts.py tests the ledger alone
def test_the_same_attempt_graded_again_draws_the_same_cases_and_a_new_one_new_cases(tmp_path):
    """A submission graded again (by make grade with --force, or by plain nbgrader autograde on the same
    course) is the same attempt: the ledger keeps one entry and its verdict is the same. Handing in
    other files, then the first files again, makes attempts 2 and 3: the third draws cases other
    than the first's although its files are the first's. Each verdict is what the judge says on the
    cases the ledger's attempt draws (the grader used that attempt's key)."""
    from attention_grading.hidden import registry
    from attention_grading.hidden.cases import case_generator
    from attention_grading.hidden.attempts import AttemptLedger
    from attention_grading.hidden.cases import course_secret
    from attention_grading.hidden.in_process import run_locally
    from attention_grading.hidden.reference import reference

    root = copy_course(tmp_path / "course")
    nbgrader(root, "generate_assignment", LESSON, "--force")
    nb = json.loads(notebook("correct"))
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softmax":
            cell["source"] = IDENTITY_SOFTMAX
    first = json.dumps(nb)
    folder = submit(root, "ivy", first)
    ledger, secret = AttemptLedger(root), bytes.fromhex(course_secret(root))

    def verdict():
        notes = json.loads((root / "autograded" / "ivy" / LESSON / "grading-notes.json").read_text())
        return notes["verdicts"]["softmax_matches_reference"]["message"]

    def cases_of(attempt):
        g = case_generator(secret, attempt.key("ivy", LESSON), "softmax")
        return registry.get("softmax").cases(g)

    def predicted(attempt):
        namespace = {"np": __import__("numpy")}
        exec(IDENTITY_SOFTMAX, namespace)
        g = case_generator(secret, attempt.key("ivy", LESSON), "softmax")
        return run_locally(registry.get("softmax"), reference(), namespace, g).message

    def grade(*args):
        done = run_grade(root, "--student", "ivy", "--no-report", "--no-feedback", *args)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    grade()
    (one,) = ledger.attempts("ivy", LESSON)
    said = verdict()
    assert said == predicted(one) and "differs from the reference" in said, said
    grade("--force")
    assert verdict() == said and len(ledger.attempts("ivy", LESSON)) == 1
    stock = nbgrader(root, "autograde", LESSON, "--student", "ivy", "--force")
    assert "ivy" in stock.stdout and verdict() == said and len(ledger.attempts("ivy", LESSON)) == 1

    (folder / "answers.json").write_text("{}")
    grade()
    (folder / "answers.json").unlink()
    (folder / f"{LESSON}.ipynb").write_text(first)
    grade()
    attempts = ledger.attempts("ivy", LESSON)
    assert [a.number for a in attempts] == [1, 2, 3] and attempts[2].digest == attempts[0].digest
    assert verdict() == predicted(attempts[2]) != said
    assert not any(np.array_equal(a.args[0], b.args[0]) for a, b in zip(cases_of(attempts[0]), cases_of(attempts[2])))


def test_a_name_only_a_skipped_demonstration_defines_grades_the_notebook_whole(tmp_path):
    """A cell the learner added reaches ``words`` (bound only by a demonstration of the lesson) in a
    way the text does not show (IPython's ``ex``): that run meets a NameError, so the notebook is
    graded again whole (the demonstrations run, the cell with them, no error) and keeps full marks
    as the correct learner beside it does, whose demonstrations were skipped and say so."""
    from attention_grading.kernels.demonstrations import NOTE

    root = copy_course(tmp_path / "course")
    submit(root, "alice", notebook("correct"))
    nb = json.loads(notebook("correct"))
    nb["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                        "source": 'import IPython\nIPython.get_ipython().ex("seen = len(words)")\nprint("seen", seen)'})
    submit(root, "ivy", json.dumps(nb))
    done = run_grade(root, "--workers", "2", "--no-report")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = grade_table(f"sqlite:///{root / 'gradebook.db'}")
    scores = {(student, name): score for (student, _, name), (score, _) in table.items()}
    tests = [name for (student, name) in scores if student == "alice" and name.endswith("_reference")]
    assert tests and all(scores["ivy", name] == scores["alice", name] > 0 for name in tests)

    def autograded(student):
        return json.loads((root / "autograded" / student / LESSON / f"{LESSON}.ipynb").read_text())

    whole, skipping = autograded("ivy"), autograded("alice")
    text = [json.dumps(cell.get("outputs", [])) for cell in whole["cells"]]
    assert not any(NOTE.strip() in t for t in text)
    assert "seen " in text[-1] and "NameError" not in text[-1], text[-1]
    assert any(NOTE.strip() in json.dumps(cell.get("outputs", [])) for cell in skipping["cells"])
    page = (root / "feedback" / "alice" / LESSON / f"{LESSON}.html").read_text()
    assert "a demonstration of the lesson: not run while grading" in page
