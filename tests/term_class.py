"""A term on a copy of the course: lesson 01 with a due date and nbgrader's "zero" late penalty,
learners on time, late and late with an extension, a roster, and manual grades written through
nbgrader's API as the formgrader writes them. Shared by tests/test_term.py."""
import csv
import re
import shutil
from pathlib import Path

import nbformat

from conftest import copy_course, nbgrader
from grading_helpers import LESSON, notebook, run_grade, submit

LESSONS = (LESSON, "02_queries_keys_values", "03_scaling")
RELEASED = "02_queries_keys_values"          # released through the exchange, no due date
NOT_YET_DUE = "03_scaling"                   # due in 2099
DUE = "2026-01-05 12:00:00 UTC"
ON_TIME, LATE = "2026-01-04 09:00:00.000000 UTC", "2026-01-10 12:00:00.000000 UTC"
LEARNERS = {"alice": ("correct", ON_TIME), "bob": ("correct", LATE), "carol": ("buggy", LATE),
            "dave": ("correct", LATE), "erin": ("blank", ON_TIME)}
ROSTER = [("alice", "Alice", "Ng", "alice@uni.example"), ("bob", "Bob", "Okafor", "bob@uni.example"),
          ("carol", "Carol", "Diaz", "carol@uni.example"), ("dave", "Dave", "Kim", "dave@uni.example"),
          ("erin", "Erin", "Holm", "erin@uni.example"), ("zoe", "Zoe", "Park", "zoe@uni.example")]
OFF_ROSTER = "root"                          # submits, but is not on the roster
WRITTEN = ("self_weight_answer", "row_softmax_answer")
COMMENT = r"Close: the rows are scaled by $\sqrt{d}$ first, see lesson 03."


def db_url(root):
    return f"sqlite:///{Path(root) / 'gradebook.db'}"


def set_up(root, lessons=LESSONS, roster=True, extension=True):
    """A course at ``root`` with the class of ``LEARNERS`` submitted, lesson 01 due on ``DUE``,
    late submissions scored 0 (nbgrader's ``LateSubmissionPlugin.penalty_method = "zero"``),
    dave given ten days more; lesson 02 released through the exchange, lesson 03 due in 2099."""
    from nbgrader.api import Gradebook

    root = copy_course(root, lessons=list(lessons))
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    for student, (kind, when) in LEARNERS.items():
        submit(root, student, notebook(kind), timestamp=when)
    if roster:
        with open(root / "roster.csv", "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "first_name", "last_name", "email"])
            writer.writerows(ROSTER)
        nbgrader(root, "db", "student", "import", "roster.csv")
    nbgrader(root, "generate_assignment", LESSON, "--force")
    nbgrader(root, "db", "assignment", "add", LESSON, f"--duedate={DUE}")
    if NOT_YET_DUE in lessons:
        nbgrader(root, "db", "assignment", "add", NOT_YET_DUE, "--duedate=2099-01-01 00:00:00 UTC")
    if RELEASED in lessons:
        (root / ".exchange" / "attention" / "outbound" / RELEASED).mkdir(parents=True)
    if extension:
        with Gradebook(db_url(root), "attention") as gb:
            gb.update_or_create_student("dave")
            gb.update_or_create_submission(LESSON, "dave")
            gb.grant_extension(LESSON, "dave", days=10)
    return root


def grade_by_hand(root, student, grade_id, points, comment=None):
    """What the formgrader's API handlers do when an instructor types a score (and a comment)."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url(root), "attention") as gb:
        grade = gb.find_grade(grade_id, LESSON, LESSON, student)
        grade.manual_score = points
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        if comment is not None:
            gb.find_comment(grade_id, LESSON, LESSON, student).manual_comment = comment
        gb.db.commit()


def standings(url, lesson=LESSON):
    """{student: (timestamp, late penalty, score, {grade_id: (auto, manual, needs manual)})}."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(url, "attention") as gb:
        for submission in gb.assignment_submissions(lesson):
            (nb,) = submission.notebooks
            out[submission.student.id] = (
                submission.timestamp, nb.late_submission_penalty, submission.score,
                {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade) for g in nb.grades})
    return out


def rewrite_answer(root, student, grade_id, text):
    """The learner hands in again, with one written answer changed."""
    path = Path(root) / "submitted" / student / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(path, as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    cell.source = text
    nbformat.write(nb, path)


class Snapshot:
    """What one run printed and left: grades.csv, grades-by-learner.csv, the report's summary,
    every feedback page, the gradebook's standings."""

    def __init__(self, root, done):
        root = Path(root)
        self.done, self.out = done, done.stdout + done.stderr
        self.grades = _csv(root / "grades.csv")
        self.learners = _csv(root / "grades-by-learner.csv")
        self.grades_bytes = (root / "grades.csv").read_bytes()
        self.learners_bytes = (root / "grades-by-learner.csv").read_bytes()
        summary = root / "grading-report" / "summary.md"
        self.summary = summary.read_text() if summary.is_file() else ""
        self.pages = {p.parts[-3]: p.read_text() for p in (root / "feedback").glob(f"*/{LESSON}/{LESSON}.html")}
        self.standings = standings(db_url(root))

    def row(self, student, lesson=LESSON):
        return next(r for r in self.grades if r["student"] == student and r["lesson"] == lesson)

    def table_cell(self, student, column=1):
        """The table's cell of ``student`` (column 1: the first lesson shown)."""
        for line in self.done.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == student:
                return parts[column]
        raise AssertionError(f"{student} is not in the table:\n{self.done.stdout}")


def _csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def page_score(html):
    """(score, maximum shown) of a feedback page's header."""
    match = re.search(r"\(Score: ([0-9.]+) / ([0-9.]+)", html)
    return float(match.group(1)), float(match.group(2))


def run_term(root, *args, **env):
    return run_grade(root, "--workers", "2", *args, **env)


def copy_of(root, dest):
    shutil.copytree(root, dest, symlinks=True)
    return Path(dest)
