"""``make grade``: autograde every submission in parallel, write feedback, grades.csv (also by
learner, for a learning-management system) and a report.

Usage: python -m attention_grading.grade [--root DIR] [--workers N] [--lesson ID ...]
                                         [--student ID ...] [--force] [--db-url URL]
                                         [--job-timeout SECONDS] [--unsandboxed]
                                         [--scheduler tcp://HOST:8786]
                                         [--no-feedback] [--no-report]

A submission passes through, in order: ``intake`` (what is in ``submitted/``), ``jobs`` (one
self-contained grading job per submission, run by ``pool`` workers, or with ``--scheduler`` by a
Dask cluster's workers (``cluster``): stock nbgrader ``Autograde`` with the course's
preprocessors, ``execute`` → ``verdicts`` → ``sanitize``, against a template gradebook),
``gradebook`` (the only writer of the course gradebook and of ``autograded/``), ``output``
(``grades.csv``, ``grades-by-learner.csv``, the table and the summary) and ``report``.
``submitted/`` is only ever read. The exit status is 1 when some submission could not be graded,
0 otherwise.
"""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import gradebook as books
from .cluster import ClusterLost, DaskCluster, DaskPool
from traitlets import Float, Int
from traitlets.config import Configurable

from .case_secret import course_secret
from .course import environment_tools_on_path, lesson_ids, load_config
from .errors import CourseError, GradebookError, SelectionError
from .intake import IntakeLimits, Problem, content_hash, scan, submission_files
from .jobs import FeedbackJob, GradingJob, run_feedback, run_job
from .output import class_rows, format_table, print_summary, write_grades, write_grades_by_learner
from .pool import LocalPool, run_with_second_attempt
from .results import UNGRADABLE
from .sandbox import support



class GradingRun(Configurable):
    """``make grade``'s own settings (``c.GradingRun.<name>``; its command-line flags override them)."""

    workers = Int(0, help="Grading processes on this machine (0: one per core).").tag(config=True)
    job_timeout = Float(900.0, help="Seconds one submission may take in all in make grade (its grading "
                        "process is killed past that; the notebook's own limit is "
                        "GuardedExecute.notebook_timeout).").tag(config=True)


@dataclass
class GradeRun:
    """What one ``make grade`` did (returned by ``grade``; the command line prints it)."""
    root: Path
    lessons: list
    students: list
    graded: list = field(default_factory=list)            # (student, lesson) graded now
    skipped: int = 0
    failed: dict = field(default_factory=dict)            # (student, lesson): why, class-wide
    problems: list = field(default_factory=list)          # intake.Problem
    rows: list = field(default_factory=list)              # grades.csv
    feedback_failures: list = field(default_factory=list)  # (student, lesson, why)
    second_attempts: dict = field(default_factory=dict)   # (student, lesson): why the first failed
    sandboxed: bool = True
    seconds: float = 0.0
    unit_seconds: list = field(default_factory=list)
    only_students: list = field(default_factory=list)     # --student filters (empty: everyone)
    cluster_lost: str = ""                                # why a Dask cluster stopped the run
    not_graded: list = field(default_factory=list)        # (student, lesson) left for the next run

    def selected(self, key):
        student, lesson = key
        return lesson in self.lessons and (not self.only_students or student in self.only_students)

    @property
    def failed_in_selection(self):
        return {key: why for key, why in self.failed.items() if self.selected(key)}


def _progress(total, desc):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="nb", dynamic_ncols=True, file=sys.stderr,
                disable=total == 0, smoothing=0.1)


def _save_log(root, key, text, attempt=1):
    folder = Path(root) / "grading-report" / "logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key[0]}__{key[1]}.attempt{attempt}.log").write_text(text)
    except OSError:
        pass


def _record_failure(root, result):
    """Remember why a submission could not be graded (grades.csv says so until it is graded)."""
    folder = Path(root) / "autograded" / result.student / result.lesson
    folder.mkdir(parents=True, exist_ok=True)
    (folder / books.RESULT_FILE).write_text(result.to_json())


def _select(all_lessons, lessons):
    if not lessons:
        return all_lessons
    unknown = [l for l in lessons if l not in all_lessons]
    if unknown:
        raise SelectionError(f"unknown lesson(s): {', '.join(unknown)} (lessons: {', '.join(all_lessons)})")
    return [l for l in all_lessons if l in lessons]


