"""The feedback page's exporter (``GenerateFeedback.exporter_class``): nbgrader's page with the
course's template (``templates/attention_feedback``), formulas as MathML, a Content-Security-Policy.

A page is rendered once: nbconvert's ``HTMLExporter`` parses its own page again with BeautifulSoup
(about half of a page's cost) only to give images without one an ``alt`` text and JupyterLab's
cells a ``tabindex``; this template has no JupyterLab cells, and ``FigureOutputs`` gives every
picture it keeps its ``alt`` text before the page is written. Highlighted code and Markdown are
kept per process (``_cached_highlight``, ``_cached_markdown``): a lesson's own cells are the same
on every learner's page, so pygments and the Markdown parser run on each once per worker.
"""
import functools
from pathlib import Path

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.exporters.html import WidgetsDataTypeFilter
from nbconvert.filters.highlight import Highlight2HTML

TEMPLATES = Path(__file__).with_name("templates")
CACHED = 4096          # highlighted sources and rendered Markdown kept per process (strings)


@functools.lru_cache(maxsize=CACHED)
def _cached_markdown(source, embed_images, path, anchor_link_text, exclude_anchor_links, lexer_options):
    from .maths import markdown_with_mathml

    return markdown_with_mathml(source, attachments={}, embed_images=embed_images, path=path,
                                anchor_link_text=anchor_link_text, exclude_anchor_links=exclude_anchor_links,
                                **dict(lexer_options))


class _CachedHighlight:
    """nbconvert's ``highlight_code`` filter, each (source, language) highlighted once per process."""

    def __init__(self, highlighter):
        self.highlighter = highlighter
        self.cached = functools.lru_cache(maxsize=CACHED)(self._highlight)

    def _highlight(self, source, language, magics_language):
        return self.highlighter(source, language, {"magics_language": magics_language} if magics_language else None)

    def __call__(self, source, language=None, metadata=None):
        return self.cached(source, language, (metadata or {}).get("magics_language"))


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
        self._highlighters = {}

    @pass_context
    def markdown2html(self, context, source):
        """nbconvert's Markdown filter, with formulas as MathML (``maths``)."""
        from .maths import markdown_with_mathml

        cell = context.get("cell", {})
        path = context.get("resources", {}).get("metadata", {}).get("path", "")
        attachments = cell.get("attachments", {})
        if not attachments:     # the folder matters only to embedded images (nbconvert's ``_src_to_base64``)
            return _cached_markdown(source, self.embed_images, path if self.embed_images else "", self.anchor_link_text,
                                    self.exclude_anchor_links, tuple(sorted(self.lexer_options.items())))
        return markdown_with_mathml(
            source, attachments=attachments, embed_images=self.embed_images, path=path,
            anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options)

    def _highlighter(self, lexer):
        if lexer not in self._highlighters:
            self._highlighters[lexer] = _CachedHighlight(Highlight2HTML(pygments_lexer=lexer, parent=self))
        return self._highlighters[lexer]

    def from_notebook_node(self, nb, resources=None, **kw):
        """The page, with the course's Content-Security-Policy first in its head: what
        ``HTMLExporter.from_notebook_node`` does but its BeautifulSoup pass (see the module)."""
        from .csp import with_meta

        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        resources = self._init_resources(resources)
        self.register_filter("highlight_code", self.filters.get("highlight_code", self._highlighter(lexer)))
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return with_meta(page), resources
