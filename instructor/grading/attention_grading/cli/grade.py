"""``make grade``: autograde every submission in parallel, write feedback, grades.csv (also by
learner, for a learning-management system) and a report.

Usage: python -m attention_grading.cli.grade [--root DIR] [--workers N] [--lesson ID ...]
                                         [--student ID ...] [--force] [--db-url URL]
                                         [--job-timeout SECONDS] [--unsandboxed]
                                         [--scheduler tls://HOST:8786] [--insecure-cluster]
                                         [--feedback-only] [--new-gradebook] [--wait]
                                         [--no-feedback] [--no-report]

A run reads top to bottom, data flowing one way (docs/architecture.md):

- plan (``run.plan``): what is in ``submitted/`` (``run.intake``), what is graded already (content
  hashes), one self-contained job per submission (``run.jobs.GradingJob``);
- run: the jobs on ``run.pool`` workers, or with ``--scheduler`` on a Dask cluster's workers
  (``run.cluster``): the course's steps applied to each notebook (``run.autograde``), no gradebook;
  each returns its autograded notebook and verdicts;
- store (``store.gradebook.save``, the only writer of the course gradebook and ``autograded/``):
  the scores, kept manual grades and late penalty of each submission, in one function
  (``store.grades.apply``);
- publish (``publish``): the penalties of the others follow manual grades and extensions, every
  stale feedback page is rendered once, by feedback jobs on the same workers, from what the
  gradebook holds; then ``grades.csv`` and ``grades-by-learner.csv`` (``export``, nbgrader's export
  plugin), the table and summary (``store.grades_table``), the report (``store.report``).

``submitted/`` is only ever read. One run at a time holds a course (``run.lock``); a SQLite
gradebook is copied before each run that nothing refused (``run.backups``); every attempt is kept
and each run's changes are printed and saved (``store.history``, ``publish_history``);
Ctrl-C stops after the save in progress and writes what was saved. Exit status: 0, or 1 when
some submission could not be graded, 2 for an unknown lesson or student, 75 when another run
holds the course, 130 after Ctrl-C.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from traitlets import Float, Int
from traitlets.config import Configurable

from ..course import environment_tools_on_path
from ..errors import CourseError
from ..run.backups import GradebookBackup, check_gradebook
from ..run.cluster import ClusterLost, DaskCluster, DaskPool, check_address
from ..run.cluster_tls import ClusterTLS
from ..run.intake import Problem, scan
from ..run.feedback_jobs import FeedbackJob, run_either
from ..run.jobs import run_job
from ..run.lock import course_lock, deferred_interrupt
from ..run.plan import check_students, open_course, plan, select_lessons
from ..run.pool import LocalPool, run_with_second_attempt
from ..store import gradebook as books
from ..store import roster as rosters
from ..store import indexes as gradebook_indexes
from ..store.grades_table import print_summary
from .progress import progress
from .run_record import RunRecord
from . import publish_history
from .publish import PageJobs, PagesBeside, publish, refresh, render_pages


class GradingRun(Configurable):
    """``make grade``'s own settings (``c.GradingRun.<name>``; its command-line flags override them)."""

    workers = Int(0, help="Grading processes on this machine (0: one per core).").tag(config=True)
    job_timeout = Float(900.0, help="Seconds one submission may take in all in make grade (its grading "
                        "process is killed past that; the notebook's own limit is "
                        "GuardedExecute.notebook_timeout).").tag(config=True)


def _save_log(root, key, text, attempt=1):
    folder = Path(root) / "grading-report" / "logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key[0]}__{key[1]}.attempt{attempt}.log").write_text(text)
    except OSError:
        pass