def grade(root=None, lessons=None, students=None, workers=None, force=False, db_url=None,
          feedback=True, report=True, job_timeout=None, unsandboxed=False, scheduler=None,
          log=print):
    """Grade what is selected; write the class's grades.csv and report; return a ``GradeRun``.
    ``workers``, ``job_timeout`` and ``scheduler`` (the address of a Dask scheduler whose workers
    grade instead of this machine) override the course's settings (``GradingRun``, ``DaskCluster``)."""
    from nbgrader.api import Gradebook

    from .paths import COURSE_ROOT

    t0 = time.time()
    root = Path(root or COURSE_ROOT).resolve()
    config = load_config(root)           # the course's nbgrader_config.py, read once for the whole run
    config.CourseDirectory.root = str(root)
    settings, cluster = GradingRun(config=config), DaskCluster(config=config)
    workers = workers or settings.workers or os.cpu_count() or 1
    job_timeout = job_timeout or settings.job_timeout
    scheduler = cluster.scheduler if scheduler is None else scheduler
    db_url = db_url or config.CourseDirectory.db_url
    course_id = config.CourseDirectory.course_id
    all_lessons = lesson_ids(root)
    lessons = _select(all_lessons, lessons)
    sandboxed = support.require(allow_unsandboxed=unsandboxed, warn=log)
    if not sandboxed:
        config.GuardedExecute.sandbox = False
    if not config.GuardedExecute.get("case_secret"):      # jobs grade in scratch courses of their own
        config.GuardedExecute.case_secret = course_secret(root)

    limits = IntakeLimits(config=config)
    units, problems = scan(root, all_lessons, limits=limits)    # the whole class, for grades.csv
    roster = sorted({u.student for u in units} | {p.student for p in problems if p.student})
    chosen = [u for u in units if u.lesson in lessons and (not students or u.student in students)]
    for problem in problems:
        if (problem.lesson in lessons or not problem.lesson) and (not students or problem.student in students):
            log(str(problem))
    run = GradeRun(root, lessons, roster, problems=problems, sandboxed=sandboxed, only_students=list(students or []))
    run.failed = {(p.student, p.lesson): p.message for p in problems if p.fatal}

    scratch = Path(tempfile.mkdtemp(prefix="attention-grade-"))
    local = LocalPool(workers, job_timeout)    # feedback runs here in any case
    pool = local
    try:
        books.ensure_assignments(root, config, db_url, lessons, scratch, log)
        stale = books.stored_test_mismatches(root, db_url, course_id, lessons)
        if stale:
            raise GradebookError("the gradebook's copy of these hidden tests differs from source/: " + "; ".join(
                f"{lesson}: {', '.join(cells)}" for lesson, cells in stale.items())
                + ". Nothing was graded. Store source/ again with `nbgrader generate_assignment <lesson> "
                "--force` (or `make release`), then grade.")
        lesson_hash = {l: hashlib.sha256((root / "source" / l / f"{l}.ipynb").read_bytes()).hexdigest()
                       for l in lessons}
        files = {(u.student, u.lesson): submission_files(u.notebook.parent, limits) for u in chosen}
        with Gradebook(db_url, course_id) as gb:
            todo = [u for u in chosen if force or not books.already_graded(
                root, gb, u.student, u.lesson, content_hash(files[u.student, u.lesson]), lesson_hash[u.lesson])]
        run.skipped = len(chosen) - len(todo)
        if run.skipped:
            log(f"{run.skipped} submission(s) already graded and unchanged: skipped (--force regrades them)")
        templates = {}
        if todo:
            empty = books.create_empty(db_url, course_id, scratch / "empty.db")
            for lesson in sorted({u.lesson for u in todo}):
                path = books.make_template(db_url, course_id, lesson, scratch / f"template-{lesson}.db", empty)
                templates[lesson] = Path(path).read_bytes()
        jobs = [GradingJob(u.student, u.lesson, files[u.student, u.lesson], templates[u.lesson], config,
                           content_hash(files[u.student, u.lesson]), lesson_hash[u.lesson]) for u in todo]
        if scheduler and jobs:
            pool = DaskPool(scheduler, job_timeout, sandboxed=sandboxed, log=log, settings=cluster)
        where = f" on the Dask cluster at {scheduler}" if pool is not local else ""
        log(f"grading {len(jobs)} submission(s) of {len(lessons)} lesson(s) with {pool.workers} worker(s){where}")

        def keep(job, outcome, attempt):
            """Save a job's outcome in the course; None, or why it could not be kept."""
            run.unit_seconds.append(outcome.result.seconds)
            if outcome.ok:
                try:
                    books.save_outcome(root, db_url, course_id, outcome)
                    run.graded.append(job.key)
                    return None
                except Exception as exc:
                    return f"could not save the grades: {type(exc).__name__}: {exc}"
            if outcome.log:
                _save_log(root, job.key, outcome.log, attempt)
            _record_failure(root, outcome.result)
            return outcome.message or "autograde failed"

        turned_down = {}
        with _progress(len(jobs), "autograde") as bar:
            try:
                turned_down, run.second_attempts = run_with_second_attempt(pool, run_job, jobs, bar, keep)
            except ClusterLost as exc:
                run.cluster_lost = str(exc)
                run.not_graded = [job.key for job in jobs if job.key not in run.graded]
        for (student, lesson), message in turned_down.items():
            run.failed[student, lesson] = message
            problem = Problem(student, lesson, f"submitted/{student}/{lesson}/{lesson}.ipynb",
                              f"autograde failed: {message}")
            problems.append(problem)
            log(str(problem))
        if feedback:
            _feedback(run, root, db_url, config, chosen, force, local)
    finally:
        if pool is not local:
            pool.close()
        local.close()
        shutil.rmtree(scratch, ignore_errors=True)

    _write_class_files(run, root, db_url, course_id, all_lessons, report, log, students)
    run.seconds = time.time() - t0
    print_summary(run, log)
    return run


