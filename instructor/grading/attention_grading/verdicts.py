"""Autograde step after ``GuardedExecute``: the grader's verdicts become the outputs nbgrader scores.

A hidden test cell scores when it shows no error: this step appends to each one the verdict the
grader decided (``execute.GuardedExecute`` ran the test from outside the kernel), as a line on
stdout when it passed and as an error with the diagnosis when it did not. A hidden test that never
got a verdict (the notebook ran out of time, say) shows why and scores 0. The notes of the run
(``results.NotebookNotes``) are written to ``grading-notes.json`` beside the autograded notebook.
"""
import json
import os
from pathlib import Path

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from .cells import CellPlan, grade_id
from .cells import error_output, has_error
from .execute import NOTES_KEY
from .results import NotebookNotes, Verdict

NOTES_FILE = "grading-notes.json"


def verdict_output(verdict):
    if verdict.passed:
        return NotebookNode(output_type="stream", name="stdout",
                            text=f"{verdict.check}: hidden tests passed ({verdict.cases} cases).\n")
    return error_output("HiddenTestFailure", verdict.message)


class ApplyVerdicts(NbGraderPreprocessor):
    """Append each hidden test's verdict to its cell; write ``grading-notes.json``."""

    def preprocess(self, nb, resources):
        notes = NotebookNotes.from_dict(resources.get(NOTES_KEY) or {})
        for index, name in CellPlan(nb.cells).hidden.items():
            cell = nb.cells[index]
            if has_error(cell):
                continue                  # its visible part failed: it scores 0 already
            data = notes.verdicts.get(grade_id(cell))
            if data is None:
                cell.outputs.append(error_output("HiddenTestNotRun", f"the hidden test of {name} did not run "
                                                 "(the notebook ran out of time, or the kernel could not be restarted)"))
            else:
                cell.outputs.append(verdict_output(Verdict.from_dict(data)))
        folder = (resources.get("metadata") or {}).get("path")
        if folder and os.environ.get("NBGRADER_EXECUTION") == "autograde":
            Path(folder, NOTES_FILE).write_text(json.dumps(notes.as_dict(), indent=1))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        return cell, resources
