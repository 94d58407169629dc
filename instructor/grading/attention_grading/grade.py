"""``make grade``: autograde every submission in parallel, write feedback, grades.csv and a report.

Usage: python -m attention_grading.grade [--root DIR] [--workers N] [--lesson ID ...]
                                         [--student ID ...] [--force] [--db-url URL]
                                         [--no-feedback] [--no-report]

Layout (nbgrader's): ``submitted/<student>/<lesson>/<lesson>.ipynb``. Every (student, lesson)
is one unit of work, graded in a worker process by stock nbgrader ``Autograde`` (the
course's nbgrader_config.py, preprocessors and all) against a private scratch SQLite
gradebook holding a copy of the lesson's assignment. The main process is the only writer
of the course gradebook (SQLite or PostgreSQL, ``db_url``): it copies each unit's autograde
scores into it exactly as nbgrader's ``SaveAutoGrades`` would. Feedback is then generated in
parallel with stock ``GenerateFeedback`` reading the course gradebook. ``submitted/`` is only
ever read. The exit status is 1 when some submission could not be graded, 0 otherwise.
"""
import argparse
import concurrent.futures as futures
import copy
import csv
import functools
import io
import json
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from .course import lesson_ids, load_config

IGNORED_NAMES = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}


# --------------------------------------------------------------------------------------
# What is in submitted/
# --------------------------------------------------------------------------------------

@dataclass
class Unit:
    student: str
    lesson: str
    notebook: Path


@dataclass
class Problem:
    """Something wrong with what a learner handed in. ``fatal``: that unit was not graded."""
    student: str
    lesson: str
    path: str
    message: str
    fatal: bool = True

    def __str__(self):
        kind = "NOT GRADED" if self.fatal else "note"
        where = f"{self.student} / {self.lesson}" if self.lesson else (self.student or "submitted/")
        return f"[{kind}] {where}: {self.path}: {self.message}"


def check_notebook(path):
    """Why ``path`` is not a readable notebook, or None."""
    import nbformat

    try:
        raw = path.read_bytes()
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not raw.strip():
        return "is an empty file, not a notebook (was the upload interrupted?)"
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "is not a notebook: it is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); it is not a readable notebook"
    if not isinstance(data, dict) or "cells" not in data:
        return "is JSON but not a Jupyter notebook (no 'cells')"
    try:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several kinds
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"is not a valid notebook ({first[:200]})"
    return None


def scan(root, lessons, students=None):
    """Units to grade and problems found, from ``<root>/submitted``; never writes there."""
    root = Path(root)
    submitted = root / "submitted"
    all_lessons = set(lesson_ids(root))
    units, problems = [], []
    if not submitted.is_dir():
        return units, problems
    for entry in sorted(submitted.iterdir()):
        rel = entry.relative_to(root)
        if entry.name in IGNORED_NAMES:
            continue
        if not entry.is_dir():
            problems.append(Problem("", "", str(rel),
                                    "extra file ignored: submissions go in submitted/<student>/<lesson>/<lesson>.ipynb",
                                    fatal=False))
            continue
        student = entry.name
        if students and student not in students:
            continue
        for item in sorted(entry.iterdir()):
            rel = item.relative_to(root)
            if item.name in IGNORED_NAMES:
                continue
            if not item.is_dir():
                message = "extra file ignored: a submission is a folder named after its lesson"
                if item.suffix == ".ipynb":
                    message = (f"notebook outside a lesson folder ignored: it should be "
                               f"submitted/{student}/<lesson>/<lesson>.ipynb")
                problems.append(Problem(student, "", str(rel), message, fatal=False))
                continue
            lesson = item.name
            if lesson not in all_lessons:
                problems.append(Problem(student, lesson, str(rel),
                                        f"not a lesson of this course (lessons: {', '.join(sorted(all_lessons))}); ignored",
                                        fatal=False))
                continue
            if lesson not in lessons:
                continue
            expected = item / f"{lesson}.ipynb"
            others = [p for p in sorted(item.iterdir())
                      if p != expected and p.name not in IGNORED_NAMES and p.name != "timestamp.txt"]
            other_notebooks = [p for p in others if p.suffix == ".ipynb"]
            for extra in others:
                if extra in other_notebooks:
                    if expected.exists():
                        message = f"extra notebook ignored: only {lesson}.ipynb is graded"
                    else:
                        continue
                else:
                    message = "extra file, not graded (nbgrader copies it next to the graded notebook)"
                problems.append(Problem(student, lesson, str(extra.relative_to(root)), message, fatal=False))
            if not expected.is_file():
                if other_notebooks:
                    names = ", ".join(p.name for p in other_notebooks)
                    problems.append(Problem(
                        student, lesson, str(other_notebooks[0].relative_to(root)),
                        f"notebook under the wrong name ({names}): nbgrader grades only "
                        f"{lesson}.ipynb; rename it and grade again"))
                else:
                    problems.append(Problem(student, lesson, str(rel),
                                            f"no notebook: expected {lesson}.ipynb in this folder"))
                continue
            why = check_notebook(expected)
            if why:
                problems.append(Problem(student, lesson, str(expected.relative_to(root)),
                                        f"malformed notebook: it {why}"))
                continue
            units.append(Unit(student, lesson, expected))
    return units, problems


