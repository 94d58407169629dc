"""Formulas as MathML, written into the pages when the site is built (latex2mathml, pure Python).

Browsers draw MathML themselves, so the site shows its formulas opened from disk, offline, with
no script and nothing fetched from a CDN (Sphinx's default, MathJax, loads its script from one).
The TeX is the course's own (the lessons' Markdown and these pages): TeX that latex2mathml cannot
read is a warning, so the build (``-W``) fails rather than show a broken formula.
"""
import html

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)


def to_mathml(tex, display, node):
    from latex2mathml.converter import convert

    try:
        return convert(tex, display="block" if display else "inline")
    except Exception as error:     # latex2mathml raises many kinds on TeX it does not know
        logger.warning("formula not converted to MathML (%s: %s): %s", type(error).__name__, error, tex,
                       location=node)
        return f'<code class="tex">{html.escape(tex)}</code>'


def visit_math(self, node):
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(to_mathml(node.astext(), False, node))
    self.body.append("</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node):
    from sphinx.util.math import get_node_equation_number

    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, "Link to this equation")
        self.body.append("</span>")
    # Several equations separated by blank lines are one block each, as MathJax would align them.
    for part in (p for p in node.astext().split("\n\n") if p.strip()):
        tex = part if r"\\" not in part or r"\begin" in part else r"\begin{aligned}" + part + r"\end{aligned}"
        self.body.append(to_mathml(tex, True, node))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
