"""One feedback job: a graded submission and its standing in the course gradebook in, its
feedback page out, rendered by stock nbgrader ``GenerateFeedback`` with the course's feedback steps.

Feedback is rendered once per page, after the store: from the autograded notebook and what the
course gradebook holds of the submission (``store.standing.Standing``: its grades, the
instructor's, comments, late penalty), carried as data and seeded into a small gradebook of the
lesson's (``store.lessons.make_template``) in a scratch course, since ``GenerateFeedback`` reads
its grades from a gradebook. It runs on the same workers as grading jobs (a pool's, or a Dask
cluster's); what it returns is plain data.

A worker makes the page's exporter (the course's ``FeedbackExporter`` with its feedback steps,
its Jinja template compiled) once per course configuration and keeps it (``_EXPORTERS``), rather
than once per page as ``GenerateFeedback.start`` does.
"""
import json
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..store import standing as standings
from .jobs import _capture, failure_message


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


SCRATCH_PREFIX = "attention-feedback-"
_EXPORTERS = {}      # per process: the course configuration (less its folders) -> its exporter
_LISTENING = []      # per process: the scratch gradebooks' SQLite setting, once registered


def _scratch_without_fsync():
    """A scratch gradebook is thrown away after its page: SQLite need not wait for the disk at
    each commit (in this worker, for the gradebooks in feedback jobs' scratch folders only)."""
    if _LISTENING:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def unsynchronised(dbapi_connection, record):
        if isinstance(dbapi_connection, sqlite3.Connection):
            files = [row[2] for row in dbapi_connection.execute("PRAGMA database_list")]
            if any(SCRATCH_PREFIX in (name or "") for name in files):
                dbapi_connection.execute("PRAGMA synchronous = OFF")

    _LISTENING.append(unsynchronised)
    event.listen(Engine, "connect", unsynchronised)


def _exporter(converter):
    """The feedback exporter of ``converter``'s configuration, made the first time it is needed
    in this process: every step and filter reads a page's own data from its resources."""
    settings = {name: value for name, value in converter.config.items() if name != "CourseDirectory"}
    key = json.dumps(settings, sort_keys=True, default=repr)
    if key not in _EXPORTERS:
        exporter = converter.exporter_class(config=converter.config)
        for step in converter.preprocessors:
            exporter.register_preprocessor(step)
        _EXPORTERS.clear()              # one course per worker at a time
        _EXPORTERS[key] = exporter
    return _EXPORTERS[key]


def _worker_feedback(coursedir, config):
    """Stock ``GenerateFeedback`` whose ``start`` takes this process's exporter."""
    import os

    from nbconvert.writers import FilesWriter
    from nbgrader.converters import GenerateFeedback

    class WorkerFeedback(GenerateFeedback):
        def start(self):
            self.init_notebooks()
            self.writer = FilesWriter(parent=self, config=self.config)
            self.exporter = _exporter(self)
            here = os.getcwd()
            os.chdir(self.coursedir.root)
            try:
                self.convert_notebooks()
            finally:
                os.chdir(here)

    return WorkerFeedback(coursedir=coursedir, config=config)


def render_feedback(scratch, db_url, job, config):
    """Stock nbgrader ``GenerateFeedback`` (the course's feedback steps) in the scratch course
    ``scratch``, whose gradebook holds the submission's grades; returns ({file: bytes} of what a
    learner may receive, the digest of the standing it was rendered from)."""
    from nbgrader.api import Gradebook

    from ..store.pages import learner_files

    _, coursedir = coursedir_for(config, scratch, db_url, job.lesson, job.student)
    feedback = _worker_feedback(coursedir, config)
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
    _scratch_without_fsync()
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
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
