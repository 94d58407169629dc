"""``make grade``: autograde every submission in parallel, write feedback, grades.csv (also by
learner, for a learning-management system) and a report.

Usage: python -m attention_grading.cli.grade [--root DIR] [--workers N] [--lesson ID ...]
                                         [--student ID ...] [--force] [--db-url URL]
                                         [--job-timeout SECONDS] [--unsandboxed]
                                         [--scheduler tls://HOST:8786] [--insecure-cluster]
                                         [--feedback-only] [--new-gradebook] [--wait]
                                         [--no-feedback] [--no-report]

A run reads top to bottom: plan (``intake``: what is in ``submitted/``; what is graded already,
from content hashes; one self-contained job per submission, ``jobs``), run (the jobs on ``pool``
workers, or with ``--scheduler`` on a Dask cluster's workers, ``cluster``: stock nbgrader
``Autograde`` with the course's preprocessors, then the feedback page with stock
``GenerateFeedback``), store (``gradebook``: the only writer of the course gradebook, of
``autograded/`` and, through ``pages``, of ``feedback/``; late penalties follow the current grades
and due dates; pages whose grades or comments changed are rendered again, by jobs too), publish
(``export``, nbgrader's export plugin: ``grades.csv`` and ``grades-by-learner.csv``; the table
and summary of ``output``; ``report``). ``submitted/`` is only ever read.

One run at a time holds a course (``safekeeping``); a SQLite gradebook is copied before each run;
Ctrl-C stops after the save in progress and writes what was saved. Exit status: 0, or 1 when
some submission could not be graded, 2 for an unknown lesson or student, 75 when another run
holds the course, 130 after Ctrl-C.
"""
import argparse
import difflib
import hashlib
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..store import gradebook as books
from ..store import pages
from ..run import safekeeping
from ..store import standing as standings
from ..run.cluster import ClusterLost, DaskCluster, DaskPool, check_address
from ..run.cluster_tls import ClusterTLS
from traitlets import Float, Int
from traitlets.config import Configurable

from ..hidden.attempts import AttemptLedger, LedgerError, handed_in_digest
from ..hidden.cases import course_secret
from ..course import NBGRADER_FILES, environment_tools_on_path, lesson_ids, load_config
from ..errors import CourseError, GradebookError, SelectionError
from ..run.intake import IntakeLimits, Problem, content_hash, scan, submission_files
from ..run.jobs import FeedbackJob, GradingJob, run_feedback, run_job
from ..store.grades_table import format_table, print_summary
from ..run.pool import LocalPool, run_with_second_attempt
from ..results import UNGRADABLE
from ..kernels.sandbox import support

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
    lms_lessons: list = field(default_factory=list)       # the lessons of grades-by-learner.csv
    feedback_failures: list = field(default_factory=list)  # (student, lesson, why)
    feedback_written: int = 0                             # pages written now
    feedback_current: int = 0                             # pages already made from today's grades
    pages: set = field(default_factory=set)               # (student, lesson) whose page was written now
    feedback_cpu: float = 0.0                             # this process's CPU seconds on feedback pages
    second_attempts: dict = field(default_factory=dict)   # (student, lesson): why the first failed
    kept_manual: dict = field(default_factory=dict)       # (student, lesson): written answers kept
    changed_manual: dict = field(default_factory=dict)    # (student, lesson): answers to confirm
    sandboxed: bool = True
    seconds: float = 0.0
    job_seconds: dict = field(default_factory=dict)       # (student, lesson): its last attempt's seconds
    only_students: list = field(default_factory=list)     # --student filters (empty: everyone)
    cluster_lost: str = ""                                # why a Dask cluster stopped the run
    not_graded: list = field(default_factory=list)        # (student, lesson) left for the next run
    interrupted: bool = False                             # Ctrl-C
    backup: Path = None                                   # the copy of the gradebook made first
    feedback_only: bool = False

    def selected(self, key):
        student, lesson = key
        return lesson in self.lessons and (not self.only_students or student in self.only_students)

    @property
    def failed_in_selection(self):
        return {key: why for key, why in self.failed.items() if self.selected(key)}