# --------------------------------------------------------------------------------------
# Worker side (runs in the pool's processes)
# --------------------------------------------------------------------------------------

def _worker_init():
    import warnings

    warnings.filterwarnings("ignore")   # nbgrader's own SQLAlchemy warnings, kernels' chatter
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)                 # kernels inherit it: their TCP warning is noise here
    logging.basicConfig(level=logging.WARNING)
    for name in ("traitlets", "nbgrader", "NbGraderApp"):
        logging.getLogger(name).setLevel(logging.WARNING)


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


@functools.lru_cache(maxsize=4)
def _course_config(root):
    """nbgrader_config.py, read once per worker process (it is the same for every unit)."""
    return load_config(root)


def _coursedir(root, db_url, lesson, student):
    from nbgrader.coursedir import CourseDirectory

    config = copy.deepcopy(_course_config(str(root)))
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = db_url
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = lesson
    coursedir.student_id = student
    return config, coursedir


def autograde_unit(root, lesson, student, template, workdir):
    """Stock nbgrader Autograde of one submission against a private copy of the gradebook.

    Returns a plain dict: the scores to save in the course gradebook, or why it failed.
    """
    from nbgrader.api import Gradebook
    from nbgrader.converters import Autograde

    start = time.time()
    result = {"student": student, "lesson": lesson, "ok": False, "message": "", "log": "",
              "timestamp": None, "notebooks": {}}
    buffer = None
    try:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        db = workdir / "gradebook.db"
        shutil.copyfile(template, db)
        db_url = f"sqlite:///{db}"
        config, coursedir = _coursedir(root, db_url, lesson, student)
        autograde = Autograde(coursedir=coursedir, config=config)
        autograde.force = True
        buffer = _capture(autograde, f"attention-grade.{student}.{lesson}")
        autograde.start()
        with Gradebook(db_url, coursedir.course_id) as gb:
            submission = gb.find_submission(lesson, student)
            result["timestamp"] = submission.timestamp
            for nb in submission.notebooks:
                result["notebooks"][nb.notebook.name] = {
                    "penalty": nb.late_submission_penalty,
                    "grades": {g.name: (g.auto_score, g.needs_manual_grade) for g in nb.grades},
                    "comments": {c.name: c.auto_comment for c in nb.comments},
                }
        result["ok"] = True
    except Exception as exc:
        log = buffer.getvalue() if buffer else ""
        result["message"] = _failure_message(exc, log)
        result["log"] = (log + "\n" + traceback.format_exc())[-6000:]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        result["seconds"] = time.time() - start
    return result


def _failure_message(exc, log):
    """The most telling line of an nbgrader failure."""
    lines = [line for line in log.splitlines() if line.startswith("[ERROR]")]
    for line in lines:
        if "Traceback" not in line and "Please see" not in line and "There was an error" not in line:
            return line[len("[ERROR] "):][:300]
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300]


def feedback_unit(root, lesson, student, db_url):
    """Stock nbgrader GenerateFeedback (the course's preprocessors) for one graded submission."""
    from nbgrader.converters import GenerateFeedback

    start = time.time()
    result = {"student": student, "lesson": lesson, "ok": False, "message": ""}
    buffer = None
    try:
        config, coursedir = _coursedir(root, db_url, lesson, student)
        feedback = GenerateFeedback(coursedir=coursedir, config=config)
        feedback.force = True
        buffer = _capture(feedback, f"attention-feedback.{student}.{lesson}")
        feedback.start()
        result["ok"] = True
    except Exception as exc:
        result["message"] = _failure_message(exc, buffer.getvalue() if buffer else "")
    result["seconds"] = time.time() - start
    return result


