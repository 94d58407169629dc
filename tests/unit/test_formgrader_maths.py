"""The formgrader's view of a submission shows its maths offline: the course's server extension
(cli.formgrader) takes out nbgrader's MathJax from a CDN and writes the notebook's formulas as
MathML, as the feedback pages do; the page then loads no script from outside and its policy
allows none. The page's head is nbconvert's own MathJax macro, as nbgrader's template calls it."""
from pathlib import Path

import jinja2
from tornado.httputil import HTTPHeaders
from tornado.web import Application

from attention_grading.cli import formgrader


def _page():
    import nbconvert

    templates = Path(nbconvert.__file__).parent.parent.parent.parent.parent / "share/jupyter/nbconvert/templates/base"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)))
    head = env.from_string("{% from 'mathjax.html.j2' import mathjax %}{{ mathjax() }}").render()
    return ('<html><head><script src="/formgrader/static/js/formgrade.js"></script>' + head +
            '</head><body><div id="notebook-container"><div class="text_cell_render">'
            r'<p>Each score is divided by $\sqrt{d_k}$ first:</p><p>$$w_{ij} = \frac{e^{s_{ij}}}{\sum_k e^{s_{ik}}}$$</p>'
            '</div></div></body></html>')


class _Request:
    path, protocol, host = "/formgrader/submissions/abc/", "http", "127.0.0.1:8888"


def test_the_formgrader_view_has_mathml_and_no_external_script():
    """No script from a CDN, formulas as MathML (no raw TeX left), a policy with no external
    source, the stand-in allowed by its hash, Content-Length that of the new page."""
    page = _page()
    assert "cdnjs.cloudflare.com" in page                   # nbgrader's page, as served without the extension
    app = Application()
    transform = formgrader.install(app, "/", formgrader.FormgraderCSP())
    headers = HTTPHeaders({"Content-Type": "text/html; charset=UTF-8", "Content-Length": str(len(page.encode()))})
    status, headers, chunk = transform(_Request()).transform_first_chunk(200, headers, page.encode(), True)
    served = chunk.decode()
    assert "cdnjs" not in served and "https://" not in served.split('id="notebook-container"')[0]
    notebook = served.split('id="notebook-container"')[1]
    assert notebook.count("<math") == 2 and "$" not in notebook
    assert "<msqrt>" in served and "<mfrac>" in served
    assert int(headers["Content-Length"]) == len(chunk)
    script_src = next(part for part in headers["Content-Security-Policy"].split("; ") if part.startswith("script-src"))
    assert "https:" not in script_src and "cdnjs" not in script_src and "'sha256-" in script_src
