"""Feedback step: what a learner reads of a test cell is never the hidden test."""
import re

from nbgrader.preprocessors import NbGraderPreprocessor

HIDDEN_BLOCK = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*$",
                          re.DOTALL | re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PATHS = re.compile(r"(/[^\s'\"]*)?/(instructor|attention_grading|attention_reference)\b[^\s'\"]*")


def scrub(text):
    """Drop terminal colours and any path that would point at instructor files."""
    return PATHS.sub("<instructor files>", ANSI.sub("", text))


class HideHiddenTests(NbGraderPreprocessor):
    """Replace hidden test code with a note and reduce errors in test cells to their message."""

    def preprocess_cell(self, cell, resources, index):
        grading = cell.metadata.get("nbgrader", {})
        is_test = grading.get("grade") and not grading.get("solution") and cell.cell_type == "code"
        if is_test:
            cell.source = HIDDEN_BLOCK.sub("# (hidden tests run here; their code is not shown)", cell.source)
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    message = scrub(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
                    output["evalue"] = scrub(output.get("evalue", ""))
                    output["traceback"] = [message]
                elif output.get("output_type") == "stream":
                    output["text"] = scrub(output.get("text", ""))
        return cell, resources
