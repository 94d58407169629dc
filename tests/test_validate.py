"""The Validate button tells the truth, as a learner uses it: ``nbgrader validate`` on the release
with the learner's answers, in a folder of their own, without the course's configuration.

With every answer right it says Success; with one catalogued mistake it fails, and its report holds
the visible check's message (the graded cell after the checks fails while they fail). No
configuration warning. And a demonstration that uses the wrong function stops in one short
message naming that function, not in a traceback through the lesson's code. A kernel slow to say
it is idle (a busy laptop) does not fail a right notebook.
"""
import re

import nbformat
import pytest

import background
import lesson_grading
from conftest import lesson_ids, lessons_using, nbgrader, quick_tier_keeps
from visible_checks import run_visible_checks

LESSONS = lesson_ids()
#: The quick tier validates lesson 01 as a learner; the full tier every lesson.
AS_LEARNER = quick_tier_keeps(LESSONS, LESSONS[:1])


@pytest.fixture(scope="session")
@background.waits
def learner_validation(request):
    """``lesson_grading.validate_as_learner`` on the lessons selected (started in the background)."""
    return background.result(request.session, "learner_validation", lesson_grading.validate_as_learner,
                             lessons_using(request.session, "learner_validation"), after="validation")


def _folded(text):
    return " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", AS_LEARNER)
def test_validate_says_success_when_every_check_passes(lesson, learner_validation):
    """Every answer right: Success, in the learner's own folder."""
    report = learner_validation["right"][f"{lesson}.ipynb"]
    assert "Success! Your notebook passes all the tests." in report, report[-3000:]


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", AS_LEARNER)
def test_validate_fails_with_the_visible_checks_message(lesson, learner_validation):
    """One catalogued mistake: validation fails, and says what the visible check says."""
    report = learner_validation["wrong"][f"{lesson}.ipynb"]
    function, mistake = learner_validation["mistakes"][lesson]
    import catalogue

    outcome = run_visible_checks(lesson, function, catalogue.load(lesson).WRONG[function][mistake])
    assert outcome.failed, f"{function}.{mistake} passes its visible checks"
    assert "VALIDATION FAILED ON" in report and "Success" not in report, report[-3000:]
    assert f"the check of {function} above failed: {_folded(outcome.message)}" in _folded(report), report[-3000:]


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", AS_LEARNER)
def test_a_learner_gets_no_configuration_warning(lesson, learner_validation):
    """nbgrader finds a configuration in the learner's environment: no "No nbgrader_config.py" warning."""
    assert "No nbgrader_config.py file found" not in learner_validation["output"]


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", AS_LEARNER)
def test_a_demonstration_that_uses_a_wrong_function_says_so_briefly(lesson, learner_validation):
    """Each demonstration that fails after the mistake names the function to fix, in a short message."""
    function, _ = learner_validation["mistakes"][lesson]
    problems = [f"{source[:60]!r}: {trace[:600]}" for source, trace in learner_validation["demonstrations"][lesson]
                if f"your {function}" not in trace or len(trace.splitlines()) > 3]
    assert not problems, "\n".join(problems)


#: A cell that makes its kernel announce "idle" six seconds after its reply, once: what a learner's
#: busy laptop or a shared Binder does to a kernel or to the client reading it.
LATE_IDLE = """\
import time
kernel = get_ipython().kernel
announce = kernel._publish_status

def announce_late(status, channel, parent=None):
    if status == "idle" and channel == "shell" and not getattr(kernel, "was_late", False):
        kernel.was_late = True
        time.sleep(6)
    announce(status, channel, parent)

kernel._publish_status = announce_late
"""


@pytest.mark.nbgrader
@pytest.mark.full   # waits out a late kernel; the quick tier validates as a learner in the tests above
def test_validate_waits_for_a_kernel_that_says_idle_late(tmp_path):
    """A kernel slow to say it is idle after a cell is waited for: Validate does not fail the notebook."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(LATE_IDLE), nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "late.ipynb")
    output = nbgrader(tmp_path, "validate", "late.ipynb", check=False).stdout
    assert "Timeout waiting for IOPub output" not in output, output[-2000:]
    assert "Success! Your notebook passes all the tests." in output, output[-2000:]
