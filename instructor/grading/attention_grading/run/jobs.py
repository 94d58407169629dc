"""One grading job: a submission in; a ``GradingResult``, the autograded notebook and its
feedback page out. One feedback job: a graded submission in, its feedback page out.

A job carries all it needs (the submission's files, a gradebook holding only its lesson, the
submission's standing in the course gradebook: manual grades, comments, extension; the course's
nbgrader configuration) and touches nothing of the course: the worker grades it in a scratch
course of its own with stock nbgrader ``Autograde`` (the course's preprocessors: sandboxed
kernels, grader-driven hidden tests, verdicts, sanitising, late penalties), reads back the scores,
and renders the feedback with stock ``GenerateFeedback`` (the course's feedback steps), so that
the machine running ``make grade`` only stores pages. Only that process writes the course's
gradebook and folders (``gradebook.save_outcome``, ``pages``), so a job can run on any machine
with the course environment. What a job returns is plain data.
"""
import io
import json
import logging
import re
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..store import standing as standings
from ..cells import CellPlan, grade_id, is_written_answer
from ..results import (CHECK_AWAITING, CHECK_FAILED, CHECK_PASSED, GRADED, NEEDS_MANUAL, UNGRADABLE,
                       CheckResult, Flag, GradingResult, NotebookNotes, Verdict)
from ..steps.verdicts import NOTES_FILE


@dataclass
class GradingJob:
    student: str
    lesson: str
    files: dict                    # {path relative to the submission folder: bytes}
    template: bytes                # a SQLite gradebook holding only this lesson
    config: object                 # the course's traitlets Config (nbgrader_config.py)
    submission_sha256: str = ""
    lesson_sha256: str = ""
    prior: object = None           # standing.Standing in the course gradebook before, or None
    answered: dict = field(default_factory=dict)    # {grade_id: digest} of written answers graded before
    feedback: bool = True          # render the feedback page too
    lesson_source: bytes = b""     # source/<lesson>/<lesson>.ipynb: which cells are the lesson's own
    case_key: str = ""             # the key of the submission's attempt (attempts.case_key): its hidden cases

    @property
    def key(self):
        return self.student, self.lesson

    def failure(self, message, retry=True):
        """The outcome of this job when it could not run to the end (its worker died, say)."""
        result = GradingResult(self.student, self.lesson, status=UNGRADABLE, failure=message,
                               submission_sha256=self.submission_sha256, lesson_sha256=self.lesson_sha256)
        return JobOutcome(result, False, retry=retry)


@dataclass
class JobOutcome:
    """What a worker hands back: the result, the autograded folder's files and the feedback
    folder's files on success.

    From a Dask worker it travels in ``wire`` form (JSON and file bytes, never a pickle): give a new
    field a type (``dict[str, bytes]`` for files) and it travels with no other change."""
    result: GradingResult
    ok: bool
    autograded: dict[str, bytes] = field(default_factory=dict)   # {relative path: bytes}
    log: str = ""                  # nbgrader's log and traceback, when it failed
    retry: bool = True             # worth a second attempt if it failed
    feedback: dict[str, bytes] = field(default_factory=dict)   # {file name: bytes}: what the learner receives
    feedback_digest: str = ""      # the standing.Standing digest the page was rendered from
    feedback_error: str = ""       # why the page could not be rendered (the grades are kept)

    @property
    def message(self):
        return self.result.failure or ""


def _capture(obj, name):
    """Send ``obj``'s log to a string buffer; returns the buffer."""
    buffer = io.StringIO()
    logger = logging.getLogger(name)
    logger.handlers[:] = [logging.StreamHandler(buffer)]
    logger.handlers[0].setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    logger.setLevel(logging.INFO)
    logger.propagate = False
    obj.log = logger
    return buffer


def failure_message(exc, log):
    """The most telling line of an nbgrader failure."""
    lines = log.splitlines()
    for line in lines:
        if line.startswith("[ERROR]") and not any(
                s in line for s in ("Traceback", "Please see", "There was an error")):
            return line[len("[ERROR] "):][:300]
    raised = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception): ", line)]
    if raised:
        return raised[-1][:300]
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300]


