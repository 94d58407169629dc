"""Autograde and feedback steps: no HTML or JavaScript a learner wrote, printed or handed in ever
runs in the instructor's browser (the formgrader, the feedback, an autograded notebook opened in a
page).

Sanitised with bleach, the sanitiser nbconvert uses for ``HTMLExporter.sanitize_html``:
- code cell outputs (printed by learner code): HTML and Markdown are always cleaned (only
  harmless tags and attributes kept); output metadata keeps only numeric image sizes (nbconvert
  writes them into the page unquoted), and an image that is not base64 is dropped;
  JavaScript, SVG and every other type that a page could run are dropped; text, images and
  JSON pass;
- Markdown cells (answers, and any prose a learner edited): their rendered HTML is compared with
  the same HTML cleaned by bleach; where they differ (a script, an event handler, an iframe...),
  alone or followed by the rest of a page, the cell is replaced by the cleaned HTML. Cells with nothing dangerous are left exactly as they
  are, so the lessons' math and formatting (and nbgrader's "No response" checksums) are untouched.
"""
import functools

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


@functools.lru_cache(maxsize=4096)
def dangerous(html):
    """Does ``html`` hold anything ``clean`` would remove (a script, a handler, a frame...), alone
    or followed by the rest of a page? (Cached: the lessons' own cells recur in every submission.)"""
    return any(clean(html + tail) != _serialised(html + tail) for tail in CONTEXTS)


@functools.lru_cache(maxsize=4096)
def rendered(markdown):
    return markdown2html(markdown)


def _size(value):
    """A width or height as a plain number, or None (templates write it into a tag unquoted)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(str(value).strip().rstrip("px"))
    except ValueError:
        return None


def clean_metadata(metadata):
    """Output metadata reduced to numeric image sizes: nothing a template writes into a page
    (file names, flags, alt text) is kept from learner code."""
    out = {}
    for key, value in dict(metadata or {}).items():
        if key in ("width", "height") and _size(value) is not None:
            out[key] = _size(value)
        elif key.startswith("image/") and isinstance(value, dict):
            sizes = {k: _size(v) for k, v in value.items() if k in ("width", "height") and _size(v) is not None}
            if sizes:
                out[key] = sizes
    return out


def _is_base64(text):
    import base64
    import binascii

    try:
        base64.b64decode("".join(text) if isinstance(text, list) else text, validate=True)
        return True
    except (binascii.Error, ValueError, TypeError):
        return False


class SanitizeLearnerHTML(NbGraderPreprocessor):
    """Clean learner-controlled HTML (see the module docstring)."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if "metadata" in output:
                    output["metadata"] = clean_metadata(output["metadata"])
                data = output.get("data")
                if not data:
                    continue
                for key in list(data):
                    value = data.pop(key)
                    if key.startswith("image/") and key != "image/svg+xml":
                        if _is_base64(value):          # an image is base64, or it is not an image
                            data[key] = value
                    elif key in SAFE_OUTPUT_TYPES:
                        data[key] = value
                    elif key in CLEANED_OUTPUT_TYPES and isinstance(value, (str, list)):
                        text = "".join(map(str, value)) if isinstance(value, list) else value
                        data["text/html"] = clean(markdown2html(text) if key == "text/markdown" else text)
        elif cell.cell_type in ("markdown", "raw"):
            html = rendered(cell.source) if cell.cell_type == "markdown" else cell.source
            if dangerous(html):
                cell.source = clean(html)
        return cell, resources


class RemoveHandedInFiles(NbGraderPreprocessor):
    """Keep no file a learner handed in beside the notebook in ``autograded/``: the formgrader
    serves that folder from the Jupyter server's own origin, where an HTML file would run with the
    instructor's session. (The kernel had them: ``GuardedExecute`` copies them into its sandbox.)"""

    # The grader's notes, and nbgrader's own files (release_feedback reads the submission's secret).
    keep = ("grading-notes.json", "grading-result.json", "timestamp.txt", "submission_secret.txt")

    def preprocess(self, nb, resources):
        import os
        import shutil

        folder = (resources.get("metadata") or {}).get("path")
        if folder and os.environ.get("NBGRADER_EXECUTION") == "autograde" and os.path.isdir(folder):
            for name in os.listdir(folder):
                path = os.path.join(folder, name)
                if name.endswith(".ipynb") or name in self.keep:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        return nb, resources
