"""Build learner submissions from the release and the solutions, as a learner would.

Which cell plays which role is known in one place, the grader's ``attention_grading.cells``.
"""
import asyncio

import nbformat

from attention_grading.cells import CellPlan, grade_id, is_solution_code, is_test, role as cell_role

__all__ = ["cell_role", "execute", "grade_id", "is_solution_code", "is_test", "functions_of_tests", "lean",
           "solved", "with_answer"]


def execute(client):
    """Run an nbclient ``NotebookClient`` on an event loop of its own, closed when it is done.

    ``client.execute()`` leaves its thread's loop open; once the thread ends (or ``asyncio.run``
    replaces the loop) garbage collection reports it in whatever test happens to be running.
    """
    return asyncio.run(client.async_execute())


def functions_of_tests(nb):
    """Map each test cell's grade_id to the graded function (solution cell) it follows."""
    return CellPlan(nb.cells).exercise_of_checks()


def solved(release_path, solution_path):
    """The release with every answer cell filled in from the solution notebook."""
    release = nbformat.read(release_path, as_version=4)
    answers = {grade_id(c): c.source for c in nbformat.read(solution_path, as_version=4).cells
               if cell_role(c).get("solution")}
    for cell in release.cells:
        if cell_role(cell).get("solution"):
            cell.source = answers[grade_id(cell)]
    return release


def with_answer(nb, function, source):
    """A copy of ``nb`` whose solution cell ``function`` holds ``source``."""
    nb = nbformat.from_dict(nb)
    matches = [c for c in nb.cells if grade_id(c) == function and is_solution_code(c)]
    assert len(matches) == 1, f"no single solution cell with grade_id {function!r}"
    matches[0].source = source.strip("\n")
    return nb


def lean(nb):
    """The notebook without its demonstrations (a learner may delete them): every cell nbgrader
    knows (setup, answers, tests, written answers) and nothing else, so that it grades quickly."""
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if cell_role(c)]
    return nb
