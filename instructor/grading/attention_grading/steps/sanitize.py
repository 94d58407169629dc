"""Autograde and feedback steps: no HTML or JavaScript a learner wrote, printed or handed in ever
runs in the instructor's browser (the formgrader, the feedback, an autograded notebook opened in a
page).

Sanitised with nh3 (the binding of Ammonia, an HTML5 sanitiser that parses as browsers do), and
then checked once more as a browser would read it (``inert``); markup outside the allow-list is
shown as text rather than dropped, so the learner's words stay readable:
- code cell outputs (printed by learner code): HTML and Markdown are always cleaned (only
  harmless tags and attributes kept); output metadata keeps only numeric image sizes (nbconvert
  writes them into the page unquoted), and an image that is not base64 is dropped;
  JavaScript, SVG and every other type that a page could run are dropped; text, images and
  JSON pass;
- Markdown and raw cells the learner could have written (answers, added cells, unlocked prose)
  are stored as the sanitiser's output: their rendered HTML, cleaned, attachments dropped. Cells
  that are the course's own text are left as they are: locked cells (restored from the gradebook)
  and written answers left blank (their checksum is the gradebook's, so nbgrader still scores
  them "No response").

No ``javascript:``, ``vbscript:`` or ``data:`` URL survives in any attribute, however it is
written (entities such as ``&colon;`` or ``&#106;``, tabs or newlines inside the scheme, upper
case), nor a CSS ``url()`` or ``expression()``, nor an element ``id`` (which could stand in for
the formgrader's own elements). Files handed in beside the notebook never reach ``autograded/``
(``remove_handed_in_files``).
"""
import functools
import html
import re
from html.parser import HTMLParser

import nh3
from nbconvert.filters.markdown import markdown2html
from nbgrader.preprocessors import NbGraderPreprocessor

SAFE_OUTPUT_TYPES = {"text/plain", "image/png", "image/jpeg", "image/gif", "application/json",
                     "text/latex", "metadata"}
CLEANED_OUTPUT_TYPES = {"text/html", "text/markdown"}
TAGS = {"a", "abbr", "acronym", "b", "blockquote", "br", "code", "dd", "del", "details", "div",
        "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li",
        "ol", "p", "pre", "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table",
        "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var", "caption", "colgroup", "col"}
ATTRIBUTES = {"*": ["class", "title", "align", "style"], "a": ["href", "title", "rel"],
              "img": ["src", "alt", "width", "height"], "td": ["colspan", "rowspan"],
              "th": ["colspan", "rowspan", "scope"], "ol": ["start"]}
PROTOCOLS = {"http", "https", "mailto"}   # no javascript:, vbscript: or data:
# The CSS properties a style keeps (presentation only; those bleach's CSS sanitiser kept before).
STYLE_PROPERTIES = {
    "azimuth", "background-color", "border-bottom-color", "border-collapse", "border-color", "border-left-color",
    "border-right-color", "border-top-color", "clear", "color", "cursor", "direction", "display", "elevation",
    "float", "font", "font-family", "font-size", "font-style", "font-variant", "font-weight", "height",
    "letter-spacing", "line-height", "overflow", "pause", "pause-after", "pause-before", "pitch", "pitch-range",
    "richness", "speak", "speak-header", "speak-numeral", "speak-punctuation", "speech-rate", "stress",
    "text-align", "text-decoration", "text-indent", "unicode-bidi", "vertical-align", "voice-family", "volume",
    "white-space", "width", "fill", "fill-opacity", "fill-rule", "stroke", "stroke-linecap", "stroke-linejoin",
    "stroke-opacity", "stroke-width"}

# What a browser ignores inside a URL's scheme (ASCII tab and newlines anywhere, other control
# characters and spaces around it), and the schemes that run or embed content.
_IGNORED_IN_URLS = re.compile(r"[\x00-\x20\x7f]+")
DANGEROUS_SCHEMES = ("javascript:", "vbscript:", "data:", "livescript:", "mocha:")
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)", re.S)
DANGEROUS_CSS = ("url(", "expression(", "image(", "image-set(", "@import", "behavior:", "-moz-binding",
                 "javascript:", "vbscript:", "data:")


def _decoded(value):
    """An attribute value as the browser reads it: entities decoded (all of HTML5's, with or
    without their semicolon), then what URL parsing ignores removed, in lower case."""
    return _IGNORED_IN_URLS.sub("", html.unescape(value)).lower()


def _css_decoded(style):
    """A style as CSS reads it: entities, CSS escapes and comments resolved, in lower case."""
    text = html.unescape(style)
    text = _CSS_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S).replace(" ", "").lower()


def safe_attribute(name, value):
    """May an attribute ``name`` with ``value`` stay in a page? (Not if its value is, or its
    style holds, something that runs or loads content.)"""
    if name.lower().startswith("on") or name.lower() in ("id", "name", "srcset", "formaction", "xlink:href",
                                                         "action", "background", "dynsrc", "lowsrc"):
        return False
    if any(_decoded(value).startswith(scheme) for scheme in DANGEROUS_SCHEMES):
        return False
    if name.lower() == "style":
        decoded = _css_decoded(value)
        return not any(token in decoded for token in DANGEROUS_CSS)
    return True


