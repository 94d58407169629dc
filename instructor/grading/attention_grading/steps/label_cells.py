"""Feedback step: each graded cell named for the learner, and the written answers that await grading."""
from nbgrader.preprocessors import NbGraderPreprocessor

from ..cells import CellPlan, check_title, grade_id, is_written_answer


class LabelGradedCells(NbGraderPreprocessor):
    """Name each graded cell for the feedback page (``templates/attention_feedback``): a test by
    its exercise and what it checks (its docstring), a written answer by its question; and mark
    written answers the instructor has not graded yet, whose points stay out of the score shown.

    Runs after nbgrader's ``GetGrades``, which has put each cell's score and points in its
    metadata; whether a written answer is graded yet is read from the gradebook.
    """

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        plan = CellPlan(nb.cells, names=False)
        info = resources["nbgrader"]
        awaiting_points = 0.0
        with Gradebook(info["db_url"]) as gb:
            for index, cell in enumerate(nb.cells):
                meta = cell.metadata.get("nbgrader", {})
                if not meta.get("grade"):
                    continue
                label, awaiting = check_title(cell, plan.owner.get(index)), False
                if is_written_answer(cell):
                    grade = gb.find_grade(grade_id(cell), info["notebook"], info["assignment"], info["student"])
                    awaiting = grade.manual_score is None and grade.auto_score is None
                    if awaiting:
                        awaiting_points += float(grade.max_score or 0)
                cell.metadata["attention_feedback"] = {"label": label, "awaiting": awaiting}
        resources["attention_feedback"] = {"awaiting_points": awaiting_points}
        return nb, resources
