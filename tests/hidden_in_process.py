"""A lesson's hidden test run on any answer, in this process, in well under a second.

The answer runs in the namespace the lesson's earlier cells leave (``visible_checks``), and the
grader's own conversation (``hidden.in_process.run_locally``) drives it: the cases go through the wire
format (``kernel_probe.encode``/``decode``) as they do to a kernel, earlier graded functions are
lent from the reference, and the judge decides. What a graded kernel adds (the sandbox, the
limits) is tested elsewhere; what is decided here is exactly what the judge would decide.

Memory is the exception: measured in the pytest process, it moves with what the process's other
threads allocate and free beside the call. ``measured_verdict`` runs the hidden test in a fresh
interpreter of its own instead, alone as a grading kernel is; ``without_memory_judgement`` leaves
the measurement out, for tests about something else.
"""
import dataclasses
import json

import numpy as np

from attention_grading.hidden import registry
from attention_grading.hidden.in_process import run_locally
from attention_grading.hidden.reference import reference
from attention_grading.kernels.sandbox.limits import BLAS_THREADS, KERNEL_MALLOC
from conftest import fresh_python
from visible_checks import _fresh, _prefix, _quiet, _run_cell


def namespace_with(lesson, function, answer):
    """The lesson's namespace before ``function``'s solution cell, with ``answer`` run in it."""
    namespace = _fresh(_prefix(lesson, function))
    with _quiet():
        _run_cell(answer, f"<answer {function}>", namespace)
    return namespace


def hidden_verdict(lesson, function, answer, seed=0, spec_name=None):
    """The verdict of the hidden test ``spec_name`` (default: ``function``'s) on ``answer``."""
    spec = registry.get(spec_name or function)
    with _quiet():
        return run_locally(spec, reference(), namespace_with(lesson, function, answer),
                           np.random.default_rng(seed))


def measures_memory(function):
    """Whether ``function``'s hidden test measures memory (judged alone: ``measured_verdict``)."""
    spec = registry.get(function)
    return without_memory_judgement(spec) is not spec


def without_memory_judgement(spec):
    """``spec`` as it is, or, when its measurements include memory, without them (the cases alone
    decide): for tests that judge in this process something other than memory."""
    if spec.extra_calls is None or not any(call.memory for call in spec.extra_calls(np.random.default_rng(0))):
        return spec
    return dataclasses.replace(spec, extra_calls=None, judge_extra=None)


_FRESH = """
import json, sys
from hidden_in_process import hidden_verdict
lesson, function, answer, seed = json.load(sys.stdin)
verdict = hidden_verdict(lesson, function, answer, seed)
print(json.dumps({"passed": verdict.passed, "case": verdict.case, "message": verdict.message}))
"""


def measured_verdict(lesson, function, answer, seed=0):
    """``hidden_verdict`` of ``function``'s own hidden test, in a fresh interpreter set up as a
    grading kernel is (one BLAS thread, glibc's fixed mmap threshold): a dict of ``passed``,
    ``case`` and ``message``. With a second BLAS thread, what the first call at a length takes
    varies by up to a megabyte with the machine's load (the thread's buffers), and the ratio of
    the lengths multiplies the short one's figure: a T × T boolean mask then passed now and then."""
    kernel_env = {**{name: "1" for name in BLAS_THREADS}, **KERNEL_MALLOC}
    out = fresh_python(_FRESH, input=json.dumps([lesson, function, answer, seed]), env=kernel_env)
    return json.loads(out.splitlines()[-1])