class _Pools:
    """The workers of a run, started when first needed: this machine's, or a Dask cluster's.
    ``workers``, ``job_timeout`` and ``scheduler`` override the course's settings (``GradingRun``,
    ``DaskCluster``); ``insecure_cluster`` accepts a ``tcp://`` scheduler. A scheduler address the
    course refuses is refused here, before anything is done."""

    def __init__(self, course, workers, job_timeout, scheduler, sandboxed, log, insecure_cluster=False):
        config = course.config
        settings, self.cluster = GradingRun(config=config), DaskCluster(config=config)
        workers = workers or settings.workers or os.cpu_count() or 1
        scheduler = self.cluster.scheduler if scheduler is None else scheduler
        self.cluster.insecure = self.cluster.insecure or insecure_cluster
        if scheduler:
            check_address(scheduler, self.cluster.insecure)
        self.tls_folder = ClusterTLS(config=config).path(course.root)
        self.args = workers, job_timeout or settings.job_timeout, scheduler, sandboxed, log
        self.pool = None

    def warm(self):
        """This machine's workers started now, beside the plan (``LocalPool.warm``)."""
        if not self.args[2]:
            self.get().warm()

    def get(self):
        if self.pool is None:
            workers, job_timeout, scheduler, sandboxed, log = self.args
            self.pool = (DaskPool(scheduler, job_timeout, sandboxed=sandboxed, log=log, settings=self.cluster,
                                  tls_folder=self.tls_folder)
                         if scheduler else LocalPool(workers, job_timeout))
        return self.pool

    def close(self, at_once=False):
        pool, self.pool = self.pool, None
        if pool is not None:
            (getattr(pool, "terminate", pool.close) if at_once else pool.close)()


def grade(root=None, lessons=None, students=None, workers=None, force=False, db_url=None,
          feedback=True, report=True, job_timeout=None, unsandboxed=False, scheduler=None,
          feedback_only=False, new_gradebook=False, wait=False, insecure_cluster=False, log=print):
    """Grade what is selected; write the class's grades.csv and report; return a ``RunRecord``.
    ``workers``, ``job_timeout`` and ``scheduler`` (the address of a Dask scheduler whose workers
    grade instead of this machine: ``tls://``, with the course's certificates) override the course's
    settings (``GradingRun``, ``DaskCluster``); ``insecure_cluster`` accepts a ``tcp://`` one;
    ``feedback_only``: grade nothing, only render the pages whose grades changed (``make
    feedback``); ``new_gradebook``: start a new gradebook although autograded/ holds results."""
    t0 = time.time()
    course, sandboxed = open_course(root, db_url, unsandboxed, log)
    lessons = select_lessons(course.lessons, lessons)
    pools = _Pools(course, workers, job_timeout, scheduler, sandboxed, log, insecure_cluster)
    with course_lock(course.root, wait, log):
        check_gradebook(course.db_url, course.course_id, course.root, allow_new=new_gradebook)
        if not feedback_only:
            pools.warm()
        run = _run(course, lessons, students, force, feedback, report, sandboxed, feedback_only, pools, log)
    run.seconds = time.time() - t0
    print_summary(run, log)
    return run