def coursedir_for(config, root, db_url, lesson, student):
    import copy

    from nbgrader.coursedir import CourseDirectory

    config = copy.deepcopy(config)
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = db_url
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = lesson
    coursedir.student_id = student
    return config, coursedir


def run_job(job):
    """Autograde one submission in a scratch course; never raises (a failure is in the outcome)."""
    from nbgrader.converters import Autograde

    started = time.time()
    result = GradingResult(job.student, job.lesson, status=GRADED, submission_sha256=job.submission_sha256,
                           lesson_sha256=job.lesson_sha256)
    scratch = Path(tempfile.mkdtemp(prefix="attention-job-"))
    buffer = None
    try:
        folder = scratch / "submitted" / job.student / job.lesson
        for name, data in job.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        (scratch / "source" / job.lesson).mkdir(parents=True)
        if job.lesson_source:        # GuardedExecute draws the figures of the cells that are not in it
            (scratch / "source" / job.lesson / f"{job.lesson}.ipynb").write_bytes(job.lesson_source)
        db_url = _scratch_gradebook(scratch, job.template, job.prior)
        config, coursedir = coursedir_for(job.config, scratch, db_url, job.lesson, job.student)
        if job.case_key:              # the attempt was recorded in the course, not in this scratch copy
            config.GuardedExecute.case_key = job.case_key
        autograde = Autograde(coursedir=coursedir, config=config)
        autograde.force = True
        buffer = _capture(autograde, f"attention-grade.{job.student}.{job.lesson}")
        autograde.start()
        out = scratch / "autograded" / job.student / job.lesson
        files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
        _keep_confirmed_answers(out, db_url, job)
        read_back(result, out, db_url, job)
        outcome = JobOutcome(result, True, files)
        if job.feedback:
            try:
                outcome.feedback, outcome.feedback_digest = render_feedback(scratch, db_url, job, config)
            except Exception as exc:       # the grades stand; the feedback step tries again
                outcome.feedback_error = failure_message(exc, "")
        result.seconds = time.time() - started
        return outcome
    except Exception as exc:
        log = buffer.getvalue() if buffer else ""
        result.status, result.failure = UNGRADABLE, failure_message(exc, log)
        result.seconds = time.time() - started
        return JobOutcome(result, False, log=(log + "\n" + traceback.format_exc())[-6000:])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _scratch_gradebook(scratch, template, prior):
    """The job's gradebook: the lesson's template, holding the submission as the course gradebook
    does (``prior``: manual grades, comments, extension) when it is there. Returns its URL."""
    from nbgrader.api import Gradebook

    (scratch / "gradebook.db").write_bytes(template)
    db_url = f"sqlite:///{scratch / 'gradebook.db'}"
    if prior is not None:
        with Gradebook(db_url) as gb:
            standings.seed(gb, prior)
    return db_url


def _keep_confirmed_answers(folder, db_url, job):
    import nbformat
    from nbgrader.api import Gradebook

    nb = nbformat.read(folder / f"{job.lesson}.ipynb", as_version=4)
    with Gradebook(db_url) as gb:
        standings.keep_confirmed_answers(gb, nb, job.lesson, job.student, job.prior, job.answered)


def read_back(result, folder, db_url, job):
    """Fill ``result`` from the scratch gradebook's scores and the notebook's notes and verdicts."""
    import nbformat
    from nbgrader.api import Gradebook

    nb = nbformat.read(folder / f"{job.lesson}.ipynb", as_version=4)
    notes_path = folder / NOTES_FILE
    notes = NotebookNotes.from_dict(json.loads(notes_path.read_text())) if notes_path.exists() else NotebookNotes()
    result.notes = notes.as_dict()
    result.flags = [Flag.from_dict(f) for f in notes.flags]
    result.sandboxed = notes.sandbox is not None
    with Gradebook(db_url) as gb:
        submission = gb.find_submission_notebook(job.lesson, job.lesson, job.student)
        grades = {g.name: g for g in submission.grades}
        result.timestamp = str(gb.find_submission(job.lesson, job.student).timestamp or "") or None
        result.checks = checks_of(nb, grades, notes)
    result.score = sum(c.points or 0.0 for c in result.checks)
    result.max_score = sum(c.max_points for c in result.checks)
    result.status = NEEDS_MANUAL if result.awaiting_manual else GRADED


