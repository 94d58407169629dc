"""The course gradebook's one writer of graded submissions (``save``), and what it recorded:
each submission's result (``grading-result.json``), whether it is graded already, the final scores
nbgrader's export computes.

Only the process that runs ``make grade`` calls ``save``: jobs grade with no gradebook at all and
hand back the autograded notebook and its verdicts, which ``save`` records with ``grades.apply``
(the scores, the kept manual grades, the late penalty). The lessons in the gradebook are
``lessons``'.
"""
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..course import RESULT_FILE
from ..results import UNGRADABLE, GradingResult
from . import grades, history, standing



def save(root, db_url, course_id, outcome, config, prior=None, answered=None, gb=None):
    """Store a graded submission: ``autograded/<student>/<lesson>/`` (the job's files), its grades
    in the gradebook (``grades.apply``, the one place scores, kept manual grades and the late
    penalty are written), its result with the checks read back from them (``grading-result.json``).
    ``prior``: the submission's ``standing.Standing`` before this grading; ``answered``: the
    digests of its written answers then; ``gb``: the course gradebook already open (one
    connection for a whole run, rather than one per submission). Returns its standing now."""
    import nbformat
    from nbgrader.api import Gradebook

    if gb is None:
        with Gradebook(db_url, course_id) as gb:
            return save(root, db_url, course_id, outcome, config, prior, answered, gb)
    result = outcome.result
    folder = Path(root) / "autograded" / result.student / result.lesson
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, data in outcome.autograded.items():
        path = folder / name
        if folder.resolve() not in path.resolve().parents:
            continue                                   # a path that leaves the folder: never written
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    nb = nbformat.read(folder / f"{result.lesson}.ipynb", as_version=4)
    with one_transaction(gb):
        gb.update_or_create_student(result.student)
        kwargs = {"timestamp": result.timestamp} if result.timestamp else {}
        gb.update_or_create_submission(result.lesson, result.student, **kwargs)
        result.kept_manual, result.changed_manual = grades.apply(gb, nb, result.student, result.lesson,
                                                                 result.notes, config, prior, answered)
        grades.fill_result(gb, nb, result)
        now = standing.read(gb, result.lesson, result.student)
    (folder / RESULT_FILE).write_text(result.to_json())
    return now


@contextmanager
def one_transaction(gb):
    """Store one submission in one transaction of the open gradebook ``gb``: nbgrader's steps
    commit after every cell (``SaveAutoGrades``), each commit a write to disk of its own (17 a
    submission, most of the store's time on a large class); within this block a commit only
    sends the changes (a flush) and forgets what was loaded, as a commit does, and the whole
    submission is committed once at the end, or not at all if anything fails."""
    session = gb.db

    def flush():
        session.flush()
        session.expire_all()       # read again, as after a commit: nbgrader's scores are SQL expressions
    session.commit = flush
    try:
        yield
    except BaseException:
        del session.commit
        session.rollback()
        raise
    del session.commit
    session.commit()


def record_failure(root, result, attempt=None, notebook=None):
    """Remember why a submission could not be graded: grades.csv says so until it is graded,
    unless an earlier attempt of it was graded: that grade stands (its result is kept, every
    output shows it) and ``history/<student>/<lesson>/refused.json`` says why the new one was not
    graded. The attempt is kept in the history either way (``attempt``: its
    ``hidden.attempts.Attempt``; ``notebook``: the submitted notebook's bytes). Returns whether an
    earlier grade stands."""
    earlier = load_result(root, result.student, result.lesson)
    stands = earlier is not None and earlier.status != UNGRADABLE
    if not stands:
        folder = Path(root) / "autograded" / result.student / result.lesson
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RESULT_FILE).write_text(result.to_json())
    try:
        history.keep_failed(root, result, attempt, notebook, stands)
    except (OSError, ValueError):
        pass                       # the history never stops a run; the report still says why
    return stands


def load_result(root, student, lesson):
    """The GradingResult recorded for a submission, or None."""
    path = Path(root) / "autograded" / student / lesson / RESULT_FILE
    try:
        return GradingResult.from_json(path.read_text())
    except (OSError, ValueError, TypeError):
        return None


def load_results(root):
    """{(student, lesson): GradingResult} of every submission the grader recorded in autograded/."""
    results = {}
    for path in sorted(Path(root, "autograded").glob(f"*/*/{RESULT_FILE}")):
        result = load_result(root, path.parent.parent.name, path.parent.name)
        if result is not None:
            results[result.student, result.lesson] = result
    return results


def already_graded(root, gb, student, lesson, submission_sha256, lesson_sha256):
    """Graded before from exactly these files and this lesson source (content hashes recorded by
    the grader, never file times), and the gradebook holds its scores."""
    from nbgrader.api import MissingEntry

    result = load_result(root, student, lesson)
    if result is None or result.submission_sha256 != submission_sha256 or result.lesson_sha256 != lesson_sha256:
        return False
    try:
        submission = gb.find_submission(lesson, student)
    except MissingEntry:
        return False
    return any(g.auto_score is not None for nb in submission.notebooks for g in nb.grades)


@dataclass
class FinalScore:
    """A submission's grade as nbgrader's own export computes it: the gradebook's score (manual
    grades and extra credit included) less the late penalty, never below 0."""
    raw: float
    penalty: float
    max_score: float
    needs_manual: bool
    timestamp: Optional[str] = None

    @property
    def score(self):
        return max(0.0, self.raw - self.penalty)


def final_scores(gb, lessons, students, config=None):
    """{(student, lesson): FinalScore} of every submission in the gradebook, in one query (nbgrader's
    own ``score``, ``late_submission_penalty``, ``max_score`` and ``needs_manual_grade`` column
    properties, each an indexed subquery), rather than one lookup per learner and lesson. With the
    course's ``config``, each late penalty is the one ``grades.late_penalty`` would set now
    (``grades.penalty_now``: an extension or a manual grade since the last run counts), else the
    one the gradebook holds."""
    from nbgrader.api import Assignment, Student, SubmittedAssignment

    wanted, lessons = set(students), list(lessons)
    step = grades.penalty_step(gb, config) if config is not None else None
    query = (gb.db.query(SubmittedAssignment, Student.id, Assignment.name, SubmittedAssignment.score,
                         SubmittedAssignment.late_submission_penalty, SubmittedAssignment.max_score,
                         SubmittedAssignment.needs_manual_grade)
             .join(Student, Student.id == SubmittedAssignment.student_id)
             .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
             .filter(Assignment.name.in_(lessons)))
    found = {}
    for submission, student, lesson, raw, penalty, top, manual in query:
        if student not in wanted:
            continue
        if step is not None:
            penalty = grades.penalty_now(gb, config, submission, step)
        timestamp = submission.timestamp
        found[student, lesson] = FinalScore(raw, penalty or 0.0, top, bool(manual),
                                            timestamp.isoformat(sep=" ") if timestamp else None)
    return {(student, lesson): found[student, lesson]          # in the order asked for, as before
            for lesson in lessons for student in students if (student, lesson) in found}


def lesson_maxima(gb, lessons):
    """{lesson: (max score, due date or None)} from the gradebook (0 and None if it is not there)."""
    from nbgrader.api import MissingEntry

    out = {}
    for lesson in lessons:
        try:
            assignment = gb.find_assignment(lesson)
            out[lesson] = (assignment.max_score, assignment.duedate)
        except MissingEntry:
            out[lesson] = (0.0, None)
    return out
