"""A feedback page a learner can read anywhere: opened from disk in Chromium with every request
that is not a file of the page aborted (no network, as offline or in an air-gapped lab).

One class of lesson 01, graded by ``make grade`` in a course copy of its own: alice (every answer
right; a written answer with formulas; a cell of her own that plots; graded by hand with a
comment holding a formula, then ``make feedback``) and carol (a wrong ``contextualize``, whose
diagnosis is a long sentence).
"""
import json

import nbformat
import pytest

from conftest import copy_course
from grading_helpers import LESSON, notebook, run_grade, submit

from .pages import browser_context

pytestmark = pytest.mark.browser

ANSWER = r"Every row is one token's budget: $\sum_j a_{ij} = 1$, after scaling by $\sqrt{d_k}$."
COMMENT = r"Yes; and the scores are divided by $\sqrt{d}$ first."
OWN_PLOT = ("fig, ax = plt.subplots(figsize=(3, 2))\nax.plot([0, 1, 2], [1, 0, 1])\n"
            "ax.set_title('my own plot')\nplt.show()")


def _alice():
    nb = nbformat.reads(notebook("correct"), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "row_softmax_answer":
            cell.source = ANSWER
    setup = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell(OWN_PLOT, id="alice-own-plot"))
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{student: path of the feedback page}, after make grade, a comment by hand, make feedback."""
    from nbgrader.api import Gradebook

    root = copy_course(tmp_path_factory.mktemp("offline") / "course")
    submit(root, "alice", _alice())
    submit(root, "carol", notebook("buggy"))
    graded = run_grade(root, "--workers", "2", "--no-report")
    assert graded.returncode == 0, graded.stdout + graded.stderr
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        grade = gb.find_grade("row_softmax_answer", LESSON, LESSON, "alice")
        grade.manual_score, grade.needs_manual_grade = 1.0, False
        gb.find_comment("row_softmax_answer", LESSON, LESSON, "alice").manual_comment = COMMENT
        gb.db.commit()
    again = run_grade(root, "--feedback-only", "--no-report")
    assert again.returncode == 0 and "feedback pages written 1" in again.stdout, again.stdout + again.stderr
    return {s: root / "feedback" / s / LESSON / f"{LESSON}.html" for s in ("alice", "carol")}


@pytest.fixture
def offline(browser):
    """A page in a browser that reaches nothing but files: every other request is aborted and
    recorded."""
    asked = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            asked.append(url)
            request_route.abort()

    with browser_context(browser) as context:
        context.route("**/*", route)
        page = context.new_page()
        yield page, asked


def test_formulas_render_offline_without_a_script(pages, offline, artifacts):
    """alice's page, from disk, offline: it loads no script and asks the network for nothing; her
    formulas and the instructor's comment are MathML that Chromium lays out as maths (a square
    root taller than its radicand), and no TeX is left in the text."""
    page, asked = offline
    page.goto(pages["alice"].as_uri())
    page.wait_for_load_state("load")
    page.screenshot(path=str(artifacts / "feedback-offline-alice.png"), full_page=True)
    assert asked == [] and page.evaluate("document.scripts.length") == 0
    text = page.inner_text("body")
    assert "\\sqrt" not in text and "\\sum" not in text
    for words in ("Every row is one token", "and the scores are divided by"):
        paragraph = page.locator("p", has_text=words).first
        formula = paragraph.locator("math", has=page.locator("msqrt")).first
        assert formula.count() == 1
        assert "math" in formula.evaluate("el => getComputedStyle(el).display")
        root = formula.locator("msqrt").first
        box, inner = root.bounding_box(), root.locator("mi").first.bounding_box()
        assert box["width"] > inner["width"] and box["height"] > inner["height"], (box, inner)


def test_the_learners_own_plot_is_a_picture_and_the_lessons_figures_are_named(pages, offline):
    """The cell alice added draws its figure as a picture (a PNG in the page, shown); the lesson's
    own figures, not drawn while grading, say so in words instead of "<Figure size ...>"."""
    page, _ = offline
    page.goto(pages["alice"].as_uri())
    images = page.locator("div.output_png img")
    assert images.count() == 1
    assert images.first.evaluate("img => img.complete && img.naturalWidth > 0")
    assert images.first.get_attribute("src").startswith("data:image/png;base64,")
    text = page.inner_text("body")
    assert "<Figure size" not in text and "a figure of the lesson: it is drawn when you run the notebook" in text


def test_diagnoses_wrap(pages, offline, artifacts):
    """carol's diagnosis, a long sentence, wraps inside a narrow window: nothing in the page runs
    off to the right."""
    page, _ = offline
    page.set_viewport_size({"width": 640, "height": 900})
    page.goto(pages["carol"].as_uri())
    diagnosis = page.locator("pre", has_text="not divided by").first
    diagnosis.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "feedback-offline-carol-narrow.png"))
    width = diagnosis.evaluate("el => [el.scrollWidth, el.clientWidth]")
    assert width[0] <= width[1] + 1, width
    assert diagnosis.evaluate("el => el.getBoundingClientRect().right") <= 640
    overflowing = page.evaluate("""() => [...document.querySelectorAll('div.output_area pre')]
        .filter(el => el.scrollWidth > el.clientWidth + 1).map(el => el.innerText.slice(0, 80))""")
    assert overflowing == [], json.dumps(overflowing)
