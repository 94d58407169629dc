"""The feedback page's exporter (``GenerateFeedback.exporter_class``): nbgrader's page with the
course's template (``templates/attention_feedback``), formulas as MathML, a Content-Security-Policy."""
from pathlib import Path

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter

TEMPLATES = Path(__file__).with_name("templates")


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
