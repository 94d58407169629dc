"""Publish: what ``make grade`` makes of the gradebook once the grades are stored.

The late penalties of the selected submissions not graded now follow their current grades, due
dates and extensions (``store.grades.late_penalty``: a manual grade or an extension since); every
feedback page not made from its submission's current standing is rendered, once, by feedback jobs
on the run's workers (``run.feedback_jobs``: each carries what its page shows of the grades,
``PageJobs``), most of them beside the grading, as each submission is stored (``PagesBeside``); then ``grades.csv`` and ``grades-by-learner.csv``
for the whole class (the course's nbgrader export plugin, ``export``), the table of what was
selected and the report.
"""
import time
from collections import deque

from ..course import NBGRADER_FILES
from ..results import UNGRADABLE
from ..run.feedback_jobs import FeedbackJob, run_feedback
from ..run.lock import deferred_interrupt
from ..store import gradebook as books
from ..store import grades
from ..store import pages
from ..store import standing as standings
from ..store.page_grades import LessonMaxima, page_grades
from ..store.grades_table import format_table
from . import publish_history
from .progress import progress


def refresh(run, course, chosen, feedback, rerender):
    """The late penalty of every selected submission not graded in this run, again; returns the
    submissions whose feedback page is not made from their current grades and comments (all,
    with ``rerender``), with their standing."""
    from nbgrader.api import Gradebook

    renderer, stale = pages.renderer_digest(), []
    graded_now = set(run.graded)
    with Gradebook(course.db_url, course.course_id) as gb:
        in_gradebook = grades.penalties_to_reassess(gb, {u.lesson for u in chosen})
        for u in chosen:
            key = u.student, u.lesson
            notebook = course.autograded(u.student, u.lesson) / f"{u.lesson}.ipynb"
            if not notebook.is_file() or (key in run.failed and not _grade_stands(course, key)):
                continue
            if key in run.pages:               # rendered beside grading, once stored
                continue
            if key not in graded_now:          # its penalty was set as its grades were stored
                if key not in in_gradebook:    # graded into another gradebook
                    continue
                if in_gradebook[key]:          # late, or penalised before: nbgrader's step decides
                    with deferred_interrupt():
                        try:
                            grades.late_penalty(gb, course.config, u.lesson, u.student)
                        except Exception:
                            gb.db.rollback()
                            continue
            if not feedback:
                continue
            started = time.process_time()
            now = standings.read(gb, u.lesson, u.student)
            digest = pages.page_digest(now.digest(), notebook.read_bytes(), renderer)
            if rerender or pages.recorded(course.root, u.student, u.lesson) != digest:
                stale.append((u, now))
            else:
                run.feedback_current += 1
            run.feedback_cpu += time.process_time() - started
    return stale


def _grade_stands(course, key):
    """An earlier attempt's grade stands although this one could not be graded."""
    result = books.load_result(course.root, *key)
    return result is not None and result.status != UNGRADABLE


class PageJobs:
    """The feedback jobs of a run and what becomes of them: each job carries what its page shows
    of the submission's grades (``store.page_grades``), read here from the course gradebook as it
    stands, and the page is recorded with the digest of that standing (``store.pages``)."""

    def __init__(self, run, course):
        self.run, self.course = run, course
        self.renderer, self.maxima, self.digests = pages.renderer_digest(), LessonMaxima(), {}

    def job(self, gb, student, lesson, now):
        """The feedback job of ``student``'s ``lesson`` whose standing in ``gb`` is ``now``."""
        folder = self.course.autograded(student, lesson)
        files = {name: (folder / name).read_bytes() for name in (f"{lesson}.ipynb", *NBGRADER_FILES)
                 if (folder / name).is_file()}
        self.digests[student, lesson] = pages.page_digest(now.digest(), files[f"{lesson}.ipynb"], self.renderer)
        return FeedbackJob(student, lesson, files, page_grades(now, self.maxima(gb, lesson), lesson),
                           self.course.config)

    def keep(self, job, outcome, report=None):
        """Write a rendered page; a failure is reported through ``report`` (None: left for the
        stale pages after grading, which render it again)."""
        run, digest = self.run, self.digests.pop(job.key, None)
        if not outcome.ok or digest is None:
            if report is not None:
                run.feedback_failures.append((job.student, job.lesson, outcome.message))
                report(f"[feedback failed] {job.student} / {job.lesson}: {outcome.message}")
            return
        with deferred_interrupt():
            pages.write(self.course.root, job.student, job.lesson, outcome.feedback, digest)
            publish_history.keep_page(self.course.root, job.student, job.lesson, outcome.feedback)
        run.feedback_written += 1
        run.pages.add(job.key)


