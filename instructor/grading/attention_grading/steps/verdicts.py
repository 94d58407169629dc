"""Autograde steps after ``GuardedExecute``: the grader's verdicts, and nothing else, score.

nbgrader's ``determine_grade`` scores a graded code cell from its outputs: the first error or
stderr text gives 0, the first ``execute_result`` gives partial credit, anything else full marks.
A kernel decides what it prints, so:

- ``ApplyVerdicts`` turns every output the kernel made in a graded code cell into a form that
  scores nothing (``cells.unscored``: a result becomes display data, an error or stderr text
  becomes printed text), then appends the verdict the grader decided (``GuardedExecute``)
  as the cell's last output: a line on stdout when it passed, an error with the diagnosis when it
  did not. A graded cell without a verdict (it never ran) fails with the reason. It runs after
  every step that changes outputs, and writes ``grading-notes.json`` (``results.NotebookNotes``)
  beside the autograded notebook.
- ``SaveVerdicts`` is nbgrader's ``SaveAutoGrades`` with each autograded test's score its
  verdict: full points when it passed, 0 otherwise, never read from the outputs. It checks that
  stock ``determine_grade`` on the stored cell agrees (it does, after ``ApplyVerdicts``) and says
  so in the log if it ever does not. Written answers keep nbgrader's own rule. Plain ``nbgrader
  autograde`` runs it as a step; ``make grade``'s store (``store.grades.apply``) calls ``save``.
"""
import json
import os
from pathlib import Path

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor, SaveAutoGrades
from nbgrader.utils import determine_grade

from ..cells import CellPlan, error_output, grade_id, is_test, unscored
from ..course import NOTES_FILE
from ..results import NOT_RUN, NOTES_KEY, RAN, NotebookNotes, Verdict



def verdict_output(verdict):
    """The one output of a graded cell that scores: stdout when it passed, an error when not."""
    if verdict.passed:
        said = verdict.message if verdict.kind == RAN else f"hidden tests passed ({verdict.cases} cases)"
        return NotebookNode(output_type="stream", name="stdout", text=f"{verdict.check}: {said}.\n")
    return error_output("HiddenTestFailure", verdict.message)


def missing_verdict(cell):
    return Verdict(grade_id(cell) or "", False, "this test did not run (the notebook ran out of time, or the "
                   "kernel could not be restarted)", kind=NOT_RUN)


class ApplyVerdicts(NbGraderPreprocessor):
    """Make each graded code cell's verdict its only scoring output; write ``grading-notes.json``."""

    def preprocess(self, nb, resources):
        notes = NotebookNotes.from_dict(resources.get(NOTES_KEY) or {})
        for index in CellPlan(nb.cells, names=False).tests:
            cell = nb.cells[index]
            data = notes.verdicts.get(grade_id(cell))
            verdict = Verdict.from_dict(data) if data else missing_verdict(cell)
            kept = [unscored(o) for o in cell.get("outputs", [])]
            cell.outputs = [o for o in kept if o is not None] + [verdict_output(verdict)]
        folder = (resources.get("metadata") or {}).get("path")
        if folder and os.environ.get("NBGRADER_EXECUTION") == "autograde":
            Path(folder, NOTES_FILE).write_text(json.dumps(notes.as_dict(), indent=1))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        return cell, resources


def verdict_points(verdict, max_points):
    return float(max_points) if verdict and verdict.get("passed") else 0.0


class SaveVerdicts(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades``, each autograded test scored by its verdict (see above).

    The verdicts come from ``resources`` (``GuardedExecute`` puts them there under plain
    ``nbgrader autograde``; ``store.grades.apply`` passes a job's). ``save`` does the work on a
    gradebook that is already open (the store's); ``preprocess`` opens the one nbgrader names."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            return self.save(gradebook, nb, resources)

    def save(self, gradebook, nb, resources):
        """Score ``nb``'s graded cells (and set nbgrader's comments) in the open ``gradebook``."""
        info = resources["nbgrader"]
        self.notebook_id, self.assignment_id = info["notebook"], info["assignment"]
        self.student_id, self.db_url = info["student"], info.get("db_url")
        self.gradebook = gradebook
        self._verdicts = NotebookNotes.from_dict(resources.get(NOTES_KEY) or {}).verdicts
        return super(SaveAutoGrades, self).preprocess(nb, resources)       # every cell, in order

    def _add_score(self, cell, resources):
        if not is_test(cell):
            return super()._add_score(cell, resources)          # written answers: nbgrader's own rule
        grade = self.gradebook.find_grade(grade_id(cell), self.notebook_id, self.assignment_id,
                                          self.student_id)
        grade.auto_score = verdict_points(self._verdicts.get(grade_id(cell)), grade.max_score)
        grade.needs_manual_grade = grade.manual_score is not None
        stored, _ = determine_grade(cell, self.log)          # what the cell's outputs would score
        if stored != grade.auto_score:
            self.log.error("The stored outputs of %s would score %s, its verdict %s: the verdict's score is "
                           "kept", grade_id(cell), stored, grade.auto_score)
        self.gradebook.db.commit()