@dataclass
class Course:
    """The course a run works on, read once: its folder, nbgrader configuration and gradebook."""
    root: Path
    config: object
    db_url: str
    course_id: str
    lessons: list                  # every lesson, in course order
    intake: IntakeLimits           # what a learner's files may be, read from the configuration

    def autograded(self, student, lesson):
        return self.root / "autograded" / student / lesson


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


def _check_students(students, known):
    """Every ``--student`` is a learner of the course; else ``SelectionError`` naming the nearest."""
    unknown = [s for s in students or [] if s not in known]
    if not unknown:
        return
    hints = []
    for name in unknown:
        near = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
        hints.append(f"{name} (did you mean {' or '.join(near)}?)" if near else f"{name} (no learner of a similar name)")
    raise SelectionError(f"unknown student(s): {'; '.join(hints)}. Nothing was done. The learners are those "
                         f"with a folder in submitted/ or in the gradebook ({len(known)}).")


def open_course(root, db_url, unsandboxed, log):
    """The ``Course`` at ``root``, and whether its kernels will be sandboxed."""
    from ..paths import COURSE_ROOT

    root = Path(root or COURSE_ROOT).resolve()
    config = load_config(root)           # the course's nbgrader_config.py, read once for the whole run
    config.CourseDirectory.root = str(root)
    db_url = db_url or config.CourseDirectory.db_url
    config.CourseDirectory.db_url = db_url
    sandboxed = support.require(allow_unsandboxed=unsandboxed, warn=log)
    if not sandboxed:
        config.GuardedExecute.sandbox = False
    if not config.GuardedExecute.get("case_secret"):      # jobs grade in scratch courses of their own
        config.GuardedExecute.case_secret = course_secret(root)
    return Course(root, config, db_url, config.CourseDirectory.course_id, lesson_ids(root),
                  IntakeLimits(config=config)), sandboxed


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
    """Grade what is selected; write the class's grades.csv and report; return a ``GradeRun``.
    ``workers``, ``job_timeout`` and ``scheduler`` (the address of a Dask scheduler whose workers
    grade instead of this machine: ``tls://``, with the course's certificates) override the course's
    settings (``GradingRun``, ``DaskCluster``); ``insecure_cluster`` accepts a ``tcp://`` one;
    ``feedback_only``: grade nothing, only render the pages whose grades changed (``make
    feedback``); ``new_gradebook``: start a new gradebook although autograded/ holds results."""
    t0 = time.time()
    course, sandboxed = open_course(root, db_url, unsandboxed, log)
    lessons = _select(course.lessons, lessons)
    pools = _Pools(course, workers, job_timeout, scheduler, sandboxed, log, insecure_cluster)
    with safekeeping.course_lock(course.root, wait, log):
        safekeeping.check_gradebook(course.db_url, course.course_id, course.root, allow_new=new_gradebook)
        backup = safekeeping.GradebookBackup(config=course.config).make(course.db_url)
        run = _run(course, lessons, students, force, feedback, report, sandboxed, feedback_only, pools, log)
        run.backup = backup
    run.seconds = time.time() - t0
    print_summary(run, log)
    return run