def _run(course, lessons, students, force, feedback, report, sandboxed, feedback_only, pools, log, narrow=False):
    """Plan, run, store and publish (inside the course's lock). ``narrow`` (the grading service):
    only the folders of ``students`` for ``lessons`` are read, no gradebook copy, no class-wide
    files (grades.csv, report, change log: the service writes them once its queue empties)."""
    from nbgrader.api import Gradebook

    # The whole class, for grades.csv; narrow: those learners' lessons alone.
    units, problems = scan(course.root, lessons if narrow else course.lessons, students if narrow else None,
                           limits=course.intake, only_theirs=narrow)
    with Gradebook(course.db_url, course.course_id) as gb:
        enrolled = rosters.enrolled(gb)
    # Accounts that handed in a lesson (a notebook to grade, or one that cannot be): the roster's business.
    submitted = {u.student for u in units} | {p.student for p in problems if p.student and p.lesson and p.fatal}
    decision = rosters.decide(course.config, course.root, enrolled, submitted)
    apart, roster = decision.apart, decision.roster
    off_roster = sorted({(u.student, u.lesson) for u in units if u.student in apart}
                        | {(p.student, p.lesson) for p in problems if p.student in apart})
    units = [u for u in units if u.student not in apart]
    problems = [p for p in problems if p.student not in apart]
    for line in decision.warnings(off_roster):
        log(line)
    check_students(students, roster)
    before = {} if narrow else publish_history.scores_before(course)     # for the change log
    # Nothing was refused: copy the gradebook before the run changes it (a run refused above makes none).
    backup = None if narrow else GradebookBackup(config=course.config).make(course.db_url)
    with Gradebook(course.db_url, course.course_id) as gb:
        gradebook_indexes.ensure(gb)           # an older gradebook gets them once (store.indexes)
    if decision.added and not decision.imported:    # no roster imported: whoever submitted is in the class
        rosters.enroll(course.root, course.db_url, course.course_id, decision.added)
    chosen = [u for u in units if u.lesson in lessons and (not students or u.student in students)]
    for problem in problems:
        if (problem.lesson in lessons or not problem.lesson) and (not students or problem.student in students):
            log(str(problem))
    run = RunRecord(course.root, lessons, roster, problems=problems, sandboxed=sandboxed,
                   only_students=list(students or []), feedback_only=feedback_only)
    run.failed = {(p.student, p.lesson): p.message for p in problems if p.fatal}
    run.backup, run.before, run.off_roster = backup, before, off_roster
    scratch, page_jobs = Path(tempfile.mkdtemp(prefix="attention-grade-")), PageJobs(run, course)
    try:
        if not feedback_only:
            beside = PagesBeside(page_jobs, feedback)       # each page rendered once its submission is stored
            try:
                _grade(run, course, plan(course, lessons, chosen, force, scratch, log), pools, beside, log)
            finally:
                beside.count()
        stale = refresh(run, course, chosen, feedback, force and feedback_only)
        if stale and not run.cluster_lost:
            render_pages(run, course, stale, page_jobs, pools)
    except KeyboardInterrupt:
        run.interrupted = True
        pools.close(at_once=True)
    except ClusterLost as exc:
        run.cluster_lost = str(exc)
    finally:
        pools.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if not narrow:
        publish(run, course, report, students, log)
        publish_history.log_changes(run, course, log)
    return run


def _grade(run, course, found, pools, beside, log):
    """Run the planned jobs, made one at a time as workers free up (``Plan.jobs``); store what
    each brings back as it comes, on one connection to the gradebook for the whole run; each
    stored submission's feedback page joins the jobs (``PagesBeside``)."""
    from nbgrader.api import Gradebook

    run.skipped = found.skipped
    if run.skipped:
        log(f"{run.skipped} submission(s) already graded and unchanged: skipped (--force regrades them)")
    pool = pools.get() if found.todo else None
    where = f" on the Dask cluster at {pools.args[2]}" if isinstance(pool, DaskPool) else ""
    log(f"grading {len(found.todo)} submission(s) of {len(run.lessons)} lesson(s) with "
        f"{pool.workers if pool else pools.args[0]} worker(s){where}")
    first_failures, graded = {}, set()

    def keep(job, outcome, attempt):
        """Save a job's outcome in the course; None, or why it could not be kept."""
        if isinstance(job, FeedbackJob):
            return beside.rendered(job, outcome)
        run.job_seconds[job.key] = outcome.result.seconds
        if not outcome.ok:
            if outcome.log:
                _save_log(course.root, job.key, outcome.log, attempt)
            entry = found.waiting.get(job.key)
            books.record_failure(course.root, outcome.result, entry.attempt if entry else None,
                                 job.files.get(f"{job.lesson}.ipynb"))
            first_failures.setdefault(job.key, outcome.message or "autograde failed")
            if attempt == 2 or not outcome.retry:
                found.stored(job.key)
            return outcome.message or "autograde failed"
        if attempt == 2 and job.key in first_failures:
            outcome.result.first_failure = first_failures[job.key]
        try:
            with deferred_interrupt():          # Ctrl-C waits for the save to end
                entry = found.waiting[job.key]
                now = books.save(course.root, course.db_url, course.course_id, outcome, course.config,
                                 entry.prior, entry.answered, gb=gb)
                run.graded.append(job.key)
                graded.add(job.key)
                found.stored(job.key)
                publish_history.keep_graded(run, course, job, outcome, entry.attempt, now)
                _note_manual(run, job.key, outcome.result)
            beside.stored(gb, job.key, now)
            return None
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            gb.db.rollback()
            return f"could not save the grades: {type(exc).__name__}: {exc}"

    turned_down = {}
    if found.todo:
        with Gradebook(course.db_url, course.course_id) as gb, progress(len(found.todo), "autograde") as bar:
            beside.bar = bar
            try:
                turned_down, run.second_attempts = run_with_second_attempt(
                    pool, partial(run_either, run_job), beside.feed(found.jobs(gb)), bar, keep)
            except (ClusterLost, KeyboardInterrupt) as exc:
                run.not_graded = [key for key in found.keys if key not in graded]
                if isinstance(exc, ClusterLost):
                    run.cluster_lost = str(exc)
                else:
                    raise
    why = {**{key: (message, message) for key, message in found.unrecorded.items()},
           **{key: (message, f"autograde failed: {message}") for key, message in turned_down.items()}}
    for (student, lesson), (message, said) in why.items():
        run.failed[student, lesson] = message
        problem = Problem(student, lesson, f"submitted/{student}/{lesson}/{lesson}.ipynb", said)
        run.problems.append(problem)
        log(str(problem))


