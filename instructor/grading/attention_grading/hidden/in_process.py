"""Hidden test cells, as an instructor runs them (``nbgrader validate`` on source/, a solution
opened in JupyterLab)::

    from attention_grading.hidden import check
    check("softmax")

Under ``nbgrader autograde`` this code never runs: the grader (``execute.GuardedExecute``) reads
the name from the cell and drives the test itself, from outside the sandboxed kernel
(``hidden_tests.KernelSession``). Here, in the instructor's own kernel, the same conversation
is served in-process against the learner functions of the calling namespace.
"""
import sys

from . import registry
from .conversation import run_locally
from .reference import reference


class HiddenTestFailure(AssertionError):
    """A hidden test failed; the message is the judge's diagnosis."""


def check(name, namespace=None):
    """Raise ``HiddenTestFailure`` with a diagnosis unless the learner's ``name`` agrees with the
    reference; ``namespace`` defaults to the caller's globals (the notebook's). The cases are
    drawn afresh on every call (graded submissions get theirs from the course's secret)."""
    import numpy as np

    spec = registry.get(name)
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    verdict = run_locally(spec, reference(), namespace, np.random.default_rng())
    if not verdict.passed:
        raise HiddenTestFailure(verdict.message)
    print(f"{name}: hidden tests passed ({verdict.cases} cases).")