def _run(course, lessons, students, force, feedback, report, sandboxed, feedback_only, pools, log):
    """Plan, run, store and publish (inside the course's lock)."""
    from nbgrader.api import Gradebook

    units, problems = scan(course.root, course.lessons, limits=course.intake)    # the whole class, for grades.csv
    with Gradebook(course.db_url, course.course_id) as gb:
        roster = sorted({u.student for u in units} | {p.student for p in problems if p.student}
                        | {s.id for s in gb.students})
    _check_students(students, roster)
    chosen = [u for u in units if u.lesson in lessons and (not students or u.student in students)]
    for problem in problems:
        if (problem.lesson in lessons or not problem.lesson) and (not students or problem.student in students):
            log(str(problem))
    run = GradeRun(course.root, lessons, roster, problems=problems, sandboxed=sandboxed,
                   only_students=list(students or []), feedback_only=feedback_only)
    run.failed = {(p.student, p.lesson): p.message for p in problems if p.fatal}
    scratch = Path(tempfile.mkdtemp(prefix="attention-grade-"))
    templates = _Templates(course, scratch)
    try:
        if not feedback_only:
            _grade(run, course, chosen, force, feedback, templates, pools, log)
        stale = _refresh_standings(run, course, chosen, feedback, force and feedback_only)
        if stale and not run.cluster_lost:
            _render_pages(run, course, stale, templates, pools)
    except KeyboardInterrupt:
        run.interrupted = True
        pools.close(at_once=True)
    except ClusterLost as exc:
        run.cluster_lost = str(exc)
    finally:
        pools.close()
        shutil.rmtree(scratch, ignore_errors=True)
    _publish(run, course, report, students, log)
    return run


class _Templates:
    """A template gradebook per lesson (the lesson only), made when a job first needs it."""

    def __init__(self, course, scratch):
        self.course, self.scratch, self.made, self.empty = course, scratch, {}, None

    def __call__(self, lesson):
        if lesson not in self.made:
            if self.empty is None:
                self.empty = books.create_empty(self.course.db_url, self.course.course_id, self.scratch / "empty.db")
            path = books.make_template(self.course.db_url, self.course.course_id, lesson,
                                       self.scratch / f"template-{lesson}.db", self.empty)
            self.made[lesson] = Path(path).read_bytes()
        return self.made[lesson]