# --------------------------------------------------------------------------------------
# Main process: the only writer of the course gradebook
# --------------------------------------------------------------------------------------

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
            raise SystemExit(f"generate_assignment failed for {lesson}:\n{done['log']}{done.get('error', '')}")


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


def save_result(gb, result):
    """Write one unit's autograde scores into the course gradebook as SaveAutoGrades does."""
    lesson, student = result["lesson"], result["student"]
    gb.update_or_create_student(student)
    kwargs = {"timestamp": result["timestamp"]} if result["timestamp"] else {}
    submission = gb.update_or_create_submission(lesson, student, **kwargs)
    for nb in submission.notebooks:
        data = result["notebooks"].get(nb.notebook.name)
        if data is None:
            continue
        nb.late_submission_penalty = data["penalty"]
        for grade in nb.grades:
            if grade.name in data["grades"]:
                auto, needs = data["grades"][grade.name]
                grade.auto_score = auto
                # a grader's earlier manual score is kept and flagged for review, as in nbgrader
                grade.needs_manual_grade = bool(needs or grade.manual_score is not None)
        for comment in nb.comments:
            if comment.name in data["comments"]:
                comment.auto_comment = data["comments"][comment.name]
    gb.db.commit()


def already_graded(root, gb, unit):
    """The autograded notebook is newer than the submission and the gradebook has it."""
    from nbgrader.api import MissingEntry

    graded = Path(root) / "autograded" / unit.student / unit.lesson / f"{unit.lesson}.ipynb"
    if not graded.is_file():
        return False
    newest = max(p.stat().st_mtime for p in unit.notebook.parent.iterdir() if p.is_file())
    if graded.stat().st_mtime < newest:
        return False
    try:
        submission = gb.find_submission(unit.lesson, unit.student)
    except MissingEntry:
        return False
    return any(g.auto_score is not None for nb in submission.notebooks for g in nb.grades)


def feedback_stale(root, unit):
    graded = Path(root) / "autograded" / unit.student / unit.lesson / f"{unit.lesson}.ipynb"
    feedback = Path(root) / "feedback" / unit.student / unit.lesson / f"{unit.lesson}.html"
    return not feedback.is_file() or feedback.stat().st_mtime < graded.stat().st_mtime


