"""The sanitiser (``attention_grading.steps.sanitize``), step by step, in process (each well under a second).

What it stores is read back here the way a browser reads it (``tests/markup.py``: entities
decoded in attribute values as the HTML5 parsing algorithm decodes them), and no attribute may
hold a ``javascript:``, ``vbscript:`` or ``data:`` URL or a CSS ``url()``, however the learner
wrote it. Cells come from the unit tests' factories (``factories``).
"""
import nbformat
import pytest
from markup import as_a_browser_reads, script_urls
from nbgrader.utils import compute_checksum, determine_grade

from attention_grading.steps.sanitize import SanitizeLearnerHTML, active_content, clean, rendered

from . import factories

# Every way we know to write a script or data URL so that a browser still reads it as one.
URL_ATTACKS = {
    "plain": '<a href="javascript:alert(1)">x</a>',
    "named entity colon": '<a href="javascript&colon;alert(1)">x</a>',
    "decimal entity": '<a href="&#106;avascript:alert(1)">x</a>',
    "decimal entity, zero padded, no semicolon": '<a href="&#0000106avascript:alert(1)">x</a>',
    "hex entity": '<a href="&#x6A;avascript:alert(1)">x</a>',
    "entity colon, no semicolon": '<a href="javascript&#58alert(1)">x</a>',
    "tab inside the scheme": '<a href="java\tscript:alert(1)">x</a>',
    "tab entity inside the scheme": '<a href="java&#9;script:alert(1)">x</a>',
    "newline entity inside the scheme": '<a href="jav&#x0A;ascript:alert(1)">x</a>',
    "newline inside the scheme": '<a href="java\nscript:alert(1)">x</a>',
    "leading space and control": '<a href=" \x01javascript:alert(1)">x</a>',
    "upper case": '<a href="JAVASCRIPT:alert(1)">x</a>',
    "mixed case, unquoted": '<a href=JaVaScRiPt:alert(1)>x</a>',
    "vbscript": '<a href="vbscript:msgbox(1)">x</a>',
    "vbscript entity": '<a href="vbscript&colon;msgbox(1)">x</a>',
    "data html link": '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    "data image": '<img src="data:image/svg+xml;base64,PHN2Zy8+">',
    "data entity": '<img src="d&#97;ta:image/png;base64,AAAA">',
    "img src": '<img src="javascript:alert(1)">',
    "srcset": '<img srcset="javascript:alert(1) 1x">',
    "formaction": '<button formaction="javascript:alert(1)">x</button>',
    "form action": '<form action="javascript:alert(1)"><input type=submit></form>',
    "xlink:href": '<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
    "math href": '<math><mtext><a href="javascript:alert(1)">x</a></mtext></math>',
    "css url": '<p style="background-image: url(javascript:alert(1))">x</p>',
    "css url of data": '<p style="background: url(data:image/png;base64,AAAA)">x</p>',
    "css escaped url": '<p style="background: u\\72l(http://evil/x)">x</p>',
    "css comment in url": '<p style="background: u/**/rl(http://evil/x)">x</p>',
    "css expression": '<p style="width: expression(alert(1))">x</p>',
    "css entity url": '<p style="background: &#117;rl(http://evil/x)">x</p>',
    "base href": '<base href="javascript:alert(1)//">',
    "meta refresh": '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "iframe srcdoc": '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "object data": '<object data="javascript:alert(1)"></object>',
    "event handler": '<img src=x onerror="alert(1)">',
    "script": '<script>alert(1)</script>',
}
@pytest.mark.parametrize("attack", list(URL_ATTACKS))
def test_no_script_or_data_url_survives_in_any_attribute(attack):
    """Each way of writing a script, vbscript or data URL, a CSS url() or a handler: gone from
    the output as a browser reads it, alone and inside an otherwise harmless answer."""
    payload = URL_ATTACKS[attack]
    for html in (payload, f"<p>My answer: {payload} and more text.</p>"):
        out = clean(html)
        assert not script_urls(out), (attack, out)
        assert not active_content(out), (attack, out)


@pytest.mark.parametrize("attack", list(URL_ATTACKS))
def test_the_attacks_are_live_before_cleaning(attack):
    """Control: the browser-like reading finds each payload in the raw HTML (the check can fail)."""
    html = URL_ATTACKS[attack]
    assert script_urls(html) or "<" not in html, attack


