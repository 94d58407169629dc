"""Sanitize step for ``nbgrader autograde``: put back every test and locked cell a learner removed.

nbgrader's own ``add_missing_cells`` re-inserts a missing grade cell after the *previous source
cell*, and fails when that one is missing too (deleting a visible check together with its hidden
test is enough). Here each missing test, written-answer or locked cell goes back after the nearest
earlier cell that is still there, as runnable code. A deleted solution cell is not restored (its
stored source is the instructor's); it is reported instead, and its tests fail with a NameError.
What was restored is recorded in the notebook's metadata for ``grading-notes.json``.
"""
import nbformat
from nbgrader import utils
from nbgrader.preprocessors import OverwriteCells


class RestoreCells(OverwriteCells):
    """OverwriteCells, with missing cells restored in place and deleted answers reported."""

    def preprocess(self, nb, resources):
        # A duplicated cell keeps nbgrader metadata without a grade_id (DeduplicateIds removed
        # it), which nbgrader would then reject as "old metadata" and fail the whole notebook.
        for cell in nb.cells:
            if "nbgrader" in cell.metadata and "grade_id" not in cell.metadata["nbgrader"]:
                del cell.metadata["nbgrader"]
        return super().preprocess(nb, resources)

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
        notes = nb.metadata.setdefault("attention_grading", {})
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
        cell = nbformat.from_dict(cell)     # nested nodes too (metadata.nbgrader)
        if utils.is_solution(cell):  # a deleted written answer comes back empty
            cell.source = "YOUR ANSWER HERE"
        return cell
