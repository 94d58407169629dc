"""Hidden test cells, as an instructor runs them (``nbgrader validate`` on source/, a solution
opened in JupyterLab)::

    from attention_grading.hidden import check
    check("softmax")

Under ``nbgrader autograde`` this code never runs: the grader (``steps.execute.GuardedExecute``) reads
the name from the cell and drives the test itself, from outside the sandboxed kernel
(``kernels.session.KernelSession``). Here, in the instructor's own kernel, the same conversation
is served in-process against the learner functions of the calling namespace.
"""
import sys

from . import kernel_probe, registry
from .calls import plan_calls
from .conversation import Conversation
from .decide import decide
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


def _allocate_as_a_kernel():
    """Large arrays on pages of their own from now on, as in a grading kernel
    (``kernels.sandbox.limits.KERNEL_MALLOC``), and the free memory this process's heap holds given back,
    so that what a measured call allocates is counted: glibc raises its mmap threshold as a
    process frees large blocks, and a heap that kept them serves the call without a new page."""
    import ctypes

    from ..kernels.sandbox.limits import KERNEL_MALLOC

    threshold = int(KERNEL_MALLOC["GLIBC_TUNABLES"].rsplit("=", 1)[1])
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, threshold)                        # M_MMAP_THRESHOLD
        libc.malloc_trim(0)
    except (OSError, AttributeError):                      # not glibc
        pass


def run_locally(spec, reference, namespace, g, completed=()):
    """The hidden test in this process: the learner's functions are looked up in ``namespace``;
    the cases are drawn from the generator ``g``; memory is this process's."""
    import os

    from ..kernels.sandbox.meter import ProcessMeter

    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    if measured:
        _allocate_as_a_kernel()
    conversation = Conversation(spec, reference, batches, callbacks, completed or spec.substitutes, len(cases),
                                extra, measured=measured, meter=ProcessMeter(os.getpid()), cases=cases)
    kernel_probe.serve(namespace, conversation.reply)
    return decide(spec, reference, cases, conversation)
