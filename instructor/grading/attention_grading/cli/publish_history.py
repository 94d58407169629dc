"""Every attempt kept (``store.history``), seen from a run: each graded attempt into the history
as it is stored, each feedback page beside it, and the run's change log (old → new final score,
resubmissions, resubmissions refused while the last good grade stands, accounts kept apart for
not being on the roster), printed and saved in ``history/``."""
from ..results import GRADED, NEEDS_MANUAL, UNGRADABLE
from ..store import gradebook as books
from ..store import history


def scores_before(course):
    """{(student, lesson): final score} as the last run left them (``history/scores.json``: a
    manual grade or an extension since then is a change), else as ``nbgrader export`` computes
    them now."""
    from nbgrader.api import Gradebook

    last = history.last_scores(course.root)
    if last is not None:
        return last

    results = {key: r for key, r in books.load_results(course.root).items() if r.status != UNGRADABLE}
    if not results:
        return {}
    with Gradebook(course.db_url, course.course_id) as gb:
        scores = books.final_scores(gb, course.lessons, sorted({s for s, _ in results}), course.config)
    return {key: score.score for key, score in scores.items() if key in results}


def keep_graded(run, course, job, outcome, attempt, standing):
    """Keep the attempt just stored (its record, autograded notebook) in the history."""
    notebook = f"{job.lesson}.ipynb"
    run.attempts[job.key] = attempt.number if attempt is not None else None
    if attempt is None:
        return
    try:
        history.keep_graded(course.root, outcome.result, attempt, job.files.get(notebook),
                            outcome.autograded.get(notebook), standing.penalties.get(job.lesson))
    except (OSError, ValueError):
        pass                       # the history never costs a grade; the gradebook holds it


def keep_page(root, student, lesson, files):
    try:
        history.keep_page(root, student, lesson, files.get(f"{lesson}.html"))
    except (OSError, ValueError):
        pass


def log_changes(run, course, log):
    """The run's change log: printed, and saved in history/ when it has anything to say."""
    after = {(r["student"], r["lesson"]): r["score"] for r in run.rows if r["status"] in (GRADED, NEEDS_MANUAL)}
    after = {key: score for key, score in after.items() if key in run.before or key in run.attempts
             or books.load_result(course.root, *key) is not None}
    run.refused = {key: why for key, why in run.failed.items() if key in after}
    resubmitted = {key: n for key, n in run.attempts.items() if n}
    run.changes = history.change_lines(run.before, after, resubmitted, run.refused, run.off_roster)
    try:
        run.change_log = history.write_changes(course.root, run.changes)
        history.save_scores(course.root, after)
    except OSError as exc:
        log(f"[warning] the change log could not be saved: {exc}")
    if not any("→" in line for line in run.changes):
        log("\nno grade changed in this run")
    if run.changes:
        where = f" (saved in {run.change_log})" if run.change_log else ""
        log(f"\nchanges in this run{where}:")
        for line in run.changes:
            log(f"  {line}")
