"""A graded submission's grades in the course gradebook, in one function: ``apply``.

``apply`` is what ``nbgrader autograde``'s gradebook steps do, on the course gradebook, once per
submission graded: each graded cell's score (``steps.verdicts.SaveVerdicts``: a test's is its
verdict, a written answer's nbgrader's own rule; nbgrader's comments), the manual grades of the
written answers whose text did not change since they were graded by hand (``keep_confirmed_answers``),
then the late penalty (``late_penalty``: nbgrader's ``AssignLatePenalties`` with the course's
``LateSubmissionPlugin``), from the score those leave. ``store.gradebook.save`` is its one caller.
A manual grade or an extension later needs only the penalty again: ``late_penalty`` itself.

``fill_result`` reads the checks of a ``GradingResult`` back from what ``apply`` wrote.
"""
import logging

from nbgrader.preprocessors import AssignLatePenalties

from ..cells import CellPlan, grade_id, is_written_answer
from ..results import (CHECK_AWAITING, CHECK_FAILED, CHECK_PASSED, GRADED, NEEDS_MANUAL, NOTES_KEY, CheckResult,
                       NotebookNotes, Verdict)
from ..steps.verdicts import SaveVerdicts
from . import standing


def apply(gb, nb, student, lesson, notes, config, prior=None, answered=None):
    """Score the autograded notebook ``nb`` of ``student``'s ``lesson`` in the open course gradebook
    ``gb`` from its ``notes`` (their verdicts), keep the manual grades of unchanged written answers
    (``prior``: the submission's ``standing.Standing`` before; ``answered``: the digests of the
    answers graded then), set the late penalty. Returns ([answers kept], [answers changed])."""
    resources = {"nbgrader": {"notebook": lesson, "assignment": lesson, "student": student, "db_url": None},
                 NOTES_KEY: notes}
    scores = SaveVerdicts(config=config)
    scores.log.setLevel(logging.WARNING)
    scores.save(gb, nb, resources)
    kept, changed = keep_confirmed_answers(gb, nb, lesson, student, prior, answered or {})
    late_penalty(gb, config, lesson, student)
    return kept, changed


def keep_confirmed_answers(gb, nb, lesson, student, prior, answered):
    """After ``SaveVerdicts`` (nbgrader's ``SaveAutoGrades``) has flagged every manually graded cell
    for review again:
    put back, for each written answer whose text is the one graded by hand before (``answered``,
    its digests), the state the instructor left it in (confirmed or not, ``prior``). Returns
    ([grade ids kept], [grade ids whose text changed since they were graded by hand])."""
    kept, changed = [], []
    if prior is None:
        return kept, changed
    now = standing.answer_digests(nb)
    notebook = gb.find_submission_notebook(lesson, lesson, student)
    for grade in notebook.grades:
        before = prior.manual(lesson, grade.name)
        if grade.name not in now or before is None or before[0] is None:
            continue
        if answered.get(grade.name) == now[grade.name]:
            grade.manual_score, grade.extra_credit, grade.needs_manual_grade = before
            kept.append(grade.name)
        else:
            changed.append(grade.name)
    gb.db.commit()
    return kept, changed


def late_penalty(gb, config, lesson, student):
    """nbgrader's ``AssignLatePenalties`` (built with the course's configuration, so with its
    ``LateSubmissionPlugin``) on one submission, against the open gradebook ``gb``: the penalty
    follows the submission's current score, due date and extension, as ``nbgrader autograde``
    would set it now."""
    from nbformat.v4 import new_notebook

    step = SharedGradebookPenalties(config=config, gradebook=gb)
    step.log.setLevel(logging.WARNING)
    step.preprocess(new_notebook(), {"nbgrader": {"notebook": lesson, "assignment": lesson,
                                                  "student": student, "db_url": None}})


