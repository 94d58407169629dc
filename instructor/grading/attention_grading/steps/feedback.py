"""The feedback learners read (``generate_feedback``): verdicts, never the hidden tests.

Stock nbgrader puts the autograded notebook, hidden test source and full tracebacks
included, into the feedback, and lists its checks as anonymous "Test cell" rows with written
answers nobody has graded yet at 0 points. Learners should see each check's name (its
docstring), pass or fail, points and the diagnosis, written answers as awaiting manual grading,
and not the hidden test code, the reference, or where the instructor's files live:

- ``HideHiddenTests``: hidden blocks replaced by a note, errors in test cells reduced to their
  message, instructor paths scrubbed;
- ``LabelGradedCells``: each graded cell's name, and which written answers await grading;
- ``FigureOutputs``: a figure the grader drew (the learner's own cells, ``GuardedExecute``) is
  shown as a picture, up to a size; one it did not draw (the lesson's own) says so in words;
- ``FeedbackExporter``: nbgrader's feedback page, with those names (``templates/attention_feedback``),
  formulas as MathML (``maths``: no script, readable offline), long lines wrapped, and a
  Content-Security-Policy (``csp.FEEDBACK_POLICY``) that runs no script but the course's own files.
"""
import base64
import re
from pathlib import Path

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

TEMPLATES = Path(__file__).with_name("templates")

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


class LabelGradedCells(NbGraderPreprocessor):
    """Name each graded cell for the feedback page (``templates/attention_feedback``): a test by
    its exercise and what it checks (its docstring), a written answer by its question; and mark
    written answers the instructor has not graded yet, whose points stay out of the score shown.

    Runs after nbgrader's ``GetGrades``, which has put each cell's score and points in its
    metadata; whether a written answer is graded yet is read from the gradebook.
    """

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        from ..cells import CellPlan, check_title, grade_id, is_written_answer

        plan = CellPlan(nb.cells)
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


FIGURE_TEXT = re.compile(r"^<Figure size [0-9.]+x[0-9.]+ with \d+ Axes>$")


class FigureOutputs(NbGraderPreprocessor):
    """Pictures in the feedback up to ``max_image_bytes`` each; in words, the figures the grader
    did not draw and the pictures too large for the page."""

    max_image_bytes = Integer(400_000, help="Largest picture (bytes, decoded) a feedback page shows; a "
                              "larger one is named, not shown.").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data")
            if not data:
                continue
            text = "".join(data.get("text/plain", "")).strip()
            images = [key for key in data if key.startswith("image/")]
            if not images and FIGURE_TEXT.match(text):
                data["text/plain"] = "[a figure of the lesson: it is drawn when you run the notebook]"
            for key in images:
                size = len(base64.b64decode("".join(data[key]), validate=False))
                if size > self.max_image_bytes:
                    output["data"] = {"text/plain": f"[a picture of {size // 1000} kB, larger than this page "
                                                    f"shows ({self.max_image_bytes // 1000} kB): run the "
                                                    "notebook to see it]"}
                    output.get("metadata", {}).clear()
                    break
        return cell, resources


class FeedbackExporter(HTMLExporter):
    """nbgrader's feedback HTML exporter with the course's template (``attention_feedback``,
    which extends nbgrader's own): set as ``GenerateFeedback.exporter_class``, so the formgrader
    and other exports keep their templates."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra_template_basedirs = [str(TEMPLATES), *self.extra_template_basedirs]
        self.template_name = "attention_feedback"
        self.template_file = "attention.html.j2"
        self.template_paths = self._template_paths()    # computed once, from the old name

    @pass_context
    def markdown2html(self, context, source):
        """nbconvert's Markdown filter, with formulas as MathML (``maths``)."""
        from .maths import markdown_with_mathml

        cell = context.get("cell", {})
        return markdown_with_mathml(
            source, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options)

    def from_notebook_node(self, nb, resources=None, **kw):
        """The page, with the course's Content-Security-Policy first in its head."""
        from .csp import with_meta

        page, resources = super().from_notebook_node(nb, resources, **kw)
        return with_meta(page), resources
