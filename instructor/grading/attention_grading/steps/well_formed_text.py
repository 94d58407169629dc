"""Autograde and sanitize step: a notebook's text well-formed (``learner_text.well_formed``), before
anything else reads it and after the kernel added its outputs: any text is graded."""
from nbgrader.preprocessors import NbGraderPreprocessor

from ..learner_text import well_formed_value


class WellFormedText(NbGraderPreprocessor):
    """Every string of the notebook ``well_formed`` (its cells, outputs, metadata, attachments)."""

    def preprocess(self, nb, resources):
        well_formed_value(nb)
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        return cell, resources
