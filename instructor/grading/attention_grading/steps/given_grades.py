"""Feedback step: a page's scores, comments and late penalty, handed to the page as data.

nbgrader's ``GetGrades`` reads them from a gradebook, one query a graded cell. ``make grade``
reads them once, in the grader's process, from the course gradebook as it stands after the store
(``store.page_grades``), and a feedback job carries them to its worker in
``resources["nbgrader"][GIVEN]``: the worker then needs no gradebook. ``GivenGrades`` writes them
into the notebook exactly where ``GetGrades`` does (each cell's ``score``, ``points`` and
``comment``; the notebook's ``score`` less its late penalty, ``max_score``, ``late_penalty``);
without ``GIVEN`` it is ``GetGrades`` itself (plain ``nbgrader generate_feedback``).

``GIVEN`` holds ``{"grades": {grade_id: [score, max_score, awaiting]}, "comments": {grade_id:
comment or None}, "score": notebook score, "max_score": ..., "late_penalty": ... or None}``.
"""
from nbgrader import utils
from nbgrader.preprocessors import GetGrades

GIVEN = "given_grades"


class GivenGrades(GetGrades):
    """``GetGrades`` reading what a feedback job carries rather than a gradebook."""

    def preprocess(self, nb, resources):
        given = resources["nbgrader"].get(GIVEN)
        if given is None:
            return super().preprocess(nb, resources)
        for index, cell in enumerate(nb.cells):
            if utils.is_solution(cell) or utils.is_task(cell):
                cell.metadata.nbgrader["comment"] = _entry(given["comments"], cell, "comment")
            if utils.is_grade(cell) or utils.is_task(cell):
                score, points, _ = _entry(given["grades"], cell, "grade")
                cell.metadata.nbgrader["score"], cell.metadata.nbgrader["points"] = score, points
        late_penalty = given["late_penalty"] or 0     # GetGrades: None is no penalty
        resources["nbgrader"]["score"] = given["score"] - late_penalty
        resources["nbgrader"]["max_score"] = given["max_score"]
        resources["nbgrader"]["late_penalty"] = late_penalty
        return nb, resources


def _entry(table, cell, what):
    """The cell's entry, or the error ``GetGrades`` raises for a cell the gradebook lacks."""
    from nbgrader.api import MissingEntry

    name = cell.metadata["nbgrader"]["grade_id"]
    if name not in table:
        raise MissingEntry(f"no {what} for cell {name!r} in this submission's grades")
    return table[name]


def awaiting(resources, grade_id):
    """(awaiting manual grading, max score) of a written answer from what the job carries, or
    None when the page is rendered from a gradebook."""
    given = resources["nbgrader"].get(GIVEN)
    if given is None:
        return None
    _, points, waiting = given["grades"][grade_id]
    return waiting, points
