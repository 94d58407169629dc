"""The formgrader inside JupyterLab (Nbgrader → Formgrader) on the course copy."""
import pytest

from conftest import lesson_ids

pytestmark = pytest.mark.browser


def test_formgrader_lists_the_assignments(tab, course):
    """Nbgrader → Formgrader inside JupyterLab: every lesson of source/ listed, no setup warning."""
    tab.open_lab()
    frame = tab.formgrader()
    names = frame.locator("td.name a")
    lessons = lesson_ids()
    names.nth(len(lessons) - 1).wait_for()
    tab.shot("manage-assignments")
    listed = sorted(names.all_text_contents())
    assert listed == lessons, f"formgrader lists {listed}, source/ has {lessons}"
    # Each row links to its release (notebooks/<id>) for preview; nothing warns about the setup.
    rows = frame.locator("tbody tr")
    for i in range(rows.count()):
        row = rows.nth(i)
        assert row.locator("td.preview a").count() == 1, row.inner_text()
        assert row.locator("td.status").inner_text().strip() in ("draft", "released")
    warnings = frame.locator(".alert-warning, .alert-danger").filter(visible=True)
    assert warnings.count() == 0, warnings.all_inner_texts()
    tab.assert_no_console_errors()
