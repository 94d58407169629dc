"""Hidden test cells, as an instructor runs them (``nbgrader validate`` on source/, a solution
opened in JupyterLab)::

    from attention_grading.hidden import check
    check("softmax")

Under ``nbgrader autograde`` this code never runs: the grader (``execute.GuardedExecute``) reads
the name from the cell and drives the test itself, from outside the sandboxed kernel
(``hidden_tests.run_in_kernel``). Here, in the instructor's own kernel, the same conversation
is served in-process against the learner functions of the calling namespace.
"""
import importlib.util
import sys

from . import spec as spec_module
from .hidden_tests import run_locally
from .paths import REFERENCE_DIR


class HiddenTestFailure(AssertionError):
    """A hidden test failed; the message is the judge's diagnosis."""


REFERENCE_PACKAGE = "attention_reference"


def reference():
    """The reference package (instructor-only), loaded once per process from
    ``instructor/reference`` without putting that folder on ``sys.path``: nothing else of it
    becomes importable, and the grading process's path is as it was."""
    loaded = sys.modules.get(REFERENCE_PACKAGE)
    if loaded is not None:
        return loaded
    init = REFERENCE_DIR / REFERENCE_PACKAGE / "__init__.py"
    spec = importlib.util.spec_from_file_location(REFERENCE_PACKAGE, init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[REFERENCE_PACKAGE] = module      # its own relative imports find it there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[REFERENCE_PACKAGE]
        raise
    return module


def check(name, namespace=None):
    """Raise ``HiddenTestFailure`` with a diagnosis unless the learner's ``name`` agrees with the
    reference; ``namespace`` defaults to the caller's globals (the notebook's)."""
    spec = spec_module.get(name)
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    verdict = run_locally(spec, reference(), namespace)
    if not verdict.passed:
        raise HiddenTestFailure(verdict.message)
    print(f"{name}: hidden tests passed ({verdict.cases} cases).")