def _kept_value(tag, name, value):
    """nh3's attribute filter: an allowed attribute's value, or None when it could run something."""
    return value if safe_attribute(name, value) else None


class _DisallowedAsText(HTMLParser):
    """Rewrites a piece of HTML with every tag outside TAGS (and what a script or style holds)
    escaped as text, and its text re-escaped: nh3 removes what it does not allow, and this keeps
    the learner's words (a link inside an ``<svg>``, a ``<script>`` written as an example) on the
    page as text, as nbconvert's sanitiser used to. It can only turn markup into text; nh3 still
    cleans everything that is left."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out = []

    def handle_starttag(self, tag, attrs):
        raw = self.get_starttag_text()
        self.out.append(raw if tag in TAGS else html.escape(raw))

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        self.out.append(f"</{tag}>" if tag in TAGS else html.escape(f"</{tag}>"))

    def handle_data(self, data):              # entities decoded (a script's or style's text as written)
        self.out.append(html.escape(data, quote=False))

    def handle_comment(self, data):
        pass                                   # comments are never kept

    def handle_decl(self, decl):
        self.out.append(html.escape(f"<!{decl}>"))

    def handle_pi(self, data):
        self.out.append(html.escape(f"<?{data}>"))

    def unknown_decl(self, data):
        self.out.append(html.escape(f"<![{data}]>"))

    def rewritten(self, markup):
        self.feed(markup)
        self.close()
        return "".join(self.out)


class _Inspector(HTMLParser):
    """Collects what in a piece of HTML could run: tags outside TAGS, attributes outside the
    allow-list, dangerous values; as a browser decodes them (entities converted)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found = []

    def handle_starttag(self, tag, attrs):
        if tag not in TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = value or ""
            if not (name in ATTRIBUTES.get(tag, ()) or name in ATTRIBUTES["*"]) or not safe_attribute(name, html.escape(value)):
                self.found.append(f"<{tag} {name}={value[:60]!r}>")

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.found.append("<!-- -->")

    def handle_pi(self, data):
        self.found.append("<?...>")

    def unknown_decl(self, data):
        self.found.append("<![...]>")


def active_content(html_text):
    """What in ``html_text`` could run or is not allowed, as a browser would read it (empty: inert)."""
    inspector = _Inspector()
    inspector.feed(html_text)
    inspector.close()
    return inspector.found


_NH3_ATTRIBUTES = {tag: set(names) for tag, names in ATTRIBUTES.items()}


@functools.lru_cache(maxsize=8192)
def clean(html_text):
    """``html_text`` with only harmless tags, attributes, link protocols and styles left, and
    nothing that runs however a browser decodes it; text only if the check still finds any."""
    cleaned = nh3.clean(_DisallowedAsText().rewritten(html_text), tags=TAGS, attributes=_NH3_ATTRIBUTES,
                        attribute_filter=_kept_value, url_schemes=PROTOCOLS, filter_style_properties=STYLE_PROPERTIES,
                        strip_comments=True, link_rel=None)
    if active_content(cleaned):           # never seen; fail closed rather than trust the cleaner
        return html.escape(html_text)
    return cleaned


@functools.lru_cache(maxsize=4096)
def rendered(markdown):
    """``markdown`` as HTML. Attachments are never kept (nbconvert would embed them as data:
    URLs), and references to them break nbconvert's renderer: those are rendered as plain links
    (which cleaning then drops); text nbconvert still cannot render is kept as escaped text."""
    for text in (markdown, markdown.replace("attachment:", "attachment-not-kept:")):
        try:
            return markdown2html(text)
        except Exception:        # nbconvert's InvalidNotebook, or a renderer error on odd input
            continue
    return f"<pre>{html.escape(markdown)}</pre>"


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


def course_text(cell):
    """Is this cell's source the course's own, as the gradebook has it? (A locked cell restored
    from the gradebook, or a written answer left as released: its checksum, which nbgrader's
    ``OverwriteCells`` set from the gradebook, matches its source.)"""
    from nbgrader.utils import compute_checksum

    meta = cell.metadata.get("nbgrader", {})
    if not (meta.get("grade_id") and meta.get("checksum")) or not (meta.get("locked") or meta.get("solution")):
        return False
    try:
        return compute_checksum(cell) == meta["checksum"]
    except (KeyError, TypeError, ValueError):
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
                        # printed by learner code: always cleaned
                        data["text/html"] = clean(markdown2html(text) if key == "text/markdown" else text)
        elif cell.cell_type in ("markdown", "raw") and not course_text(cell):
            cell.source = clean(rendered(cell.source) if cell.cell_type == "markdown" else cell.source)
            cell.pop("attachments", None)         # rendered as data: URLs; never the learner's to add
        return cell, resources
