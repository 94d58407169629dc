"""The lessons in the course gradebook: added when missing, their stored hidden tests checked
against ``source/``, and each lesson's cells as plain data a job carries.

A grading job needs no gradebook: the steps that restore a notebook's cells read the lesson as the
gradebook holds it from ``LessonCells`` (read here once per lesson, carried by every job of it),
through ``LessonBook``, the few reads nbgrader's ``OverwriteCells`` and ``OverwriteKernelspec``
make of a gradebook. A feedback job needs none either: it carries what its page shows of the
grades (``page_grades``).
"""
import logging
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

from ..course import load_config
from ..errors import GradebookError


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
            raise GradebookError(f"generate_assignment failed for {lesson}:\n{done['log']}{done.get('error', '')}")


def stored_test_mismatches(root, db_url, course_id, lessons):
    """{lesson: [grade cell ids]} whose hidden tests stored in the gradebook differ from source/.

    Autograding restores every test cell from the gradebook; a stale or altered copy there would
    grade with tests the instructor did not write.
    """
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    from ..cells import is_test, grade_id

    mismatches = {}
    with Gradebook(db_url, course_id) as gb:
        for lesson in lessons:
            nb = nbformat.read(Path(root) / "source" / lesson / f"{lesson}.ipynb", as_version=4)
            wanted = {grade_id(c): c.source for c in nb.cells if is_test(c)}
            try:
                stored = {c.name: c.source for c in gb.find_notebook(lesson, lesson).source_cells}
            except MissingEntry:
                continue                   # not in the gradebook yet: ensure_assignments adds it
            changed = sorted(name for name, source in wanted.items() if stored.get(name) != source)
            if changed:
                mismatches[lesson] = changed
    return mismatches


@dataclass
class LessonCells:
    """A lesson's notebook as the gradebook holds it (plain data: it travels with every job)."""
    lesson: str
    kernelspec: Optional[str] = None
    source_cells: list = field(default_factory=list)     # [name, cell_type, locked, source, checksum]
    grade_cells: list = field(default_factory=list)      # [name, max_score, cell_type]
    solution_cells: list = field(default_factory=list)   # [name]
    task_cells: list = field(default_factory=list)       # [name, max_score, cell_type]

    @classmethod
    def read(cls, gb, lesson):
        """The lesson's notebook in the open gradebook ``gb`` (its notebook is named after it)."""
        nb = gb.find_notebook(lesson, lesson)
        return cls(lesson, nb.kernelspec,
                   [[c.name, c.cell_type, c.locked, c.source, c.checksum] for c in nb.source_cells],
                   [[c.name, c.max_score, c.cell_type] for c in nb.grade_cells],
                   [[c.name] for c in nb.solution_cells],
                   [[c.name, c.max_score, c.cell_type] for c in nb.task_cells])

    def book(self):
        return LessonBook(self)


class LessonBook:
    """What the restoring steps read of a gradebook, answered from ``LessonCells``: the lesson's
    notebook and its cells by name (``MissingEntry`` for any other)."""

    def __init__(self, cells):
        def record(keys, values):
            return SimpleNamespace(**dict(zip(keys, values)))

        self.lesson = cells.lesson
        self.notebook = SimpleNamespace(
            name=cells.lesson, kernelspec=cells.kernelspec,
            source_cells=[record(("name", "cell_type", "locked", "source", "checksum"), c) for c in cells.source_cells],
            grade_cells=[record(("name", "max_score", "cell_type"), c) for c in cells.grade_cells],
            solution_cells=[record(("name",), c) for c in cells.solution_cells],
            task_cells=[record(("name", "max_score", "cell_type"), c) for c in cells.task_cells])

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return None

    def find_notebook(self, notebook, assignment):
        self._check(notebook, assignment)
        return self.notebook

    def _check(self, notebook, assignment):
        from nbgrader.api import MissingEntry

        if (notebook, assignment) != (self.lesson, self.lesson):
            raise MissingEntry()

    def _named(self, cells, name, notebook, assignment):
        from nbgrader.api import MissingEntry

        self._check(notebook, assignment)
        for cell in cells:
            if cell.name == name:
                return cell
        raise MissingEntry()

    def find_source_cell(self, name, notebook, assignment):
        return self._named(self.notebook.source_cells, name, notebook, assignment)

    def find_grade_cell(self, name, notebook, assignment):
        return self._named(self.notebook.grade_cells, name, notebook, assignment)

    def find_graded_cell(self, name, notebook, assignment):
        """A grade cell or a task cell (nbgrader's ``find_graded_cell``)."""
        return self._named([*self.notebook.grade_cells, *self.notebook.task_cells], name, notebook, assignment)

