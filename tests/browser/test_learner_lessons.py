"""Lesson 01 in JupyterLab: the learner's release as a learner opens it, and the solution run."""
import re

import numpy as np
import pytest

from .pages import cells, code_cells, nbgrader_metadata, require, run_solution
from .parsers import parse_cat_weights

pytestmark = pytest.mark.browser


@pytest.mark.smoke
def test_learner_opens_lesson_01_release(tab, course):
    """From the file browser, notebooks/ → 01_context_vectors → the notebook: rendered, with its stubs."""
    from playwright.sync_api import expect

    lesson = "01_context_vectors"
    rel = require(course, "notebooks", lesson)
    release = cells(course / rel)
    stubs = [c for c in release if c["cell_type"] == "code" and nbgrader_metadata(c).get("solution")]
    answers = [c for c in release if c["cell_type"] == "markdown" and nbgrader_metadata(c).get("solution")]
    assert stubs and answers, "the release should have code stubs and written answers"
    page = tab.page

    tab.open_lab()
    listing = page.locator(".jp-DirListing-content")
    for folder in ("notebooks", lesson):
        item = listing.locator(".jp-DirListing-item", has=page.locator(
            ".jp-DirListing-itemText", has_text=re.compile(f"^{folder}$")))
        item.wait_for()
        tab.shot(f"file-browser-{folder}")
        item.dblclick()
    item = listing.locator(".jp-DirListing-item", has=page.locator(
        ".jp-DirListing-itemText", has_text=re.compile(rf"^{lesson}\.ipynb$")))
    item.wait_for()
    item.dblclick()

    notebook = tab.notebook()
    notebook.locator(".jp-Cell").first.wait_for()
    tab.wait_for_kernel(rel)
    tab.shot("opened")

    title = notebook.locator(".jp-RenderedMarkdown h1").first
    assert title.text_content().startswith("Lesson 01"), title.text_content()
    current = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel")
    assert current.text_content() == f"{lesson}.ipynb"
    # The exercise stubs are there, as code the learner can edit. (Cells render after the
    # notebook opens: the counts are awaited, up to the default timeout.)
    stub_cells = notebook.locator(".jp-CodeCell", has=page.locator(
        ".cm-content", has_text="raise NotImplementedError()"))
    expect(stub_cells, f"one stub shown for each of the release's {len(stubs)} solution cells"
           ).to_have_count(len(stubs))
    for i in range(stub_cells.count()):
        text = stub_cells.nth(i).locator(".cm-content").text_content()
        assert "# YOUR CODE HERE" in text, text
        assert stub_cells.nth(i).locator(".cm-content").get_attribute("contenteditable") == "true"
    written = notebook.locator(".jp-MarkdownCell .jp-RenderedMarkdown", has_text="YOUR ANSWER HERE")
    expect(written, f"the release's {len(answers)} written answers shown").to_have_count(len(answers))
    # A fresh release: nothing has run, nothing is shown as output.
    assert notebook.locator(".jp-OutputArea-output").count() == 0
    assert all(p.strip() in ("[ ]:", "") for p in tab.prompts()), tab.prompts()
    # nbgrader's learner extension: the Validate button in the notebook toolbar.
    assert notebook.locator(".validate-button").count() == 1

    tab.scroll_to(stub_cells.first)
    tab.shot("exercise-1-stub")
    tab.scroll_to(written.first)
    tab.shot("written-answer")
    tab.assert_no_console_errors()


def test_lesson_01_solution_runs_clean(tab, course):
    """The solved lesson 01: Run All Cells; no error output, hidden tests pass, plots and seed 001's numbers shown."""
    rel = run_solution(tab, course, "01_context_vectors")

    notebook = tab.notebook()
    plots = sum("plt.show()" in "".join(c["source"]) for c in code_cells(course / rel))
    images = notebook.locator(".jp-OutputArea-output img")
    assert images.count() >= plots, f"{images.count()} images for {plots} plots"
    weights = notebook.locator(".jp-OutputArea-output", has_text="cat's weights:")
    assert weights.count() >= 1
    np.testing.assert_allclose(parse_cat_weights(weights.first.text_content()), [0.432, 0.389, 0.179],
                               atol=1e-3, err_msg="seed 001: cat's weights ≈ (0.432, 0.389, 0.179)")
    tab.scroll_to(images.nth(0))
    tab.shot("shares-plot")
    tab.scroll_to(weights.first)
    tab.shot("cat-dog-phone")
    tab.assert_no_console_errors()
