"""Feedback step: each graded cell named for the learner, and the written answers that await grading."""
from contextlib import ExitStack

from nbgrader.preprocessors import NbGraderPreprocessor

from ..cells import CellPlan, check_title, grade_id, is_written_answer
from .given_grades import awaiting as given_awaiting


class LabelGradedCells(NbGraderPreprocessor):
    """Name each graded cell for the feedback page (``templates/attention_feedback``): a test by
    its exercise and what it checks (its docstring), a written answer by its question; and mark
    written answers the instructor has not graded yet, whose points stay out of the score shown.

    Runs after nbgrader's ``GetGrades`` (or ``given_grades.GivenGrades``), which has put each
    cell's score and points in its metadata; whether a written answer is graded yet is read from
    what a feedback job carries (``given_grades``), else from the gradebook.
    """

    def preprocess(self, nb, resources):
        plan = CellPlan(nb.cells, names=False)
        info = resources["nbgrader"]
        awaiting_points = 0.0
        with ExitStack() as opened:
            books = []

            def awaiting_of(name):
                given = given_awaiting(resources, name)
                if given is not None:
                    return given
                if not books:
                    from nbgrader.api import Gradebook

                    books.append(opened.enter_context(Gradebook(info["db_url"])))
                grade = books[0].find_grade(name, info["notebook"], info["assignment"], info["student"])
                return grade.manual_score is None and grade.auto_score is None, grade.max_score

            for index, cell in enumerate(nb.cells):
                meta = cell.metadata.get("nbgrader", {})
                if not meta.get("grade"):
                    continue
                label, awaiting = check_title(cell, plan.owner.get(index)), False
                if is_written_answer(cell):
                    awaiting, points = awaiting_of(grade_id(cell))
                    if awaiting:
                        awaiting_points += float(points or 0)
                cell.metadata["attention_feedback"] = {"label": label, "awaiting": awaiting}
        resources["attention_feedback"] = {"awaiting_points": awaiting_points}
        return nb, resources
