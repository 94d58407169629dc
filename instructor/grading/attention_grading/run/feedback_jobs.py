"""One feedback job: a graded submission and what its page shows of its grades in, its feedback
page out, rendered by stock nbgrader ``GenerateFeedback`` with the course's feedback steps.

Feedback is rendered once per page, after the store: from the autograded notebook and what the
course gradebook holds of the submission, read once in the grader's process
(``store.page_grades``: each cell's score, points and comment, the notebook's score, maximum and
late penalty) and carried as data. The worker needs no gradebook: ``steps.given_grades.GivenGrades``
takes the place of nbgrader's ``GetGrades`` and writes those values where ``GetGrades`` writes
what it reads from one. It runs on the same workers as grading jobs (a pool's, or a Dask
cluster's), beside them (``run_either``); what it returns is plain data.

A worker makes the page's exporter (the course's ``FeedbackExporter`` with its feedback steps,
its Jinja template compiled) once per course configuration and keeps it (``_EXPORTERS``), rather
than once per page as ``GenerateFeedback.start`` does.
"""
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .jobs import _capture, failure_message

#: A feedback job's course has no gradebook: anything that tried to open one would fail here.
NO_GRADEBOOK = "sqlite:////nonexistent/a-feedback-job-has-no-gradebook.db"


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


SCRATCH_PREFIX = "attention-feedback-"
_EXPORTERS = {}      # per process: the course configuration (less its folders) -> its exporter


def _exporter(converter):
    """The feedback exporter of ``converter``'s configuration, made the first time it is needed
    in this process: every step and filter reads a page's own data from its resources. nbgrader's
    ``GetGrades`` is registered as ``GivenGrades``, which reads the grades the job carries."""
    from nbgrader.preprocessors import GetGrades
    from traitlets.utils.importstring import import_item

    from ..steps.given_grades import GivenGrades

    settings = {name: value for name, value in converter.config.items() if name != "CourseDirectory"}
    key = json.dumps(settings, sort_keys=True, default=repr)
    if key not in _EXPORTERS:
        exporter = converter.exporter_class(config=converter.config)
        for step in converter.preprocessors:        # classes, or their names (nbgrader_config.py)
            named = import_item(step) if isinstance(step, str) else step
            exporter.register_preprocessor(GivenGrades if named is GetGrades else step)
        _EXPORTERS.clear()              # one course per worker at a time
        _EXPORTERS[key] = exporter
    return _EXPORTERS[key]


def _worker_feedback(coursedir, config, grades):
    """Stock ``GenerateFeedback`` whose ``start`` takes this process's exporter, and whose pages'
    resources carry ``grades`` (``steps.given_grades.GIVEN``)."""
    import os

    from nbconvert.writers import FilesWriter
    from nbgrader.converters import GenerateFeedback

    from ..steps.given_grades import GIVEN

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

        def init_single_notebook_resources(self, notebook_filename):
            resources = super().init_single_notebook_resources(notebook_filename)
            resources["nbgrader"][GIVEN] = grades
            return resources

    return WorkerFeedback(coursedir=coursedir, config=config)


def render_feedback(scratch, job, config):
    """Stock nbgrader ``GenerateFeedback`` (the course's feedback steps) in the scratch course
    ``scratch``, with the grades the job carries; returns {file: bytes} of what a learner may
    receive."""
    from ..store.pages import learner_files

    _, coursedir = coursedir_for(config, scratch, NO_GRADEBOOK, job.lesson, job.student)
    feedback = _worker_feedback(coursedir, config, job.grades)
    feedback.force = True
    buffer = _capture(feedback, f"attention-feedback.{job.student}.{job.lesson}")
    try:
        feedback.start()
    except Exception as exc:
        raise RuntimeError(failure_message(exc, buffer.getvalue())) from None
    return learner_files(scratch / "feedback" / job.student / job.lesson, job.lesson)


@dataclass
class FeedbackJob:
    """Render a graded submission's feedback page (once it is stored, or its grades changed)."""
    student: str
    lesson: str
    autograded: dict               # {relative path: bytes} of autograded/<student>/<lesson>/
    grades: dict                   # store.page_grades.page_grades: what the page shows of its grades
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
    message: str = ""
    seconds: float = 0.0
    retry: bool = True


def run_feedback(job):
    """The feedback page of one graded submission, in a scratch course; never raises."""
    started = time.time()
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    try:
        folder = scratch / "autograded" / job.student / job.lesson
        for name, data in job.autograded.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        config, _ = coursedir_for(job.config, scratch, NO_GRADEBOOK, job.lesson, job.student)
        files = render_feedback(scratch, job, config)
        return FeedbackOutcome(True, files, seconds=time.time() - started)
    except Exception as exc:
        return FeedbackOutcome(False, message=failure_message(exc, ""), seconds=time.time() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_either(grading, job):
    """A feedback job's outcome, or ``grading(job)`` (``run.jobs.run_job``) for a grading job: one
    function for a pool that runs both (as ``functools.partial(run_either, run_job)``)."""
    return run_feedback(job) if isinstance(job, FeedbackJob) else grading(job)