def _feedback(run, root, db_url, config, chosen, force, pool):
    """Stock GenerateFeedback for what was graded now, or has no feedback yet."""
    def wanted(u):
        key = (u.student, u.lesson)
        missing = not (root / "feedback" / u.student / u.lesson / f"{u.lesson}.html").is_file()
        graded = (root / "autograded" / u.student / u.lesson / f"{u.lesson}.ipynb").is_file()
        return key not in run.failed and graded and (key in run.graded or force or missing)

    jobs = [FeedbackJob(u.student, u.lesson, str(root), db_url, config) for u in chosen if wanted(u)]
    for job in jobs:
        (root / "feedback" / job.student).mkdir(parents=True, exist_ok=True)
    with _progress(len(jobs), "feedback") as bar:
        for job, outcome in pool.run(run_feedback, jobs, bar):
            if not outcome.ok:
                run.feedback_failures.append((job.student, job.lesson, outcome.message))
                bar.write(f"[feedback failed] {job.student} / {job.lesson}: {outcome.message}")


def _write_class_files(run, root, db_url, course_id, all_lessons, report, log, students):
    """grades.csv and grades-by-learner.csv for the whole class, the table of what was selected,
    the report."""
    from nbgrader.api import Gradebook

    results = {}
    for student in run.students:
        for lesson in all_lessons:
            result = books.load_result(root, student, lesson)
            if result is not None:
                results[student, lesson] = result
    for key, result in results.items():      # failures recorded by earlier runs, still standing
        if result.status == UNGRADABLE and key not in run.graded:
            run.failed.setdefault(key, result.failure or "could not be graded")
    with Gradebook(db_url, course_id) as gb:
        scores, maxima = books.collect_scores(gb, all_lessons, run.students)
    notes = {key: f"graded on a second attempt; the first failed: {why}"
             for key, why in run.second_attempts.items()}
    run.rows = write_grades(root / "grades.csv", class_rows(all_lessons, run.students, scores, maxima,
                                                            run.failed, notes))
    write_grades_by_learner(root / "grades-by-learner.csv", run.rows, all_lessons)
    shown = [r for r in run.rows if r["lesson"] in run.lessons and (not students or r["student"] in students)]
    if shown:
        log("")
        log(format_table(shown, run.lessons))
    if report and run.rows:
        try:
            from .report import build_report

            where = build_report(root, all_lessons, run.rows, run.problems, list(results.values()),
                                 sandboxed=run.sandboxed)
            log(f"wrote the grading report: {where}")
        except Exception as exc:  # the report never hides the grades
            log(f"[warning] the grading report could not be written: {type(exc).__name__}: {exc}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="course folder (default: this course)")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel graders (default: c.GradingRun.workers, else the number of cores)")
    parser.add_argument("--lesson", action="append", default=None, help="grade only this lesson (repeatable)")
    parser.add_argument("--student", action="append", default=None, help="grade only this student (repeatable)")
    parser.add_argument("--force", action="store_true", help="regrade what is already graded")
    parser.add_argument("--db-url", default=None, help="gradebook URL (default: nbgrader_config's db_url)")
    parser.add_argument("--job-timeout", type=float, default=None,
                        help="seconds one submission may take in all (default: c.GradingRun.job_timeout, 900)")
    parser.add_argument("--unsandboxed", action="store_true",
                        help="grade even where kernels cannot be sandboxed (learner code then runs with "
                             "your rights: only for submissions you trust)")
    parser.add_argument("--scheduler", default=None,
                        help="grade on the workers of the Dask scheduler at this address, e.g. "
                             "tcp://HOST:8786 (default: c.DaskCluster.scheduler, which nbgrader_config.py "
                             "reads from ATTENTION_DASK_SCHEDULER; else this machine)")
    parser.add_argument("--no-feedback", action="store_true", help="skip generate_feedback")
    parser.add_argument("--no-report", action="store_true", help="skip grading-report/")
    args = parser.parse_args(argv)
    import warnings

    environment_tools_on_path()
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    try:
        run = grade(args.root, args.lesson, args.student, args.workers, args.force, args.db_url,
                    feedback=not args.no_feedback, report=not args.no_report, job_timeout=args.job_timeout,
                    unsandboxed=args.unsandboxed, scheduler=args.scheduler)
    except CourseError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_status
    if run.cluster_lost:
        print(f"exit status 1: the cluster went away: {run.cluster_lost}", file=sys.stderr)
        return 1
    if run.failed_in_selection or run.feedback_failures:
        print("exit status 1: not everything could be graded (see above).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
