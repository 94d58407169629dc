"""One grading job: a submission in; its autograded notebook, the files nbgrader keeps beside
it, and its verdicts out.

A job carries all it needs as data (the submission's files, the lesson's own files and source
notebook, the lesson's cells as the gradebook holds them, the attempt's case key, the course's
nbgrader configuration) and touches nothing of the course: the worker applies the course's
steps to the notebook in a scratch folder (``autograde``: restore, the guarded execution,
sanitising, the verdicts shown), with no gradebook and no nbgrader converter. The verdicts it
returns (in ``GradingResult.notes``) are the scores of the test cells; the store writes them
(``store.gradebook.save``), the only writer of the course's gradebook and folders, so that a job
can run on any machine with the course environment. What a job returns is plain data.
"""
import io
import logging
import re
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..results import GRADED, UNGRADABLE, Flag, GradingResult, NotebookNotes


@dataclass
class GradingJob:
    student: str
    lesson: str
    files: dict                    # {path relative to the submission folder: bytes}
    lesson_cells: object           # store.lessons.LessonCells: the lesson's cells as the gradebook holds them
    config: object                 # the course's traitlets Config (nbgrader_config.py)
    submission_sha256: str = ""
    lesson_sha256: str = ""
    lesson_source: bytes = b""     # source/<lesson>/<lesson>.ipynb: which cells are the lesson's own
    lesson_files: dict = field(default_factory=dict)   # the lesson's other files in source/ (Autograde copies them)
    case_key: str = ""             # the key of the submission's attempt (cases.case_key): its hidden cases

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
    """What a worker hands back: the result (its notes hold every verdict; the store adds the
    checks) and, on success, the autograded folder's files.

    From a Dask worker it travels in ``wire`` form (JSON and file bytes, never a pickle): give a new
    field a type (``dict[str, bytes]`` for files) and it travels with no other change."""
    result: GradingResult
    ok: bool
    autograded: dict[str, bytes] = field(default_factory=dict)   # {relative path: bytes}
    log: str = ""                  # the steps' log and traceback, when it failed
    retry: bool = True             # worth a second attempt if it failed

    @property
    def message(self):
        return self.result.failure or ""


def _capture(obj, name):
    """Send ``obj``'s log to a string buffer; returns the buffer."""
    buffer = io.StringIO()
    obj.log = _logger(buffer, name)
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


def submission_time(files, student, lesson):
    """The submission's time as nbgrader reads it from ``timestamp.txt`` (text, or None)."""
    from nbgrader.utils import parse_utc

    text = files.get("timestamp.txt", b"").decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        return str(parse_utc(text))
    except ValueError:
        raise ValueError(f"Invalid timestamp string: submitted/{student}/{lesson}/timestamp.txt") from None


def run_job(job):
    """Autograde one submission in a scratch folder; never raises (a failure is in the outcome)."""
    import copy

    from .autograde import autograde

    started = time.time()
    result = GradingResult(job.student, job.lesson, status=GRADED, submission_sha256=job.submission_sha256,
                           lesson_sha256=job.lesson_sha256)
    scratch = Path(tempfile.mkdtemp(prefix="attention-job-"))
    buffer = io.StringIO()
    try:
        result.timestamp = submission_time(job.files, job.student, job.lesson)
        (scratch / "source" / job.lesson).mkdir(parents=True)
        if job.lesson_source:        # GuardedExecute draws the figures of the cells that are not in it
            (scratch / "source" / job.lesson / f"{job.lesson}.ipynb").write_bytes(job.lesson_source)
        config = copy.deepcopy(job.config)
        config.CourseDirectory.root = str(scratch)
        if job.case_key:              # the attempt was recorded in the course, not in this scratch copy
            config.GuardedExecute.case_key = job.case_key
        log = _logger(buffer, f"attention-grade.{job.student}.{job.lesson}")
        notebook = job.files[f"{job.lesson}.ipynb"].decode("utf-8")
        others = {name: data for name, data in job.files.items() if name != f"{job.lesson}.ipynb"}
        files, notes = autograde(notebook, job.student, job.lesson, scratch, others, job.lesson_files,
                                 job.lesson_cells.book(), config, log)
        result.notes = notes
        result.flags = [Flag.from_dict(f) for f in NotebookNotes.from_dict(notes).flags]
        result.sandboxed = notes.get("sandbox") is not None
        result.seconds = time.time() - started
        return JobOutcome(result, True, files)
    except Exception as exc:
        text = buffer.getvalue()
        result.status, result.failure = UNGRADABLE, failure_message(exc, text)
        result.seconds = time.time() - started
        return JobOutcome(result, False, log=(text + "\n" + traceback.format_exc())[-6000:])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _logger(buffer, name):
    """A logger writing to ``buffer`` (the steps' warnings and errors, for a failure's message)."""
    logger = logging.getLogger(name)
    logger.handlers[:] = [logging.StreamHandler(buffer)]
    logger.handlers[0].setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger
