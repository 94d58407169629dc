"""Sanitize steps for ``nbgrader autograde``: a graded cell is what the gradebook says it is.

A learner can change any cell's nbgrader metadata (its points, its grade, solution or locked flag,
its ``grade_id``, its checksum, its type) or delete cells. None of that may change a point or make
the submission ungradable:

- ``DropUnreadableMetadata`` (first, before nbgrader's ``DeduplicateIds``) drops nbgrader metadata
  that nbgrader's own steps cannot read (not an object, no ``grade_id`` string);
- ``RestoreCells`` gives every cell whose ``grade_id`` the gradebook knows exactly the gradebook's
  metadata (flags, points, checksum, type; the source too when it is locked), and drops the
  nbgrader metadata of any other cell (a learner's own "graded" cell grades nothing). Then it puts
  back every test and locked cell a learner removed: nbgrader's own ``add_missing_cells``
  re-inserts a missing grade cell after the *previous source cell*, and fails when that one is
  missing too (deleting a visible check together with its hidden test is enough); here each goes
  back after the nearest earlier cell that is still there, as runnable code. A deleted solution
  cell is not restored (its stored source is the instructor's); it is reported instead, and its
  tests fail with a NameError.

- ``RestoreKernelspec`` is nbgrader's ``OverwriteKernelspec``: the notebook's kernel is the lesson's.

``RestoreCells`` also gives every graded cell the name of its hidden test exactly as the lesson's
source notebook has it (``metadata.attention_course.spec``, ``cells.SPEC_METADATA``: the gradebook
has no place for it), and drops the learner's copy of it from every cell: which hidden test a cell
runs is never read from what a learner handed in. Where ``source/<lesson>/<lesson>.ipynb`` is not
at hand, no cell names one, and grading stops with ``UnnamedHiddenTest``.

What was restored is recorded in the notebook's metadata for ``grading-notes.json``. The lesson's
cells come from the gradebook under plain ``nbgrader autograde``, and from the grading job under
``make grade`` (``resources[LESSON_KEY]``, ``store.lessons.LessonBook``): the same reads, no
gradebook in the job.
"""
import json
import os
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells, OverwriteKernelspec

from ..cells import SPEC_METADATA, grade_id, spec_of
from ..results import LESSON_KEY, NOTES_KEY


def lesson_cells(resources):
    """What the step reads the lesson's cells from: the job's ``LessonBook``, else the gradebook
    nbgrader names (both are context managers)."""
    book = resources.get(LESSON_KEY)
    return book if book is not None else Gradebook(resources["nbgrader"]["db_url"])


def lesson_specs(course_root, lesson):
    """{grade_id: the hidden test it names} of the lesson's source notebook
    (``source/<lesson>/<lesson>.ipynb`` of the course: under ``make grade`` the job's scratch
    course, which holds it), or {} when it is not at hand."""
    path = Path(course_root, "source", str(lesson), f"{lesson}.ipynb")
    if not (lesson and path.is_file()):
        return {}
    cells = nbformat.read(path, as_version=4).cells
    return {grade_id(c): spec_of(c) for c in cells if grade_id(c) and spec_of(c)}


SCHEMA_VERSION = 3


class DropUnreadableMetadata(NbGraderPreprocessor):
    """Drop nbgrader metadata that is not an object with a ``grade_id`` string (nbgrader's steps
    would fail on it, and the gradebook cannot know such a cell)."""

    def preprocess_cell(self, cell, resources, index):
        meta = cell.get("metadata")
        if not isinstance(meta, dict):
            cell["metadata"] = NotebookNode()
        elif "nbgrader" in meta and not (isinstance(meta["nbgrader"], dict)
                                         and isinstance(meta["nbgrader"].get("grade_id"), str)):
            self.log.warning("Dropped unreadable nbgrader metadata of cell %d", index)
            del meta["nbgrader"]
        return cell, resources


class RestoreCells(OverwriteCells):
    """OverwriteCells, with every known cell's metadata the gradebook's, missing cells restored
    in place and deleted answers reported."""

    def preprocess(self, nb, resources):
        # A duplicated cell keeps nbgrader metadata without a grade_id (DeduplicateIds removed
        # it), which nbgrader would then reject as "old metadata" and fail the whole notebook.
        for cell in nb.cells:
            if "nbgrader" in cell.metadata and "grade_id" not in cell.metadata["nbgrader"]:
                del cell.metadata["nbgrader"]
        self._changed, self._unstamped, self._known = [], [], None
        # OverwriteCells.preprocess, with the lesson's cells read from the job when it carries them
        self.notebook_id = resources["nbgrader"]["notebook"]
        self.assignment_id = resources["nbgrader"]["assignment"]
        self.db_url = resources["nbgrader"]["db_url"]
        self.gradebook = lesson_cells(resources)
        self._specs = lesson_specs(self._course_root(), self.assignment_id)
        with self.gradebook:
            nb, resources = super(OverwriteCells, self).preprocess(nb, resources)
            if self.add_missing_cells:
                nb, resources = self.add_missing_grade_cells(nb, resources)
                nb, resources = self.add_missing_task_cells(nb, resources)
        nb.metadata.setdefault(NOTES_KEY, {})["restored_metadata"] = self._changed
        nb.metadata[NOTES_KEY]["unstamped_metadata"] = self._unstamped
        return nb, resources

    def _course_root(self):
        """nbgrader's course root (``CourseDirectory.root``; its default, the working directory)."""
        root = self.config["CourseDirectory"].get("root") if "CourseDirectory" in self.config else None
        return str(root) if isinstance(root, (str, os.PathLike)) and str(root) else os.getcwd()

    def preprocess_cell(self, cell, resources, index):
        name = cell.metadata.get("nbgrader", {}).get("grade_id")
        handed_in = cell.metadata.pop(SPEC_METADATA, None)       # the learner's copy: never read
        if name is not None and name in self._specs:
            cell.metadata[SPEC_METADATA] = {"spec": self._specs[name]}
        # A cell without a grade_id (a copy of a test cell: DeduplicateIds took its grade_id) just
        # loses the copied name: it runs no hidden test, so nothing was changed.
        if name is not None and handed_in is not None and handed_in != cell.metadata.get(SPEC_METADATA):
            self.log.warning("The hidden test named by cell %s was changed: the lesson's is used", name)
            self._changed.append(name or f"cell {index}")
        if name is None:
            return cell, resources
        try:
            trusted = self._trusted_metadata(name)
        except MissingEntry:
            self.log.warning("Cell %s is not in the gradebook: its nbgrader metadata is dropped", name)
            del cell.metadata["nbgrader"]
            return cell, resources
        changed = sorted(k for k in set(trusted) | set(cell.metadata["nbgrader"])
                         if k != "checksum" and cell.metadata["nbgrader"].get(k) != trusted.get(k))
        given = cell.metadata["nbgrader"]
        if changed == ["cell_type"] and "cell_type" not in given and "checksum" not in given:
            self._unstamped.append(name)      # as solutions/ is written: no stamp, nothing else changed
        elif changed:
            self.log.warning("The nbgrader metadata of cell %s was changed (%s): the gradebook's is used",
                             name, ", ".join(changed))
            self._changed.append(name)
        cell.metadata["nbgrader"] = trusted
        return super().preprocess_cell(cell, resources, index)     # type, locked source, checksum

    def _trusted_metadata(self, name):
        """The cell's nbgrader metadata as the gradebook knows it (``MissingEntry`` if it does not)."""
        if getattr(self, "_known", None) is None:        # the gradebook's cells, read once per notebook
            notebook = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
            self._known = ({c.name: (bool(c.locked), c.checksum, c.cell_type) for c in notebook.source_cells},
                           {c.name: float(c.max_score) for c in [*notebook.grade_cells, *notebook.task_cells]},
                           {c.name for c in notebook.task_cells}, {c.name for c in notebook.solution_cells},
                           {c.name for c in notebook.grade_cells})
        sources, points, tasks, solutions, graded = self._known
        if name not in sources:
            raise MissingEntry()
        locked, checksum, cell_type = sources[name]
        meta = {"grade": name in graded, "grade_id": name, "locked": locked, "schema_version": SCHEMA_VERSION,
                "solution": name in solutions, "task": name in tasks, "checksum": checksum, "cell_type": cell_type}
        if name in points:
            meta["points"] = points[name]
        return meta

    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_cells = list(source_nb.source_cells)
        grade_ids = {cell.name for cell in source_nb.grade_cells}
        solution_ids = {cell.name for cell in source_nb.solution_cells}
        present = {cell.metadata["nbgrader"]["grade_id"] for cell in nb.cells
                   if "grade_id" in cell.metadata.get("nbgrader", {})}
        restored, missing_answers = [], []
        for position, source_cell in enumerate(source_cells):
            name = source_cell.name
            if name in present:
                continue
            if name in solution_ids and name not in grade_ids:
                missing_answers.append(name)
                continue
            if not (name in grade_ids or source_cell.locked):
                continue
            earlier = [c.name for c in source_cells[:position] if c.name in present]
            index = 0
            if earlier:
                index = 1 + max(i for i, cell in enumerate(nb.cells)
                                if cell.metadata.get("nbgrader", {}).get("grade_id") == earlier[-1])
            nb.cells.insert(index, self._restored(source_cell, name in grade_ids, name in solution_ids))
            present.add(name)
            restored.append(name)
        notes = nb.metadata.setdefault(NOTES_KEY, {})
        notes["restored_cells"] = restored
        notes["missing_answer_cells"] = missing_answers
        for name in restored:
            self.log.warning("Restored missing cell %s", name)
        for name in missing_answers:
            self.log.warning("The answer cell %s was deleted; its tests will fail", name)
        return nb, resources

    def add_missing_task_cells(self, nb, resources):
        # nbgrader's version assumes every cell with nbgrader metadata still has a grade_id;
        # DeduplicateIds removes the grade_id of a duplicated cell but leaves its metadata.
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        present = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells}
        source_ids = [cell.name for cell in source_nb.source_cells]
        for task_cell in source_nb.task_cells:
            if task_cell.name not in present:
                source_cell = source_nb.source_cells[source_ids.index(task_cell.name)]
                nb.cells.append(self.missing_cell_transform(source_cell, task_cell.max_score, is_task=True))
        return nb, resources

    def _restored(self, source_cell, graded, solution):
        meta = {"grade": graded, "grade_id": source_cell.name, "locked": source_cell.locked,
                "solution": solution, "schema_version": 3, "task": False}
        if graded:
            grade_cell = self.gradebook.find_grade_cell(source_cell.name, self.notebook_id,
                                                        self.assignment_id)
            meta["points"] = grade_cell.max_score
        cell = {"cell_type": source_cell.cell_type, "metadata": {"nbgrader": meta},
                "source": source_cell.source, "id": f"restored-{source_cell.name}"[:64]}
        if source_cell.cell_type == "code":
            cell.update(outputs=[], execution_count=None)
        if source_cell.name in self._specs:
            cell["metadata"][SPEC_METADATA] = {"spec": self._specs[source_cell.name]}
        cell = nbformat.from_dict(cell)     # nested nodes too (metadata.nbgrader)
        if utils.is_solution(cell):  # a deleted written answer comes back empty
            cell.source = "YOUR ANSWER HERE"
        return cell


class RestoreKernelspec(OverwriteKernelspec):
    """nbgrader's ``OverwriteKernelspec`` (the notebook's kernel is the lesson's), reading the
    lesson from the job when it carries it."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with lesson_cells(resources) as cells:
            kernelspec = cells.find_notebook(info["notebook"], info["assignment"]).kernelspec
        if kernelspec is not None:
            kernelspec = json.loads(kernelspec)
        if kernelspec:
            nb.metadata["kernelspec"] = kernelspec
        return nb, resources
