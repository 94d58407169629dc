"""Feedback step: the pictures a page shows, and the figures it names in words."""
import base64
import re

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

FIGURE_TEXT = re.compile(r"^<Figure size [0-9.]+x[0-9.]+ with \d+ Axes>$")
# nbconvert's own words for a picture with no description (HTMLExporter adds them to the page).
NO_DESCRIPTION = "No description has been provided for this image"


class FigureOutputs(NbGraderPreprocessor):
    """Pictures in the feedback up to ``max_image_bytes`` each, each with its ``alt`` text; in
    words, the figures the grader did not draw and the pictures too large for the page."""

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
            else:
                if images:   # the page writes it into the picture's tag (the sanitiser kept no other)
                    output.setdefault("metadata", {}).setdefault("alt", NO_DESCRIPTION)
        return cell, resources
