"""Autograde and feedback step: no HTML or JavaScript a learner wrote or printed ever runs in the
instructor's browser (the formgrader, the feedback, an autograded notebook opened in a page).

Sanitised with bleach, the sanitiser nbconvert uses for ``HTMLExporter.sanitize_html``:
- code cell outputs (printed by learner code): HTML and Markdown are always cleaned (only
  harmless tags and attributes kept);
  JavaScript, SVG and every other type that a page could run are dropped; text, images and
  JSON pass;
- Markdown cells (answers, and any prose a learner edited): their rendered HTML is compared with
  the same HTML cleaned by bleach; where they differ (a script, an event handler, an iframe...),
  alone or followed by the rest of a page, the cell is replaced by the cleaned HTML. Cells with nothing dangerous are left exactly as they
  are, so the lessons' math and formatting (and nbgrader's "No response" checksums) are untouched.
"""
import bleach
from bleach.css_sanitizer import CSSSanitizer
from nbconvert.filters.markdown import markdown2html
from nbgrader.preprocessors import NbGraderPreprocessor

SAFE_OUTPUT_TYPES = {"text/plain", "image/png", "image/jpeg", "image/gif", "application/json",
                     "text/latex", "metadata"}
CLEANED_OUTPUT_TYPES = {"text/html", "text/markdown"}
TAGS = {"a", "abbr", "acronym", "b", "blockquote", "br", "code", "dd", "del", "details", "div",
        "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li",
        "ol", "p", "pre", "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table",
        "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var", "caption", "colgroup", "col"}
ATTRIBUTES = {"*": ["class", "id", "title", "align", "style"], "a": ["href", "title", "rel"],
              "img": ["src", "alt", "width", "height"], "td": ["colspan", "rowspan"],
              "th": ["colspan", "rowspan", "scope"], "ol": ["start"]}
PROTOCOLS = {"http", "https", "mailto", "data"}   # data: for inline images; no javascript:
_CSS = CSSSanitizer()


def clean(html):
    """``html`` with only harmless tags, attributes, link protocols and styles left."""
    return bleach.clean(html, tags=TAGS, attributes=ATTRIBUTES, protocols=PROTOCOLS,
                        css_sanitizer=_CSS, strip=False, strip_comments=True)


def _serialised(html):
    """``html`` parsed and written back by the same parser, every tag and attribute kept, so that
    only what ``clean`` removes can make the two differ."""
    return bleach.clean(html, tags=_every_tag(html), attributes=lambda *_: True,
                        protocols=PROTOCOLS | {"javascript", "vbscript", "file"},
                        css_sanitizer=_PermissiveCSS(), strip=False, strip_comments=True)


class _PermissiveCSS(CSSSanitizer):
    def sanitize_css(self, style):
        return _CSS.sanitize_css(style)     # styles are judged by ``clean`` alone: no difference here


def _every_tag(html):
    from html.parser import HTMLParser

    tags = set()

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.add(tag)

        handle_startendtag = handle_starttag

    Collector(convert_charrefs=True).feed(html)
    return tags | TAGS | {"script", "style", "iframe", "object", "embed", "svg", "math", "form",
                          "input", "button", "link", "meta", "base", "video", "audio", "source"}


# A page goes on after a cell's HTML: an unfinished tag or attribute would take in what follows.
CONTEXTS = ("", ">", '">', "'>", "--></p></div>")


def dangerous(html):
    """Does ``html`` hold anything ``clean`` would remove (a script, a handler, a frame...), alone
    or followed by the rest of a page?"""
    return any(clean(html + tail) != _serialised(html + tail) for tail in CONTEXTS)


class SanitizeLearnerHTML(NbGraderPreprocessor):
    """Clean learner-controlled HTML (see the module docstring)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                data = output.get("data")
                if not data:
                    continue
                for key in list(data):
                    if key in SAFE_OUTPUT_TYPES:
                        continue
                    if key in CLEANED_OUTPUT_TYPES:      # printed by learner code: always cleaned
                        text = "".join(data[key]) if isinstance(data[key], list) else data[key]
                        del data[key]
                        data["text/html"] = clean(markdown2html(text) if key == "text/markdown" else text)
                    else:
                        del data[key]
        elif cell.cell_type in ("markdown", "raw"):
            html = markdown2html(cell.source) if cell.cell_type == "markdown" else cell.source
            if dangerous(html):
                cell.source = clean(html)
        return cell, resources
