"""Formulas in the feedback as MathML, written into the page when it is made (latex2mathml, pure
Python): browsers draw MathML themselves, so a page shows its formulas opened from disk, offline,
in an air-gapped lab or in the formgrader, and loads no script at all (nothing for a
Content-Security-Policy to allow, no MathJax from a CDN).

The TeX is what nbconvert's Markdown parser finds (``$...$``, ``$$...$$``, ``\\(...\\)``,
``\\[...\\]``, ``\\begin{...}...\\end{...}``); a learner writes some of it, so the MathML is
cleaned (MathML elements and presentation attributes only) before it enters the page. TeX that
latex2mathml cannot read stays as code, readable.
"""
import functools
import html

import bleach
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
    return bleach.clean(markup, tags=MATHML_TAGS, attributes={"*": MATHML_ATTRIBUTES}, strip=True,
                        strip_comments=True)


class MathMLRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer, with formulas as MathML instead of TeX left for MathJax."""

    def block_math(self, body):
        return to_mathml(body, display=True)

    def inline_math(self, body):
        return to_mathml(body)

    def latex_environment(self, name, body):
        return to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


def markdown_with_mathml(source, **renderer_options):
    """Markdown to HTML as nbconvert's ``markdown2html`` does, formulas as MathML."""
    return MarkdownWithMath(renderer=MathMLRenderer(escape=False, **renderer_options)).render(source)