def _grade(run, course, chosen, force, feedback, templates, pools, log):
    """Plan the grading jobs, run them, store what they bring back."""
    import nbformat
    from nbgrader.api import Gradebook

    books.ensure_assignments(course.root, course.config, course.db_url, run.lessons, templates.scratch, log)
    stale = books.stored_test_mismatches(course.root, course.db_url, course.course_id, run.lessons)
    if stale:
        raise GradebookError("the gradebook's copy of these hidden tests differs from source/: " + "; ".join(
            f"{lesson}: {', '.join(cells)}" for lesson, cells in stale.items())
            + ". Nothing was graded. Store source/ again with `nbgrader generate_assignment <lesson> "
            "--force` (or `make release`), then grade.")
    sources = {l: (course.root / "source" / l / f"{l}.ipynb").read_bytes() for l in run.lessons}
    lesson_hash = {l: hashlib.sha256(source).hexdigest() for l, source in sources.items()}
    jobs, unrecorded, ledger = [], {}, AttemptLedger(course.root)
    with Gradebook(course.db_url, course.course_id) as gb:
        for u in chosen:
            files = submission_files(u.notebook.parent, course.intake)
            digest = content_hash(files)
            if not force and books.already_graded(course.root, gb, u.student, u.lesson, digest, lesson_hash[u.lesson]):
                continue
            try:            # which attempt it is decides its hidden cases (attempts.py)
                attempt = ledger.record(u.student, u.lesson, handed_in_digest(u.notebook.parent))
            except (LedgerError, OSError) as exc:
                unrecorded[u.student, u.lesson] = str(exc)
                continue
            graded_before = course.autograded(u.student, u.lesson) / f"{u.lesson}.ipynb"
            answered = (standings.answer_digests(nbformat.read(graded_before, as_version=4))
                        if graded_before.is_file() else {})
            jobs.append(GradingJob(u.student, u.lesson, files, templates(u.lesson), course.config, digest,
                                   lesson_hash[u.lesson], prior=standings.read(gb, u.lesson, u.student),
                                   answered=answered, feedback=feedback, lesson_source=sources[u.lesson],
                                   case_key=attempt.key(u.student, u.lesson)))
    run.skipped = len(chosen) - len(jobs) - len(unrecorded)
    if run.skipped:
        log(f"{run.skipped} submission(s) already graded and unchanged: skipped (--force regrades them)")
    pool = pools.get() if jobs else None
    where = f" on the Dask cluster at {pools.args[2]}" if isinstance(pool, DaskPool) else ""
    log(f"grading {len(jobs)} submission(s) of {len(run.lessons)} lesson(s) with "
        f"{pool.workers if pool else pools.args[0]} worker(s){where}")
    renderer = pages.renderer_digest()
    first_failures = {}

    def keep(job, outcome, attempt):
        """Save a job's outcome in the course; None, or why it could not be kept."""
        run.job_seconds[job.key] = outcome.result.seconds
        if not outcome.ok:
            if outcome.log:
                _save_log(course.root, job.key, outcome.log, attempt)
            _record_failure(course.root, outcome.result)
            first_failures.setdefault(job.key, outcome.message or "autograde failed")
            return outcome.message or "autograde failed"
        if attempt == 2 and job.key in first_failures:
            outcome.result.first_failure = first_failures[job.key]
        try:
            with safekeeping.deferred_interrupt():          # Ctrl-C waits for the save to end
                now = books.save_outcome(course.root, course.db_url, course.course_id, outcome, course.config,
                                         job.prior, job.answered)
                run.graded.append(job.key)
                _note_manual(run, job.key, outcome.result)
                started = time.process_time()
                if outcome.feedback and outcome.feedback_digest == now.digest():
                    notebook = outcome.autograded[f"{job.lesson}.ipynb"]
                    pages.write(course.root, job.student, job.lesson, outcome.feedback,
                                pages.page_digest(now.digest(), notebook, renderer))
                    run.feedback_written += 1
                    run.pages.add(job.key)
                run.feedback_cpu += time.process_time() - started
            return None
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            return f"could not save the grades: {type(exc).__name__}: {exc}"

    turned_down = {}
    if jobs:
        with _progress(len(jobs), "autograde") as bar:
            try:
                turned_down, run.second_attempts = run_with_second_attempt(pool, run_job, jobs, bar, keep)
            except (ClusterLost, KeyboardInterrupt) as exc:
                run.not_graded = [job.key for job in jobs if job.key not in run.graded]
                if isinstance(exc, ClusterLost):
                    run.cluster_lost = str(exc)
                else:
                    raise
    why = {**{key: (message, message) for key, message in unrecorded.items()},
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


def _refresh_standings(run, course, chosen, feedback, rerender):
    """Late penalties follow every selected submission's current grades, due date and extension
    (nbgrader's ``AssignLatePenalties`` with the course's plugin); returns the submissions whose
    feedback page is not made from their current grades and comments (all, with ``rerender``)."""
    from nbgrader.api import Gradebook

    renderer, stale = pages.renderer_digest(), []
    with Gradebook(course.db_url, course.course_id) as gb:
        for u in chosen:
            notebook = course.autograded(u.student, u.lesson) / f"{u.lesson}.ipynb"
            if (u.student, u.lesson) in run.failed or not notebook.is_file():
                continue
            with safekeeping.deferred_interrupt():
                try:
                    standings.reassess_late_penalties(gb, course.config, u.lesson, u.student)
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
            elif (u.student, u.lesson) not in run.pages:
                run.feedback_current += 1
            run.feedback_cpu += time.process_time() - started
    return stale


def _render_pages(run, course, stale, templates, pools):
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
    with _progress(len(jobs), "feedback") as bar:
        for job, outcome in pools.get().run(run_feedback, jobs, bar):
            if not outcome.ok:
                run.feedback_failures.append((job.student, job.lesson, outcome.message))
                bar.write(f"[feedback failed] {job.student} / {job.lesson}: {outcome.message}")
                continue
            with safekeeping.deferred_interrupt():
                pages.write(course.root, job.student, job.lesson, outcome.feedback,
                            pages.page_digest(outcome.digest, notebooks[job.key], renderer))
            run.feedback_written += 1
            run.pages.add(job.key)
    run.feedback_cpu += time.process_time() - started


def _publish(run, course, report, students, log):
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
        run = grade(args.root, args.lesson, args.student, args.workers, args.force, args.db_url,
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