def checks_of(nb, grades, notes):
    """One CheckResult per graded cell, in notebook order, named by exercise and check."""
    plan = CellPlan(nb.cells)
    checks = []
    for index, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        grade = grades.get(gid)
        if grade is None:
            continue
        written = is_written_answer(cell)
        verdict = notes.verdicts.get(gid)
        verdict = Verdict.from_dict(verdict) if verdict else None
        if grade.needs_manual_grade and grade.manual_score is None:
            status, points = CHECK_AWAITING, None
        else:
            points = grade.score
            status = CHECK_PASSED if points is not None and points >= grade.max_score else CHECK_FAILED
        message = verdict.message if verdict else _error_text(cell)
        checks.append(CheckResult(
            grade_id=gid, exercise=None if written else plan.owner.get(index),
            kind="written" if written else ("hidden" if index in plan.hidden else "code"),
            max_points=float(grade.max_score), points=points, status=status,
            message="" if status == CHECK_PASSED else message,
            diagnosis=verdict.diagnosis if verdict else None))
    return checks


def _error_text(cell):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"[:500]
    return ""


# ------------------------------------------------------------------ feedback

def render_feedback(scratch, db_url, job, config):
    """Stock nbgrader ``GenerateFeedback`` (the course's feedback steps) in the scratch course
    ``scratch``, whose gradebook holds the submission's grades; returns ({file: bytes} of what a
    learner may receive, the digest of the standing it was rendered from)."""
    from nbgrader.api import Gradebook
    from nbgrader.converters import GenerateFeedback

    from ..store.pages import learner_files

    _, coursedir = coursedir_for(config, scratch, db_url, job.lesson, job.student)
    feedback = GenerateFeedback(coursedir=coursedir, config=config)
    feedback.force = True
    buffer = _capture(feedback, f"attention-feedback.{job.student}.{job.lesson}")
    try:
        feedback.start()
    except Exception as exc:
        raise RuntimeError(failure_message(exc, buffer.getvalue())) from None
    with Gradebook(db_url) as gb:
        digest = standings.read(gb, job.lesson, job.student).digest()
    return learner_files(scratch / "feedback" / job.student / job.lesson, job.lesson), digest


@dataclass
class FeedbackJob:
    """Render a graded submission's feedback again (its grades or comments changed)."""
    student: str
    lesson: str
    autograded: dict               # {relative path: bytes} of autograded/<student>/<lesson>/
    template: bytes                # a SQLite gradebook holding only this lesson
    standing: object               # standing.Standing in the course gradebook
    config: object

    @property
    def key(self):
        return self.student, self.lesson

    def failure(self, message, retry=True):
        return FeedbackOutcome(False, message=message, retry=retry)


@dataclass
class FeedbackOutcome:
    ok: bool
    feedback: dict[str, bytes] = field(default_factory=dict)   # {file name: bytes}
    digest: str = ""               # the standing.Standing digest the page was rendered from
    message: str = ""
    seconds: float = 0.0
    retry: bool = True


def run_feedback(job):
    """The feedback page of one graded submission, in a scratch course; never raises."""
    started = time.time()
    scratch = Path(tempfile.mkdtemp(prefix="attention-feedback-"))
    try:
        folder = scratch / "autograded" / job.student / job.lesson
        for name, data in job.autograded.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        db_url = _scratch_gradebook(scratch, job.template, job.standing)
        config, _ = coursedir_for(job.config, scratch, db_url, job.lesson, job.student)
        files, digest = render_feedback(scratch, db_url, job, config)
        return FeedbackOutcome(True, files, digest, seconds=time.time() - started)
    except Exception as exc:
        return FeedbackOutcome(False, message=failure_message(exc, ""), seconds=time.time() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