def test_harmless_markup_keeps_its_meaning():
    """Links to http(s), mailto and in-page anchors, remote images, emphasis, tables, code and
    math survive; an element id does not (it could stand in for the formgrader's own)."""
    out = clean(rendered("## Why\n\nSee [the notes](https://example.org/a?b=1&c=2), "
                         "[mail](mailto:x@example.org), [above](#why), ![fig](http://example.org/f.png)\n\n"
                         "*Each* row sums to **1**: $\\sum_j a_{ij} = 1$, `np.sum(A, -1)`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"))
    reading = as_a_browser_reads(out)
    hrefs = [v for _, n, v in reading if n == "href"]
    assert "https://example.org/a?b=1&c=2" in hrefs and "mailto:x@example.org" in hrefs and "#why" in hrefs
    assert ("img", "src", "http://example.org/f.png") in reading
    assert {"em", "strong", "code", "table", "td"} <= {t for t, _, _ in reading}
    assert "$\\sum_j a_{ij} = 1$" in out
    assert not any(n == "id" for _, n, _ in reading)


def test_markup_outside_the_allow_list_is_shown_as_text():
    """A script, an SVG or MathML island, a form: never markup again, but their words stay on the
    page as text (a link's words inside an ``<svg>`` included), as a browser then shows them."""
    out = clean('<p>See <svg><a xlink:href="javascript:alert(1)"><text y="15">svg link</text></a></svg> '
                'and <script>alert("&amp;")</script><math><mi>x</mi></math><form><b>kept</b></form></p>')
    reading = as_a_browser_reads(out)
    assert {t for t, _, _ in reading} == {"DOCUMENT_FRAGMENT", "p", "a", "b"} and not [n for _, n, _ in reading if n]
    assert not script_urls(out) and not active_content(out)
    assert "svg link" in out and "&lt;script&gt;alert(\"&amp;amp;\")&lt;/script&gt;" in out and "<b>kept</b>" in out


def answer_cell(source):
    """The written answer ``row_softmax_answer`` holding ``source``, its checksum the released
    stub's (as nbgrader's OverwriteCells leaves it)."""
    return factories.written_answer("row_softmax_answer", source)


def locked_cell(source):
    """A locked markdown cell of the course (restored from the gradebook when graded)."""
    cell = factories.prose(source)
    cell.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": "intro",
                                 "schema_version": 3, "task": False}
    cell.metadata.nbgrader["checksum"] = compute_checksum(cell)
    return cell


def sanitised(*cells):
    nb = factories.notebook(*cells)
    nb, _ = SanitizeLearnerHTML().preprocess(nb, {})
    return nb.cells


def test_every_learner_markdown_cell_is_stored_as_the_sanitisers_output():
    """A written answer, a cell the learner added and unlocked prose: each stored as its
    rendered and cleaned HTML, harmless or not, attachments dropped."""
    hostile = '<a href="javascript&colon;fetch(\'/api/contents/\')">my derivation</a>'
    answer, added, harmless = sanitised(answer_cell(hostile), factories.prose(hostile),
                                        factories.prose("Plain **words**."))
    for cell in (answer, added):
        assert cell.source == clean(rendered(hostile)) and "my derivation" in cell.source
        assert not script_urls(rendered(cell.source))
    assert harmless.source == clean(rendered("Plain **words**.")) == "<p>Plain <strong>words</strong>.</p>\n"
    with_attachment = factories.prose("Pasted: ![x](attachment:x.html) ![y](attachment:gone.png)")
    with_attachment["attachments"] = {"x.html": {"text/html": "PHNjcmlwdD4="}}
    (stored,) = sanitised(with_attachment)
    assert "attachments" not in stored and "Pasted:" in stored.source and not script_urls(stored.source)


def test_a_raw_cell_is_stored_cleaned():
    """Raw cells (rendered as HTML by nbconvert when their type says so) are cleaned too."""
    (raw,) = sanitised(nbformat.v4.new_raw_cell('<img src=x onerror="alert(1)"><b>kept</b>'))
    assert raw.source == '<img src="x"><b>kept</b>'


def test_a_blank_answer_still_counts_as_blank_and_course_text_is_untouched():
    """An answer left as released keeps its text, so nbgrader still scores it 0 ("No
    response"); a locked cell keeps the course's text; an edited answer awaits manual grading."""
    blank, locked, written = sanitised(answer_cell("YOUR ANSWER HERE"), locked_cell("## Lesson *one*"),
                                       answer_cell("Each row is **one** budget."))
    assert blank.source == "YOUR ANSWER HERE" and determine_grade(blank) == (0, 1.0)
    assert locked.source == "## Lesson *one*"
    assert written.source == "<p>Each row is <strong>one</strong> budget.</p>\n"
    assert determine_grade(written) == (None, 1.0)


