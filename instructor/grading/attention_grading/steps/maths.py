"""Formulas in the feedback as MathML, written into the page when it is made (latex2mathml, pure
Python): browsers draw MathML themselves, so a page shows its formulas opened from disk, offline,
in an air-gapped lab or in the formgrader, and loads no script at all (nothing for a
Content-Security-Policy to allow, no MathJax from a CDN).

The TeX is what nbconvert's Markdown parser finds (``$...$``, ``$$...$$``, ``\\(...\\)``,
``\\[...\\]``, ``\\begin{...}...\\end{...}``), and, in a cell stored as HTML (the sanitiser stores
a learner's Markdown as its rendered HTML, ``sanitize.rendered``), the formulas nbconvert's
renderer left in its text for MathJax (``formulas_in_html``). A learner writes some of it, so the
MathML is cleaned (MathML elements and presentation attributes only) before it enters the page.
TeX that latex2mathml cannot read stays as code, readable.
"""
import functools
import html
import re
from html.parser import HTMLParser

import nh3
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

MATHML_TAGS = {"math", "mi", "mn", "mo", "ms", "mspace", "mtext", "mrow", "mfrac", "msqrt", "mroot",
               "mstyle", "merror", "mpadded", "mphantom", "mfenced", "menclose", "msub", "msup", "msubsup",
               "munder", "mover", "munderover", "mmultiscripts", "mprescripts", "none", "mtable", "mtr",
               "mtd", "mlabeledtr", "semantics", "annotation"}
MATHML_ATTRIBUTES = ["display", "xmlns", "mathvariant", "mathsize", "stretchy", "fence", "separator",
                     "lspace", "rspace", "largeop", "movablelimits", "accent", "accentunder", "width",
                     "height", "depth", "linethickness", "columnalign", "rowalign", "columnspacing",
                     "rowspacing", "columnlines", "rowlines", "frame", "displaystyle", "scriptlevel",
                     "notation", "open", "close", "separators", "form", "symmetric", "minsize", "maxsize",
                     "encoding", "columnspan", "rowspan"]


@functools.lru_cache(maxsize=4096)
def to_mathml(tex, display=False):
    """``tex`` as clean MathML (inline, or a block with ``display``), or as code if unreadable."""
    from latex2mathml.converter import convert

    try:
        markup = convert(tex, display="block" if display else "inline")
    except Exception:      # latex2mathml raises many kinds on TeX it does not know
        return f'<code class="tex">{html.escape(tex)}</code>'
    return nh3.clean(markup, tags=MATHML_TAGS, attributes={"*": set(MATHML_ATTRIBUTES)}, strip_comments=True,
                     link_rel=None)


# A formula as nbconvert's Markdown renderer writes it into HTML for MathJax (``$$...$$`` for
# display maths written either way, ``$...$`` for inline, LaTeX environments as written; the TeX
# escaped for HTML): nbconvert's own patterns.
RENDERED_FORMULA = re.compile(r"(?<!\\)\$\$(?P<display>.*?)(?<!\\)\$\$"
                              r"|(?<![$\\])\$(?P<inline>.+?)(?<![$\\])\$"
                              r"|(?P<environment>\\begin\{(?P<name>[a-z]*\*?)\}.*?\\end\{(?P=name)\})", re.DOTALL)


def _formulas_as_mathml(text):
    """``text`` (a run of HTML text, entities as written) with each formula as MathML."""
    def replace(match):
        if match["inline"] is not None:
            return to_mathml(html.unescape(match["inline"]))
        return to_mathml(html.unescape(match["display"] if match["display"] is not None else match["environment"]),
                         display=True)

    return RENDERED_FORMULA.sub(replace, text)


class _FormulasInText(HTMLParser):
    """Rewrites a piece of HTML, its markup as written, the formulas in its text as MathML; text
    inside code, pre, existing MathML, script, style and textarea stays as it is."""

    VERBATIM = {"code", "pre", "math", "script", "style", "textarea", "kbd", "samp"}

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.out, self.text, self.verbatim = [], [], []

    def _flush(self):
        text = "".join(self.text)
        self.out.append(text if self.verbatim else _formulas_as_mathml(text))
        self.text = []

    def _markup(self, raw):
        self._flush()
        self.out.append(raw)

    def handle_starttag(self, tag, attrs):
        self._markup(self.get_starttag_text())
        if tag in self.VERBATIM:
            self.verbatim.append(tag)

    def handle_startendtag(self, tag, attrs):
        self._markup(self.get_starttag_text())

    def handle_endtag(self, tag):
        self._markup(f"</{tag}>")
        if tag in self.verbatim:
            del self.verbatim[len(self.verbatim) - 1 - self.verbatim[::-1].index(tag):]

    def handle_data(self, data):
        self.text.append(data)

    def handle_entityref(self, name):
        self.text.append(f"&{name};")

    def handle_charref(self, name):
        self.text.append(f"&#{name};")

    def handle_comment(self, data):
        self._markup(f"<!--{data}-->")

    def handle_decl(self, decl):
        self._markup(f"<!{decl}>")

    def handle_pi(self, data):
        self._markup(f"<?{data}>")

    def unknown_decl(self, data):
        self._markup(f"<![{data}]>")

    def rewritten(self, markup):
        self.feed(markup)
        self.close()
        self._flush()
        return "".join(self.out)


def formulas_in_html(markup):
    """``markup`` (HTML) with the formulas nbconvert's Markdown renderer left in its text as clean
    MathML (``to_mathml``); its tags and attributes as they were."""
    return _FormulasInText().rewritten(markup)


class MathMLRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer, with formulas as MathML instead of TeX left for MathJax,
    those of HTML blocks too (a learner's Markdown, stored by the sanitiser as HTML)."""

    def block_html(self, html):
        return formulas_in_html(super().block_html(html))

    def block_math(self, body):
        return to_mathml(body, display=True)

    def inline_math(self, body):
        return to_mathml(body)

    def latex_environment(self, name, body):
        return to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


def markdown_with_mathml(source, **renderer_options):
    """Markdown to HTML as nbconvert's ``markdown2html`` does, formulas as MathML."""
    return MarkdownWithMath(renderer=MathMLRenderer(escape=False, **renderer_options)).render(source)