class Pool:
    """A process pool that survives the death of a worker (each unit's failure stays its own)."""

    def __init__(self, workers):
        self.workers = workers
        self._pool = None

    @staticmethod
    def _context():
        # forkserver: workers fork from a clean server that imported nbgrader once (cheap and
        # safe: they never inherit the main process's gradebook connection or threads)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["attention_grading.grade", "nbgrader.converters", "nbgrader.api"])
        return context

    def _new(self):
        return futures.ProcessPoolExecutor(max_workers=self.workers, mp_context=self._context(),
                                           initializer=_worker_init)

    def run(self, function, jobs, progress):
        """Yield ``(job, result)`` for every job.

        When a worker dies, every job it shared the pool with at that moment is a suspect: each
        is run again alone, in a pool of its own, so that only a job that kills its worker by
        itself fails ("the grading process died"), never its neighbours.
        """
        suspects = yield from self._shared(function, jobs, progress)
        for job in suspects:
            alone = futures.ProcessPoolExecutor(max_workers=1, mp_context=self._context(),
                                                initializer=_worker_init)
            try:
                result = alone.submit(function, *job).result()
            except futures.process.BrokenProcessPool:
                result = {"ok": False, "died_alone": True,
                          "message": "the grading process died while grading this submission (alone)"}
            except Exception as exc:  # pickling or similar: the job's own failure
                result = {"ok": False, "message": f"{type(exc).__name__}: {exc}"}
            finally:
                alone.shutdown(wait=False, cancel_futures=True)
            progress.update(1)
            yield job, result

    def _shared(self, function, jobs, progress):
        """Run ``jobs`` on the shared pool, yielding results; return the jobs that were in the
        pool when a worker died. At most one job more than there are workers is in the pool at a
        time, so a death makes few suspects and the jobs not yet sent go on in a new pool."""
        waiting, running, suspects = list(reversed(jobs)), {}, []

        def top_up():
            if self._pool is None:
                self._pool = self._new()
            while waiting and len(running) <= self.workers:
                job = waiting.pop()
                running[self._pool.submit(function, *job)] = job

        while waiting or running:
            top_up()
            done, _ = futures.wait(running, return_when=futures.FIRST_COMPLETED)
            results, broken = [], False
            for future in done:
                job = running.pop(future)
                try:
                    results.append((job, future.result()))
                except futures.process.BrokenProcessPool:
                    broken = True
                    suspects.append(job)
                except Exception as exc:  # pickling or similar: the job's own failure
                    results.append((job, {"ok": False, "message": f"{type(exc).__name__}: {exc}"}))
            if broken:
                futures.wait(running)   # the whole pool goes down with one worker
                for future, job in running.items():
                    if future.exception() is None:
                        results.append((job, future.result()))
                    else:
                        suspects.append(job)
                running.clear()
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
            else:
                top_up()   # before the results are saved: the workers need not wait for that
            for job, result in results:
                progress.update(1)
                yield job, result
        return suspects

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def run_with_second_attempt(pool, function, jobs, progress, keep):
    """Run ``function(*job)`` for every job on ``pool``; ``keep(job, result, attempt)`` stores a
    result and returns None, or says why it could not.

    A job turned down is run once more, after all the others: a failure the submission did not
    cause (a kernel that could not start, an overloaded machine) costs a second try, never the
    learner's grade. A job that killed its worker while running alone (see ``Pool.run``) is not
    run again. Returns ({job: why} turned down for good, {job: why the first attempt failed}
    of the jobs kept on their second attempt).
    """
    first, final = {}, {}
    for attempt in (1, 2):
        if attempt == 2:
            jobs = [job for job in jobs if job in first]
            if not jobs:
                break
            progress.total += len(jobs)
            progress.refresh()
        for job, result in pool.run(function, jobs, progress):
            why = keep(job, result, attempt)
            if why is None:
                continue
            if attempt == 1 and not result.get("died_alone"):
                first[job] = why
            else:
                final[job] = why
    return final, {job: why for job, why in first.items() if job not in final}


def _progress(total, desc):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="nb", dynamic_ncols=True, file=sys.stderr,
                disable=total == 0, smoothing=0.1)


def collect_scores(gb, lessons, students):
    """{(student, lesson): (score, max_score, needs_manual)} from the course gradebook."""
    from nbgrader.api import MissingEntry

    scores, maxima = {}, {}
    for lesson in lessons:
        try:
            maxima[lesson] = gb.find_assignment(lesson).max_score
        except MissingEntry:
            maxima[lesson] = 0.0
        for student in students:
            try:
                submission = gb.find_submission(lesson, student)
            except MissingEntry:
                continue
            scores[student, lesson] = (submission.score, submission.max_score, submission.needs_manual_grade)
    return scores, maxima


def write_grades(path, lessons, students, scores, maxima, failed, notes=None):
    """grades.csv: one row per student x lesson, with the student's totals on every row and, in
    ``note``, why a submission could not be graded (``failed``) or anything else ``notes`` says."""
    notes = {**(notes or {}), **failed}
    rows = []
    for student in students:
        student_rows = []
        for lesson in lessons:
            if (student, lesson) in failed:
                status, score, top = "ungradable", 0.0, maxima[lesson]
            elif (student, lesson) in scores:
                score, top, manual = scores[student, lesson]
                status = "needs manual grading" if manual else "graded"
            else:
                status, score, top = "not submitted", 0.0, maxima[lesson]
            student_rows.append({"student": student, "lesson": lesson, "score": round(score, 4),
                                 "max_score": round(top, 4), "status": status,
                                 "note": notes.get((student, lesson), "")})
        total = sum(r["score"] for r in student_rows)
        top_total = sum(r["max_score"] for r in student_rows)
        for row in student_rows:
            row["student_total"] = round(total, 4)
            row["student_max_total"] = round(top_total, 4)
        rows.extend(student_rows)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["student", "lesson", "score", "max_score", "status",
                                                "student_total", "student_max_total", "note"])
        writer.writeheader()
        writer.writerows(rows)
    return rows


