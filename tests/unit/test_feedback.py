"""feedback, maths and pages: formulas as clean MathML, figures as pictures or words, only what a
learner may receive in feedback/, each page's origin recorded and compared."""
import base64
import json

from nbformat.v4 import new_output

from attention_grading.store import pages
from attention_grading.steps.figure_outputs import FigureOutputs
from attention_grading.steps.maths import markdown_with_mathml, to_mathml

from . import factories


def test_formulas_become_mathml_and_code_stays_code():
    """Inline and display TeX become MathML; a dollar in a code span stays as written."""
    html = markdown_with_mathml(r"Scale by $\sqrt{d_k}$: $$\frac{a}{b}$$ and `$x$`.")
    assert 'display="inline"' in html and "<msqrt>" in html and 'display="block"' in html and html.count("<math") == 2
    assert "<code>$x$</code>" in html and "\\sqrt" not in html


def test_formulas_in_a_learners_sanitised_markdown_become_mathml():
    """A learner's Markdown as the sanitiser stores it (rendered HTML, TeX left for MathJax): its
    formulas become MathML too; code, attributes and tags stay exactly as they were."""
    from attention_grading.steps.sanitize import clean, rendered

    stored = clean(rendered("1. **Scale.** by $\\sqrt{d}$, and $a < b$:\n\n$$Y = AX$$\n\n"
                            '`$x$` <span title="$t$ x=1">t</span>\n\n```\n$y$\n```\n'))
    assert "$\\sqrt{d}$" in stored and "<math" not in stored
    html = markdown_with_mathml(stored)
    assert html.count("<math") == 3 and html.count('display="block"') == 1 and "<msqrt>" in html
    assert "\\sqrt" not in html and "<mo>&lt;</mo>" in html
    assert "<code>$x$</code>" in html and '<span title="$t$ x=1">t</span>' in html and "<code>$y$\n</code>" in html


def test_a_learners_tex_cannot_bring_markup():
    """Markup smuggled in \\text{} is removed (its words stay, as text); unreadable TeX stays
    readable as code, escaped."""
    html = to_mathml(r"\text{<script>alert(1)</script><img src=x onerror=alert(2)>} x")
    assert "<script" not in html and "<img" not in html and "onerror" not in html
    assert to_mathml(r"\left( <b>") == '<code class="tex">\\left( &lt;b&gt;</code>'


def _figure_cell(*outputs):
    return factories.plain_code("plt.show()", outputs)


def test_figures_the_grader_did_not_draw_say_so_and_large_pictures_are_named():
    """"<Figure size ...>" becomes a sentence; a picture under the cap stays; one over it is
    replaced by its size."""
    small, large = base64.b64encode(b"\x89PNG" + b"0" * 100).decode(), base64.b64encode(b"0" * 5000).decode()
    cell = _figure_cell(
        new_output("display_data", data={"text/plain": "<Figure size 550x320 with 1 Axes>"}),
        new_output("display_data", data={"image/png": small, "text/plain": "<Figure size 300x200 with 1 Axes>"}),
        new_output("display_data", data={"image/png": large}, metadata={"image/png": {"width": 9}}))
    FigureOutputs(max_image_bytes=1000).preprocess_cell(cell, {}, 0)
    first, second, third = (o["data"] for o in cell.outputs)
    assert first == {"text/plain": "[a figure of the lesson: it is drawn when you run the notebook]"}
    assert second["image/png"] == small
    assert third == {"text/plain": "[a picture of 5 kB, larger than this page shows (1 kB): run the notebook "
                                   "to see it]"} and cell.outputs[2]["metadata"] == {}


def test_only_what_a_learner_may_receive_reaches_feedback(tmp_path):
    """From a folder nbgrader wrote, the page and nbgrader's two files; writing a page clears
    whatever else was in the learner's feedback folder and records its origin beside the
    autograded notebook."""
    made = tmp_path / "made"
    made.mkdir()
    for name in ("01.html", "timestamp.txt", "submission_secret.txt", "grading-notes.json", "grading-result.json"):
        (made / name).write_text(name)
    files = pages.learner_files(made, "01")
    assert set(files) == {"01.html", "timestamp.txt", "submission_secret.txt"}
    root = tmp_path / "course"
    (root / "autograded" / "alice" / "01").mkdir(parents=True)
    (root / "feedback" / "alice" / "01").mkdir(parents=True)
    (root / "feedback" / "alice" / "01" / "grading-notes.json").write_text("{}")
    pages.write(root, "alice", "01", {**files, "grading-result.json": b"{}"}, "d1")
    assert {p.name for p in (root / "feedback" / "alice" / "01").iterdir()} == set(files)
    assert pages.recorded(root, "alice", "01") == "d1"
    assert json.loads((root / "autograded" / "alice" / "01" / pages.PAGE_FILE).read_text()) == {"page": "d1"}
    (root / "feedback" / "alice" / "01" / "01.html").unlink()
    assert pages.recorded(root, "alice", "01") is None            # no page: stale whatever the record


def test_a_page_is_made_from_grades_notebook_and_renderer():
    """Its digest changes with any of the three."""
    base = pages.page_digest("grades", b"notebook", "renderer")
    assert len({base, pages.page_digest("grades2", b"notebook", "renderer"),
                pages.page_digest("grades", b"notebook2", "renderer"),
                pages.page_digest("grades", b"notebook", "renderer2")}) == 4
    assert pages.renderer_digest() == pages.renderer_digest()
