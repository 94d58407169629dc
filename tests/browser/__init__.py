"""The course in a real browser: JupyterLab, the widgets and the formgrader, in Debian's Chromium.

Playwright (the PyPI package) drives ``/usr/bin/chromium``, never a downloaded browser. One
JupyterLab serves a disposable copy of the course (``conftest.copy_course``) on 127.0.0.1 with a
random token, from the course root so that nbgrader finds ``nbgrader_config.py``; running
notebooks writes outputs and checkpoints into that copy, never into the repository. The make-lab
test starts ``make lab`` exactly as the README says and stops it again; the sanitising test grades
a hostile submission in a course copy of its own and opens it in that copy's formgrader. The
learner-loop test runs nbgrader's exchange loop through the Assignments panel of a JupyterLab
running as a real learner account (made and removed by the test, as root) and through the
formgrader of the instructor's own course copy.

Every step leaves a screenshot in ``test-artifacts/browser/`` (one PNG per step, named after the
test), with the browser console of each test and the JupyterLab logs beside them.

Helpers: ``servers`` (JupyterLab processes, also as another account), ``pages`` (the page
object ``Tab``, notebook and explorer lookups), ``scripts`` (JavaScript run in the page),
``parsers`` (widget texts), ``probes`` (what tells that learner script ran); fixtures in
``conftest``; the learners' accounts in ``tests/accounts.py``.
"""
import pytest

# Their assertions explain failures as the tests' own do (imported after this line).
pytest.register_assert_rewrite(*(f"{__name__}.{helper}" for helper in ("pages", "parsers", "probes")))
