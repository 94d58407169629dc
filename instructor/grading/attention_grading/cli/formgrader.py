"""A Jupyter server extension: a Content-Security-Policy on every page that shows learner content.

nbgrader's formgrader renders a submission (``/formgrader/submissions/<id>/``) with its own
handler and template; this extension adds a header to that response without touching nbgrader:
only the scripts nbgrader's template loads and its inline scripts and handlers (read, and hashed,
from the part of the page above the notebook) may run (``csp.template_policy``).
That view's formulas are MathML written into the page (``offline_maths``: ``steps.maths``, as the
feedback pages' are), and nbgrader's MathJax from a CDN is replaced by a stand-in of the few
calls the formgrader's script makes, so the view shows its maths offline and loads nothing from
outside. The formgrader's other pages keep their own behaviour. Learner files served by ``/files/``
under ``submitted/`` and ``autograded/`` get a policy that runs nothing; feedback pages there get
``csp.FEEDBACK_POLICY`` (they also carry it in a ``<meta>`` tag).

Enabled for ``make formgrader`` on the command line; elsewhere (JupyterHub) in the instructor's
``jupyter_server_config.py``::

    c.ServerApp.jpserver_extensions = {"attention_grading.cli.formgrader": True}
"""
import re

from tornado.web import OutputTransform
from traitlets import List, Unicode
from traitlets.config import Configurable

from ..steps.csp import FEEDBACK_POLICY, LEARNER_FILES_POLICY, template_policy
from ..steps.maths import formulas_in_html

BOUNDARY = 'id="notebook-container"'        # where the learner's notebook starts in nbgrader's template
MATHJAX_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=[\"'][^\"']*mathjax[^\"']*[\"'][^>]*>\s*</script>", re.IGNORECASE)
# formgrade.js asks MathJax when it has typeset the page (to select the first cell): it is told at once.
MATHJAX_STAND_IN = ("<script>window.MathJax = {loaded: true, Hub: {Config: function () {}, Queue: function () {}, "
                    "Typeset: function () {}, Startup: {signal: {Interest: function (listen) { "
                    "setTimeout(function () { listen('End'); }, 0); }}}}};</script>")


def offline_maths(page):
    """nbgrader's view of a submission with no MathJax from a CDN (a stand-in instead) and the
    formulas of the notebook as MathML (``steps.maths.formulas_in_html``)."""
    cut = page.find(BOUNDARY)
    if cut < 0:
        return MATHJAX_SCRIPT.sub(MATHJAX_STAND_IN, page)
    cut = page.find(">", cut) + 1
    return MATHJAX_SCRIPT.sub(MATHJAX_STAND_IN, page[:cut]) + formulas_in_html(page[cut:])


class FormgraderCSP(Configurable):
    """The policy of the formgrader's views of submissions."""

    extra_script_sources = List(Unicode(), help="Script sources the formgrader's view of a submission may "
                                "load beyond those its template names (each a CSP source "
                                "expression).").tag(config=True)


def _jupyter_server_extension_points():
    return [{"module": "attention_grading.cli.formgrader"}]


def _load_jupyter_server_extension(serverapp):
    install(serverapp.web_app, serverapp.base_url, FormgraderCSP(parent=serverapp))
    serverapp.log.info("attention_grading.cli.formgrader: a Content-Security-Policy on the formgrader's "
                       "views of submissions and on learner files")


def install(web_app, base_url, settings):
    """Add the transform that sets the policies to ``web_app`` (first, before any compression)."""
    base = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
    submission = re.compile(rf"^{re.escape(base)}formgrader/submissions/[^/]+/?$")
    learner_files = re.compile(rf"^{re.escape(base)}files/(?:.*/)?(submitted|autograded|feedback)/")

    class LearnerContentPolicy(OutputTransform):
        def __init__(self, request):
            self.path = request.path
            self.origin = f"{request.protocol}://{request.host}"

        def transform_first_chunk(self, status_code, headers, chunk, finishing):
            policy = None
            if submission.match(self.path) and "html" in headers.get("Content-Type", ""):
                page = chunk.decode("utf-8", "replace") if finishing else ""   # a streamed page: no script
                if page:
                    page = offline_maths(page)
                    chunk = page.encode("utf-8")
                    if "Content-Length" in headers:
                        headers["Content-Length"] = str(len(chunk))
                policy = template_policy(page, self.origin, settings.extra_script_sources)
            else:
                match = learner_files.match(self.path)
                if match:
                    policy = FEEDBACK_POLICY if match.group(1) == "feedback" else LEARNER_FILES_POLICY
            if policy:
                headers.add("Content-Security-Policy", policy)
            return status_code, headers, chunk

    web_app.transforms.insert(0, LearnerContentPolicy)
    return LearnerContentPolicy