def _note_manual(run, key, result):
    if result.kept_manual:
        run.kept_manual[key] = result.kept_manual
    if result.changed_manual:
        run.changed_manual[key] = result.changed_manual


def course_here(folder=None):
    """The course folder the grader was run in (nbgrader's rule: the current directory, holding
    an ``nbgrader_config.py``); else ``SelectionError`` (exit status 2) saying how to name one."""
    from ..errors import SelectionError

    folder = Path(folder or os.getcwd())
    if not (folder / "nbgrader_config.py").is_file():
        raise SelectionError(f"{folder} is not a course folder (it has no nbgrader_config.py): run the grader "
                             f"in the course's folder (make grade there), or name it with --course PATH. "
                             f"Nothing was done.")
    return folder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course", "--root", dest="root", default=None,
                        help="the course folder (default: the current directory, as nbgrader: it must hold "
                             "an nbgrader_config.py)")
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
                             "tls://HOST:8786 (default: c.DaskCluster.scheduler, which nbgrader_config.py "
                             "reads from ATTENTION_DASK_SCHEDULER; else this machine)")
    parser.add_argument("--insecure-cluster", action="store_true",
                        help="accept a tcp:// scheduler, neither authenticated nor encrypted (anyone who "
                             "reaches it can run code on its workers and forge grades)")
    parser.add_argument("--no-feedback", action="store_true", help="write no feedback pages")
    parser.add_argument("--feedback-only", action="store_true",
                        help="grade nothing: render again the feedback pages whose grades, comments or "
                             "penalties changed (make feedback); with --force, every selected page")
    parser.add_argument("--new-gradebook", action="store_true",
                        help="start a new gradebook although autograded/ holds grading results (every "
                             "submission is graded again; manual grades of the old one are not in it)")
    parser.add_argument("--wait", action="store_true",
                        help="if another make grade is running on this course, wait for it rather than stop")
    parser.add_argument("--no-report", action="store_true", help="skip grading-report/")
    args = parser.parse_args(argv)
    import warnings

    environment_tools_on_path()
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    try:
        root = args.root or course_here()
        run = grade(root, args.lesson, args.student, args.workers, args.force, args.db_url,
                    feedback=not args.no_feedback, report=not args.no_report, job_timeout=args.job_timeout,
                    unsandboxed=args.unsandboxed, scheduler=args.scheduler, feedback_only=args.feedback_only,
                    new_gradebook=args.new_gradebook, wait=args.wait, insecure_cluster=args.insecure_cluster)
    except CourseError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:            # before grading began, or while writing the class files
        print("\nstopped (Ctrl-C): what was saved is kept; run make grade again to go on.", file=sys.stderr)
        return 130
    if run.interrupted:
        print("exit status 130: stopped by Ctrl-C (see above).", file=sys.stderr)
        return 130
    if run.cluster_lost:
        print(f"exit status 1: the cluster went away: {run.cluster_lost}", file=sys.stderr)
        return 1
    if run.failed_in_selection or run.feedback_failures:
        print("exit status 1: not everything could be graded (see above).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
