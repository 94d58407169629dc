"""What a feedback page shows of a submission's grades, read from the course gradebook once, in
the grader's process, and handed to the feedback job as data (``steps.given_grades``).

nbgrader's ``GetGrades`` asks a gradebook, cell by cell, for each grade's ``score`` and
``max_score``, each comment's ``comment`` and the notebook's ``score``, ``max_score`` and
``late_submission_penalty``. Those are SQL expressions of nbgrader's tables (``nbgrader.api``);
``page_grades`` computes the same from a submission's ``standing.Standing`` (read after the
store, or now) and the lesson's maximum scores (``LessonMaxima``, read once a lesson):

- a grade's score: its manual score if set, else its automatic score, else 0; plus its extra
  credit (``Grade.score``); its maximum, its grade or task cell's (``Grade.max_score``);
- a comment: the manual one if set, else the automatic one (``Comment.comment``);
- the notebook's score, the sum of its grades' (``SubmittedNotebook.score``, summed exactly:
  ``math.fsum``); its maximum, the lesson notebook's (``Notebook.max_score``, as stored).
"""
import math


class LessonMaxima:
    """{lesson: {notebook: ({grade_id: max score}, the notebook's max score)}}, each lesson read
    from the gradebook the first time it is asked for."""

    def __init__(self):
        self.read = {}

    def __call__(self, gb, lesson):
        if lesson not in self.read:
            assignment = gb.find_assignment(lesson)
            self.read[lesson] = {
                nb.name: ({cell.name: cell.max_score for cell in [*nb.grade_cells, *nb.task_cells]}, nb.max_score)
                for nb in assignment.notebooks}
        return self.read[lesson]


def _score(auto, manual, extra):
    """nbgrader's ``Grade.score``."""
    chosen = manual if manual is not None else auto
    return 0.0 if chosen is None else chosen + (extra if extra is not None else 0.0)


def page_grades(standing, maxima, notebook):
    """The data ``steps.given_grades.GivenGrades`` writes into ``notebook``'s page (its ``GIVEN``
    form), from ``standing`` and the lesson's ``maxima`` (``LessonMaxima``)."""
    cells, max_score = maxima.get(notebook, ({}, 0.0))
    grades, scores = {}, []
    for name, (auto, manual, extra, _) in standing.grades.get(notebook, {}).items():
        score = _score(auto, manual, extra)
        scores.append(score)
        points = cells.get(name)
        grades[name] = [score, 0.0 if points is None else points, manual is None and auto is None]
    comments = {name: manual if manual is not None else auto
                for name, (auto, manual) in standing.comments.get(notebook, {}).items()}
    return {"grades": grades, "comments": comments, "score": math.fsum(scores), "max_score": max_score,
            "late_penalty": standing.penalties.get(notebook)}