class PagesBeside:
    """Feedback pages rendered beside the grading: a submission's page job joins the run's jobs
    as soon as the submission is stored (``stored``), ahead of the grading jobs still to start
    (``feed``), so that pages are rendered while other notebooks are graded rather than all after
    them. A page not rendered so (its job came after the last grading job was handed out, or it
    failed) is stale after grading and rendered then (``refresh``, ``render_pages``)."""

    def __init__(self, page_jobs, enabled):
        self.page_jobs, self.enabled, self.waiting, self.bar = page_jobs, enabled, deque(), None
        self.before_last_grading = set()

    def stored(self, gb, key, now):
        """``key`` was stored with the standing ``now``: queue its page."""
        if not self.enabled or now is None:
            return
        started = time.process_time()
        try:
            self.waiting.append(self.page_jobs.job(gb, *key, now))
        except Exception:                  # left for the stale pages after grading
            gb.db.rollback()
        else:
            if self.bar is not None:
                self.bar.total += 1
                self.bar.refresh()
        self.page_jobs.run.feedback_cpu += time.process_time() - started

    def feed(self, jobs):
        """``jobs`` (the grading jobs, planned as workers free up), each queued page first. The
        pages handed out before a grading job are counted in ``RunRecord.pages_beside``: each was
        begun before the last submission's grading (an order, not a timing)."""
        handed = []
        for job in jobs:
            while self.waiting:
                handed.append(self.waiting[0].key)
                yield self.waiting.popleft()
            self.before_last_grading = set(handed)
            yield job
        while self.waiting:
            yield self.waiting.popleft()

    def count(self):
        """How many pages written beside the grading were begun before its last job."""
        run = self.page_jobs.run
        run.pages_beside = len(self.before_last_grading & run.pages)

    def rendered(self, job, outcome):
        """Keep a page job's outcome (a failure is tried again after grading); never a reason to
        grade again."""
        started = time.process_time()
        self.page_jobs.keep(job, outcome)
        self.page_jobs.run.feedback_cpu += time.process_time() - started


def render_pages(run, course, stale, page_jobs, pools):
    """Feedback jobs for the pages whose grades or comments changed, on the run's workers."""
    from nbgrader.api import Gradebook

    started = time.process_time()
    with Gradebook(course.db_url, course.course_id) as gb:
        jobs = [page_jobs.job(gb, u.student, u.lesson, now) for u, now in stale]
    with progress(len(jobs), "feedback") as bar:
        for job, outcome in pools.get().run(run_feedback, jobs, bar):
            page_jobs.keep(job, outcome, bar.write)
    run.feedback_cpu += time.process_time() - started


def publish(run, course, report, students, log):
    """grades.csv and grades-by-learner.csv for the whole class (nbgrader's export plugin of the
    course), the table of what was selected, the report."""
    from nbgrader.api import Gradebook

    from .export import CourseGradesExport

    results = books.load_results(course.root)
    notes = {key: f"graded on a second attempt; the first failed: {why}"
             for key, why in run.second_attempts.items()}
    exporter = CourseGradesExport(config=course.config)
    exporter.log.setLevel("WARNING")
    with Gradebook(course.db_url, course.course_id) as gb:
        run.rows, run.lms_lessons = exporter.write(gb, course.root, run.problems, results, notes)
    for row in run.rows:
        if row["status"] == UNGRADABLE:
            run.failed.setdefault((row["student"], row["lesson"]), row["note"])
    run.students = list(dict.fromkeys(r["student"] for r in run.rows))
    shown = [r for r in run.rows if r["lesson"] in run.lessons and (not students or r["student"] in students)]
    if shown:
        log("")
        log(format_table(shown, run.lessons))
    if report and run.rows:
        try:
            from ..store.report import build_report

            where = build_report(course.root, course.lessons, run.rows, run.problems, list(results.values()),
                                 sandboxed=run.sandboxed)
            log(f"wrote the grading report: {where}")
        except Exception as exc:  # the report never hides the grades
            log(f"[warning] the grading report could not be written: {type(exc).__name__}: {exc}")
