"""The course gradebook: the lessons in it, their stored hidden tests, and what grading writes.

Only the process that runs ``make grade`` calls this module's writers: jobs grade against a
template gradebook of their own (``make_template``) and hand back the autograded notebook, which
``save_outcome`` records in the course gradebook with the same steps as ``nbgrader autograde``
(``verdicts.SaveVerdicts``, nbgrader's ``SaveAutoGrades`` scored by the grader's verdicts, and
nbgrader's ``AssignLatePenalties``).
"""
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import standing
from ..course import load_config
from ..errors import GradebookError
from ..results import GradingResult

RESULT_FILE = "grading-result.json"


def ensure_assignments(root, config, db_url, lessons, scratch, log):
    """Every lesson is in the gradebook (generate_assignment into a scratch release folder if not)."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.apps import NbGraderAPI

    missing = []
    with Gradebook(db_url, config.CourseDirectory.course_id) as gb:
        for lesson in lessons:
            try:
                assignment = gb.find_assignment(lesson)
                if not assignment.notebooks:
                    missing.append(lesson)
            except MissingEntry:
                missing.append(lesson)
    if not missing:
        return
    config = load_config(root)
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = db_url
    config.CourseDirectory.release_directory = str(Path(scratch) / "release")
    api = NbGraderAPI(config=config)
    api.log.setLevel(logging.WARNING)
    for lesson in missing:
        log(f"adding {lesson} to the gradebook (generate_assignment into a scratch folder)")
        done = api.generate_assignment(lesson, force=True)
        if not done["success"]:
            raise GradebookError(f"generate_assignment failed for {lesson}:\n{done['log']}{done.get('error', '')}")


def create_empty(db_url, course_id, path):
    """An empty SQLite gradebook, stamped with the course gradebook's schema version.

    nbgrader stamps a new gradebook by running ``alembic heads`` (a second or two); the
    course gradebook already knows the answer.
    """
    import nbgrader.api as api
    from sqlalchemy import text

    with api.Gradebook(db_url, course_id) as gb:
        version = gb.db.execute(text("SELECT version_num FROM alembic_version")).scalar()
    original = api.get_alembic_version
    if version:
        api.get_alembic_version = lambda: version
    try:
        api.Gradebook(f"sqlite:///{path}", course_id).close()
    finally:
        api.get_alembic_version = original
    return path


def make_template(db_url, course_id, lesson, path, empty=None):
    """A fresh SQLite gradebook holding only ``lesson``'s assignment, copied from the course's.

    ``empty``: an empty gradebook file to start from (creating one runs ``alembic``: slow).
    """
    from nbgrader.api import Gradebook

    if empty:
        shutil.copyfile(empty, path)
    with Gradebook(db_url, course_id) as src, Gradebook(f"sqlite:///{path}", course_id) as dst:
        assignment = src.find_assignment(lesson)
        dst.add_assignment(lesson, duedate=assignment.duedate)
        for nb in assignment.notebooks:
            dst.add_notebook(nb.name, lesson, kernelspec=nb.kernelspec)
            for cell in nb.grade_cells:
                dst.add_grade_cell(cell.name, nb.name, lesson, max_score=cell.max_score,
                                   cell_type=cell.cell_type)
            for cell in nb.solution_cells:
                dst.add_solution_cell(cell.name, nb.name, lesson)
            for cell in nb.task_cells:
                dst.add_task_cell(cell.name, nb.name, lesson, max_score=cell.max_score,
                                  cell_type=cell.cell_type)
            for cell in nb.source_cells:
                dst.add_source_cell(cell.name, nb.name, lesson, cell_type=cell.cell_type,
                                    locked=cell.locked, source=cell.source, checksum=cell.checksum)
    return path


def stored_test_mismatches(root, db_url, course_id, lessons):
    """{lesson: [grade cell ids]} whose hidden tests stored in the gradebook differ from source/.

    Autograding restores every test cell from the gradebook; a stale or altered copy there would
    grade with tests the instructor did not write.
    """
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    from ..cells import is_test, grade_id

    mismatches = {}
    with Gradebook(db_url, course_id) as gb:
        for lesson in lessons:
            nb = nbformat.read(Path(root) / "source" / lesson / f"{lesson}.ipynb", as_version=4)
            wanted = {grade_id(c): c.source for c in nb.cells if is_test(c)}
            try:
                stored = {c.name: c.source for c in gb.find_notebook(lesson, lesson).source_cells}
            except MissingEntry:
                continue                   # not in the gradebook yet: ensure_assignments adds it
            changed = sorted(name for name, source in wanted.items() if stored.get(name) != source)
            if changed:
                mismatches[lesson] = changed
    return mismatches


def save_outcome(root, db_url, course_id, outcome, config, prior=None, answered=None):
    """Write a graded submission into the course: ``autograded/<student>/<lesson>/`` (the job's
    files and ``grading-result.json``) and the gradebook: the grader's verdicts (``SaveVerdicts``,
    never what the kernel printed) and nbgrader's ``AssignLatePenalties``, built with the course's
    configuration (its ``LateSubmissionPlugin``), on the autograded notebook, as ``nbgrader
    autograde`` does; then the manual grades of written answers whose text is the one graded before
    (``answered``) are kept as they were (``prior``: the submission's ``standing.Standing`` before
    this grading). Returns its standing now."""
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties

    from ..results import NOTES_KEY
    from ..steps.verdicts import SaveVerdicts

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
    with Gradebook(db_url, course_id) as gb:
        gb.update_or_create_student(result.student)
        kwargs = {"timestamp": result.timestamp} if result.timestamp else {}
        gb.update_or_create_submission(result.lesson, result.student, **kwargs)
    nb = nbformat.read(folder / f"{result.lesson}.ipynb", as_version=4)
    resources = {"nbgrader": {"notebook": result.lesson, "assignment": result.lesson,
                              "student": result.student, "db_url": db_url}, NOTES_KEY: result.notes}
    for step in (SaveVerdicts(config=config), AssignLatePenalties(config=config)):
        step.log.setLevel(logging.WARNING)
        nb, resources = step.preprocess(nb, resources)
    with Gradebook(db_url, course_id) as gb:
        result.kept_manual, result.changed_manual = standing.keep_confirmed_answers(
            gb, nb, result.lesson, result.student, prior, answered or {})
        now = standing.read(gb, result.lesson, result.student)
    (folder / RESULT_FILE).write_text(result.to_json())
    return now


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


def final_scores(gb, lessons, students):
    """{(student, lesson): FinalScore} of every submission in the gradebook."""
    from nbgrader.api import MissingEntry

    scores = {}
    for lesson in lessons:
        for student in students:
            try:
                submission = gb.find_submission(lesson, student)
            except MissingEntry:
                continue
            scores[student, lesson] = FinalScore(
                submission.score, submission.late_submission_penalty or 0.0, submission.max_score,
                bool(submission.needs_manual_grade),
                submission.timestamp.isoformat(sep=" ") if submission.timestamp else None)
    return scores


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
