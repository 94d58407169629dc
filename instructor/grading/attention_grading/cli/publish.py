"""Publish: what ``make grade`` makes of the gradebook once the grades are stored.

The late penalties of the selected submissions not graded now follow their current grades, due
dates and extensions (``store.grades.late_penalty``: a manual grade or an extension since); every
feedback page not made from its submission's current standing is rendered, once, by feedback jobs
on the run's workers (``run.feedback_jobs``); then ``grades.csv`` and ``grades-by-learner.csv``
for the whole class (the course's nbgrader export plugin, ``export``), the table of what was
selected and the report.
"""
import time

from ..course import NBGRADER_FILES
from ..results import UNGRADABLE
from ..run.feedback_jobs import FeedbackJob, run_feedback
from ..run.lock import deferred_interrupt
from ..store import gradebook as books
from ..store import grades
from ..store import pages
from ..store import standing as standings
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
        for u in chosen:
            key = u.student, u.lesson
            notebook = course.autograded(u.student, u.lesson) / f"{u.lesson}.ipynb"
            if not notebook.is_file() or (key in run.failed and not _grade_stands(course, key)):
                continue
            if key not in graded_now:          # its penalty was set as its grades were stored
                with deferred_interrupt():
                    try:
                        grades.late_penalty(gb, course.config, u.lesson, u.student)
                    except Exception:          # not in the gradebook (graded into another one)
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


def render_pages(run, course, stale, templates, pools):
    """Feedback jobs for the pages whose grades or comments changed, on the run's workers."""
    started = time.process_time()
    renderer = pages.renderer_digest()
    jobs, notebooks = [], {}
    for u, now in stale:
        folder = course.autograded(u.student, u.lesson)
        files = {name: (folder / name).read_bytes() for name in (f"{u.lesson}.ipynb", *NBGRADER_FILES)
                 if (folder / name).is_file()}
        notebooks[u.student, u.lesson] = files[f"{u.lesson}.ipynb"]
        jobs.append(FeedbackJob(u.student, u.lesson, files, templates(u.lesson), now, course.config))
    with progress(len(jobs), "feedback") as bar:
        for job, outcome in pools.get().run(run_feedback, jobs, bar):
            if not outcome.ok:
                run.feedback_failures.append((job.student, job.lesson, outcome.message))
                bar.write(f"[feedback failed] {job.student} / {job.lesson}: {outcome.message}")
                continue
            with deferred_interrupt():
                pages.write(course.root, job.student, job.lesson, outcome.feedback,
                            pages.page_digest(outcome.digest, notebooks[job.key], renderer))
                publish_history.keep_page(course.root, job.student, job.lesson, outcome.feedback)
            run.feedback_written += 1
            run.pages.add(job.key)
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