def penalties_to_reassess(gb, lessons):
    """``{(student, lesson): whether its late penalty may change}`` for every submitted notebook
    of ``lessons`` in the open gradebook ``gb``, read in one query. A submission turned in by its
    due date (nbgrader's ``SubmittedAssignment.total_seconds_late``: the due date with any
    extension) and carrying no penalty keeps none whatever its score, so ``late_penalty`` would
    write nothing there; the others are reassessed by it. A class's run again then costs one query
    rather than three a submission."""
    from nbgrader.api import Assignment, Notebook, Student, SubmittedAssignment, SubmittedNotebook

    rows = (gb.db.query(Student.id, Assignment.name, SubmittedAssignment.timestamp, Assignment.duedate,
                        SubmittedAssignment.extension, SubmittedNotebook.late_submission_penalty)
            .select_from(SubmittedNotebook)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .join(Student, SubmittedAssignment.student_id == Student.id)
            .filter(Notebook.name == Assignment.name, Assignment.name.in_(sorted(lessons))))
    found = {}
    for student, lesson, timestamp, duedate, extension, penalty in rows:
        due = duedate if duedate is None or extension is None else duedate + extension
        late = timestamp is not None and due is not None and (timestamp - due).total_seconds() > 0
        found[student, lesson] = late or penalty is not None
    return found


class SharedGradebookPenalties(AssignLatePenalties):
    """``AssignLatePenalties`` on a gradebook that is already open (one connection for the whole
    class rather than one per submission); its plugin, and the plugin's checks, are nbgrader's."""

    def __init__(self, gradebook=None, **kwargs):
        super().__init__(**kwargs)
        self._open = gradebook

    def penalty_of(self, submission, notebook):
        """The penalty nbgrader's step sets on ``notebook`` of ``submission`` now (its current
        score, due date and extension), or None; nothing is written."""
        self.init_plugin()
        if submission.total_seconds_late <= 0:
            return None
        penalty = self.plugin_inst.late_submission_penalty(submission.student.id, notebook.score,
                                                           submission.total_seconds_late)
        return None if penalty is None else self._check_late_penalty(notebook, penalty)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        submission = self._open.find_submission(info["assignment"], info["student"])
        notebook = self._open.find_submission_notebook(info["notebook"], info["assignment"], info["student"])
        notebook.late_submission_penalty = self.penalty_of(submission, notebook)
        self._open.db.commit()
        return nb, resources


def penalty_step(gb, config):
    """The step ``late_penalty`` runs, for ``penalty_now`` (one for a whole class)."""
    step = SharedGradebookPenalties(config=config, gradebook=gb)
    step.log.setLevel(logging.WARNING)
    return step


def penalty_now(gb, config, submission, step=None):
    """The late penalty of ``submission`` (an nbgrader ``SubmittedAssignment`` of the open gradebook
    ``gb``) as ``late_penalty`` would set it now, written nowhere: what ``nbgrader export`` reports,
    so that an extension or a manual grade given since the last run counts there too."""
    step = step or penalty_step(gb, config)
    return sum(step.penalty_of(submission, nb) or 0.0 for nb in submission.notebooks)


def fill_result(gb, nb, result):
    """``result``'s checks, score, maximum and status, from the gradebook's grades of its
    submission (as ``apply`` left them) and its notes."""
    submission = gb.find_submission_notebook(result.lesson, result.lesson, result.student)
    grades = {g.name: g for g in submission.grades}
    result.checks = checks_of(nb, grades, NotebookNotes.from_dict(result.notes))
    result.score = sum(c.points or 0.0 for c in result.checks)
    result.max_score = sum(c.max_points for c in result.checks)
    result.status = NEEDS_MANUAL if result.awaiting_manual else GRADED


def checks_of(nb, grades, notes):
    """One CheckResult per graded cell, in notebook order, named by exercise and check."""
    plan = CellPlan(nb.cells, names=False)
    checks = []
    for index, cell in enumerate(nb.cells):
        gid = grade_id(cell)
        grade = grades.get(gid)
        if grade is None:
            continue
        written = is_written_answer(cell)
        verdict = notes.verdicts.get(gid)
        verdict = Verdict.from_dict(verdict) if verdict else None
        if grade.needs_manual_grade and grade.manual_score is None:
            status, points = CHECK_AWAITING, None
        else:
            points = grade.score
            status = CHECK_PASSED if points is not None and points >= grade.max_score else CHECK_FAILED
        message = verdict.message if verdict else _error_text(cell)
        checks.append(CheckResult(
            grade_id=gid, exercise=None if written else plan.owner.get(index),
            kind="written" if written else ("hidden" if index in plan.hidden else "code"),
            max_points=float(grade.max_score), points=points, status=status,
            message="" if status == CHECK_PASSED else message,
            diagnosis=verdict.diagnosis if verdict else None))
    return checks


def _error_text(cell):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"[:500]
    return ""