def test_a_forged_locked_flag_or_checksum_does_not_spare_a_cell():
    """A cell that says it is locked but has no grade_id, or whose checksum does not match its
    source, is the learner's: sanitised."""
    fake = factories.prose("<script>alert(1)</script>")
    fake.metadata["nbgrader"] = {"locked": True, "checksum": "0" * 32}
    stale = locked_cell("## Lesson")
    stale.source = "<script>alert(1)</script>"
    for cell in sanitised(fake, stale):
        assert "<script" not in cell.source


def test_a_second_pass_at_feedback_time_changes_nothing_that_matters():
    """Sanitising the stored output again (generate_feedback does) keeps it inert, keeps blank
    answers blank and settles (a third pass equals the second)."""
    first = sanitised(answer_cell("YOUR ANSWER HERE"), answer_cell("Rows *sum* to one: $a<b$."),
                      factories.prose(URL_ATTACKS["named entity colon"]))
    second = sanitised(*[nbformat.from_dict(dict(c)) for c in first])
    third = sanitised(*[nbformat.from_dict(dict(c)) for c in second])
    assert second[0].source == "YOUR ANSWER HERE" and determine_grade(second[0]) == (0, 1.0)
    assert [c.source for c in third] == [c.source for c in second]
    assert all(not script_urls(rendered(c.source)) for c in second)
    assert "$a&lt;b$" in second[1].source


def test_learner_outputs_are_cleaned_and_a_malformed_image_is_dropped():
    """An HTML output with a script link is cleaned; an image that is not base64 is dropped
    (not a KeyError); text passes."""
    cell = factories.plain_code("display(...)", outputs=[factories.result(
        {"text/html": URL_ATTACKS["decimal entity"], "image/png": "not base64!", "text/plain": "x"}, kind="display_data")])
    (out,) = sanitised(cell)
    data = out.outputs[0]["data"]
    assert set(data) == {"text/html", "text/plain"} and not script_urls(data["text/html"])


# -- Content-Security-Policy (attention_grading.steps.csp) ------------------------------------------------

def test_the_feedback_policy_comes_first_in_the_head_and_allows_no_inline_script():
    """The meta tag precedes every script of the page; scripts only from the page's own origin."""
    from attention_grading.steps.csp import FEEDBACK_POLICY, with_meta

    page = with_meta('<!DOCTYPE html><html><head><meta charset="utf-8"><script src="a.js"></script></head></html>')
    assert page.index("Content-Security-Policy") < page.index("<script")
    directives = dict(d.strip().split(" ", 1) for d in FEEDBACK_POLICY.split(";"))
    assert directives["script-src"] == "'self'" and directives["default-src"] == "'none'"
    assert "unsafe-inline" not in directives["script-src"] and "http" not in FEEDBACK_POLICY


def test_the_formgrader_policy_allows_its_template_and_nothing_after_the_notebook_starts():
    """Scripts before the notebook (the template's) by URL and hash; a script, handler or
    external script after it is not allowed."""
    import base64
    import hashlib

    from attention_grading.steps.csp import template_policy

    page = ('<head><script src="/formgrader/static/js/formgrade.js"></script>'
            '<script>var submission_id = "abc";</script>'
            '<script type="text/x-mathjax-config">MathJax.Hub.Config({})</script></head>'
            '<body><span onclick="toggle_name(true);"></span><div id="notebook-container">'
            '<script>alert(1)</script><img onerror="alert(2)"><script src="https://evil.example/x.js"></script>'
            '</div></body>')
    policy = template_policy(page, "http://127.0.0.1:8888", ["https://cdn.example/mathjax/"])
    script_src = next(d for d in policy.split("; ") if d.startswith("script-src "))
    digest = lambda text: "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"  # noqa: E731
    assert "http://127.0.0.1:8888/formgrader/static/js/formgrade.js" in script_src
    assert digest('var submission_id = "abc";') in script_src and digest("toggle_name(true);") in script_src
    assert "'unsafe-hashes'" in script_src and "https://cdn.example/mathjax/" in script_src
    for learner in ("alert(1)", "alert(2)", "MathJax.Hub.Config({})"):
        assert digest(learner) not in script_src
    assert "evil.example" not in policy and "'unsafe-inline'" not in script_src
