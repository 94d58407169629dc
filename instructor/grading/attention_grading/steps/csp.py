"""Content-Security-Policy for every page that shows learner content: only the scripts the course
ships run there, so markup that got past the sanitiser (``sanitize``) still runs nothing.

- The feedback pages (``feedback_exporter.FeedbackExporter``) carry ``FEEDBACK_POLICY`` in a ``<meta>``
  tag, wherever they are opened (a file, a Jupyter server's ``/files/``, a learner's JupyterLab):
  scripts from the page's own origin only (files shipped beside it), no inline script, no other
  site; styles and images inline or from the same origin.
- The formgrader's view of a submission (``/formgrader/submissions/<id>/``, rendered by nbgrader's
  handler) gets a ``Content-Security-Policy`` header from the Jupyter server extension
  ``attention_grading.cli.formgrader``: exactly the scripts nbgrader's template loads (its static
  files, and MathJax where nbconvert's exporter points) and its inline scripts and handlers (by
  hash), all read from the part of the page before the notebook, where no learner content is;
  nothing else, so no inline script, handler or ``javascript:`` URL from a submission runs.
"""
import base64
import hashlib
import re
from html.parser import HTMLParser

FEEDBACK_POLICY = "; ".join([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "worker-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
])

_HEAD = re.compile(r"<head(\s[^>]*)?>", re.I)


def with_meta(page, policy=FEEDBACK_POLICY):
    """``page`` (an HTML document) with ``policy`` as a ``<meta http-equiv>`` first in its head,
    before any script can load."""
    tag = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    match = _HEAD.search(page)
    if match is None:
        return tag + page
    return page[:match.end()] + "\n" + tag + page[match.end():]


def _hash(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


class _Scripts(HTMLParser):
    """The scripts of a piece of HTML: sources of external ones, texts of inline JavaScript ones,
    and event-handler attributes."""

    JS_TYPES = {"", "text/javascript", "application/javascript", "module"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sources, self.inline, self.handlers, self._in_script = [], [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.handlers += [value or "" for name, value in attrs.items() if name.startswith("on")]
        if tag == "script":
            javascript = (attrs.get("type") or "").strip().lower() in self.JS_TYPES
            if attrs.get("src"):
                self.sources.append(attrs["src"])
            self._in_script = javascript and not attrs.get("src")
            if self._in_script:
                self.inline.append("")

    def handle_data(self, data):
        if self._in_script:
            self.inline[-1] += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False


def scripts_of(html_text):
    """(external script URLs, inline JavaScript texts, event-handler texts) of ``html_text``,
    the inline ones as a browser hashes them."""
    parser = _Scripts()
    parser.feed(html_text)
    parser.close()
    return parser.sources, parser.inline, parser.handlers


def _source(url, origin):
    """A CSP source expression for exactly the script at ``url`` (absolute with ``origin``)."""
    from urllib.parse import urljoin, urlsplit

    absolute = urljoin(origin + "/", url)
    parts = urlsplit(absolute)
    return f"{parts.scheme}://{parts.netloc}{parts.path}".replace(";", "%3B").replace(",", "%2C").replace(" ", "%20")


def template_policy(page, origin, extra_sources=(), boundary='id="notebook-container"'):
    """A policy for ``page``, a page of the course's tools served from ``origin`` whose learner
    content starts at ``boundary``: the scripts written before the boundary (the tool's own
    template: external ones by URL, inline ones and handlers by hash) and ``extra_sources``;
    nothing written after it."""
    cut = page.find(boundary)
    sources, inline, handlers = scripts_of(page[:cut if cut >= 0 else 0])
    allowed = sorted({_source(url, origin) for url in sources}) + list(extra_sources)
    hashes = sorted({_hash(text) for text in inline} | {_hash(text) for text in handlers})
    script_src = " ".join([*allowed, *hashes, *(["'unsafe-hashes'"] if handlers else [])]) or "'none'"
    return "; ".join([
        "default-src 'none'",
        f"script-src {script_src}",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "frame-src 'none'",
        "form-action 'self'",
        "base-uri 'none'",
    ])


# Learner files served by Jupyter's /files/ (a handed-in page, an autograded notebook): no script.
LEARNER_FILES_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