def format_table(rows, lessons):
    """Students x lessons, scores as 'score/max', a totals column; '--' not submitted, '!!' ungradable."""
    students = list(dict.fromkeys(r["student"] for r in rows))
    by = {(r["student"], r["lesson"]): r for r in rows}
    header = ["student", *lessons, "total"]
    table = []
    for student in students:
        line = [student]
        for lesson in lessons:
            r = by[student, lesson]
            if r["status"] == "ungradable":
                line.append("!! failed")
            elif r["status"] == "not submitted":
                line.append("--")
            else:
                mark = "*" if r["status"] == "needs manual grading" else ""
                line.append(f"{r['score']:g}/{r['max_score']:g}{mark}")
        first = by[student, lessons[0]]
        line.append(f"{first['student_total']:g}/{first['student_max_total']:g}")
        table.append(line)
    widths = [max(len(str(x)) for x in column) for column in zip(header, *table)]
    out = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in table]
    out.append("(* written answers still need manual grading; -- not submitted; !! could not be graded)")
    return "\n".join(out)


def grade(root=None, lessons=None, students=None, workers=None, force=False, db_url=None,
          feedback=True, report=True, log=print):
    """Grade everything; returns a summary dict (see ``main`` for the exit status)."""
    from nbgrader.api import Gradebook

    from .paths import COURSE_ROOT

    t0 = time.time()
    root = Path(root or COURSE_ROOT).resolve()
    config = load_config(root)           # also puts instructor/grading on the kernels' PYTHONPATH
    config.CourseDirectory.root = str(root)
    db_url = db_url or config.CourseDirectory.db_url
    course_id = config.CourseDirectory.course_id
    all_lessons = lesson_ids(root)
    if lessons:
        unknown = [l for l in lessons if l not in all_lessons]
        if unknown:
            raise SystemExit(f"unknown lesson(s): {', '.join(unknown)} (lessons: {', '.join(all_lessons)})")
        lessons = [l for l in all_lessons if l in lessons]
    else:
        lessons = all_lessons
    workers = max(1, int(workers or os.cpu_count() or 1))

    units, problems = scan(root, lessons, set(students) if students else None)
    for problem in problems:
        log(str(problem))
    everyone = sorted({u.student for u in units} | set(students or [])
                      | {p.student for p in problems if p.student and (root / "submitted" / p.student).is_dir()})
    if students:
        everyone = [s for s in everyone if s in students]
    failed = {(p.student, p.lesson): p.message for p in problems if p.fatal}

    scratch = Path(tempfile.mkdtemp(prefix="attention-grade-"))
    pool = Pool(workers)
    timings = []
    try:
        ensure_assignments(root, config, db_url, lessons, scratch, log)
        with Gradebook(db_url, course_id) as gb:
            todo = [u for u in units if force or not already_graded(root, gb, u)]
        skipped = len(units) - len(todo)
        if skipped:
            log(f"{skipped} submission(s) already graded and unchanged: skipped (--force regrades them)")
        templates = {}
        if todo:
            empty = scratch / "empty.db"
            create_empty(db_url, course_id, empty)
        for lesson in sorted({u.lesson for u in todo}):
            templates[lesson] = str(make_template(db_url, course_id, lesson,
                                                  scratch / f"template-{lesson}.db", empty))
        for unit in todo:       # parents made once here: workers never race to create them
            for folder in ("autograded", "feedback"):
                (root / folder / unit.student).mkdir(parents=True, exist_ok=True)
        jobs = [(str(root), u.lesson, u.student, templates[u.lesson], str(scratch / "units" / f"{i:05d}"))
                for i, u in enumerate(todo)]
        log(f"grading {len(todo)} submission(s) of {len(lessons)} lesson(s) with {workers} worker(s)")
        graded = []

        def keep(job, result, attempt):
            """Save a unit's grades; None, or why they could not be kept."""
            key = (job[2], job[1])
            timings.append(result.get("seconds", 0.0))
            if result.get("ok"):
                try:
                    save_result(gb, result)
                    graded.append(key)
                    return None
                except Exception as exc:
                    gb.db.rollback()
                    return f"could not save the grades: {type(exc).__name__}: {exc}"
            if result.get("log"):
                _save_log(root, key, result["log"], attempt)
            return result.get("message") or "autograde failed"

        with Gradebook(db_url, course_id) as gb, _progress(len(jobs), "autograde") as bar:
            turned_down, second = run_with_second_attempt(pool, autograde_unit, jobs, bar, keep)
        second_attempts = {(job[2], job[1]): why for job, why in second.items()}
        for job, message in turned_down.items():
            key = (job[2], job[1])
            failed[key] = message
            problems.append(Problem(key[0], key[1], f"submitted/{key[0]}/{key[1]}/{key[1]}.ipynb",
                                    f"autograde failed: {message}"))
            log(str(problems[-1]))

        feedback_failures = []
        if feedback:
            want = [u for u in units if (u.student, u.lesson) not in failed
                    and ((u.student, u.lesson) in graded or force or feedback_stale(root, u))]
            fjobs = [(str(root), u.lesson, u.student, db_url) for u in want]
            with _progress(len(fjobs), "feedback") as bar:
                for job, result in pool.run(feedback_unit, fjobs, bar):
                    if not result.get("ok"):
                        feedback_failures.append((job[2], job[1], result.get("message", "")))
                        bar.write(f"[feedback failed] {job[2]} / {job[1]}: {result.get('message', '')}")
    finally:
        pool.close()
        shutil.rmtree(scratch, ignore_errors=True)

    with Gradebook(db_url, course_id) as gb:
        scores, maxima = collect_scores(gb, lessons, everyone)
    notes = {key: f"graded on a second attempt; the first failed: {message}"
             for key, message in second_attempts.items()}
    rows = write_grades(root / "grades.csv", lessons, everyone, scores, maxima, failed, notes)
    if rows:
        log("")
        log(format_table(rows, lessons))
    log("")
    elapsed = time.time() - t0
    log(f"graded {len(graded)}, skipped {skipped}, could not grade {len(failed)} "
        f"in {elapsed:.1f} s; wrote {root / 'grades.csv'}")
    summary = {"root": root, "lessons": lessons, "students": everyone, "graded": graded,
               "skipped": skipped, "failed": failed, "problems": problems, "rows": rows,
               "feedback_failures": feedback_failures, "second_attempts": second_attempts,
               "seconds": elapsed, "unit_seconds": timings,
               "db_url": db_url}
    if report and rows:
        try:
            from .report import build_report

            where = build_report(root, lessons, rows, problems, db_url=db_url, course_id=course_id)
            log(f"wrote the grading report: {where}")
        except Exception as exc:  # the report never hides the grades
            log(f"[warning] the grading report could not be written: {type(exc).__name__}: {exc}")
    if second_attempts:
        log(f"\n{len(second_attempts)} submission(s) graded on a second attempt "
            f"(the first one's log is in grading-report/logs/):")
        for (student, lesson), message in sorted(second_attempts.items()):
            log(f"  {student} / {lesson}: first attempt: {message}")
    if failed:
        log(f"\n{len(failed)} submission(s) could NOT be graded:")
        for (student, lesson), message in sorted(failed.items()):
            log(f"  {student} / {lesson}: {message}")
    if feedback_failures:
        log(f"\n{len(feedback_failures)} feedback file(s) could not be generated:")
        for student, lesson, message in feedback_failures:
            log(f"  {student} / {lesson}: {message}")
    return summary


def _save_log(root, key, text, attempt=1):
    folder = Path(root) / "grading-report" / "logs"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{key[0]}__{key[1]}.attempt{attempt}.log").write_text(text)
    except OSError:
        pass


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=None, help="course folder (default: this course)")
    parser.add_argument("--workers", type=int, default=None, help="parallel graders (default: number of cores)")
    parser.add_argument("--lesson", action="append", default=None, help="grade only this lesson (repeatable)")
    parser.add_argument("--student", action="append", default=None, help="grade only this student (repeatable)")
    parser.add_argument("--force", action="store_true", help="regrade what is already graded")
    parser.add_argument("--db-url", default=None, help="gradebook URL (default: nbgrader_config's db_url)")
    parser.add_argument("--no-feedback", action="store_true", help="skip generate_feedback")
    parser.add_argument("--no-report", action="store_true", help="skip grading-report/")
    args = parser.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    summary = grade(args.root, args.lesson, args.student, args.workers, args.force, args.db_url,
                    feedback=not args.no_feedback, report=not args.no_report)
    if summary["failed"] or summary["feedback_failures"]:
        print("exit status 1: not everything could be graded (see above).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
