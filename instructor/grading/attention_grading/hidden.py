"""The in-kernel half of a hidden test: call the learner's function, ask the judge.

Used from hidden test cells as::

    from attention_grading.hidden import check
    check("softmax", softmax)

The learner's outputs (and their inputs after the call, to catch in-place edits) go to a
separate judge process as JSON; the reference never enters the learner's kernel.
"""
import contextlib
import importlib.util
import json
import secrets
import subprocess
import sys

from . import spec as spec_module
from . import wire
from .paths import GRADING_DIR, REFERENCE_DIR
from .quiet import call_quietly

_JUDGE = (
    "import sys; sys.path[:0] = {paths!r}; "
    "from attention_grading.judge import main; main()"
)


class HiddenTestFailure(AssertionError):
    """A hidden test failed; the message is the judge's diagnosis."""


def run_cases(fn, spec):
    """Call ``fn`` on every case; record its output or the exception it raised."""
    results, after = [], []
    for case in spec.cases():
        try:
            out = call_quietly(fn, *case.args, **case.kwargs)
            results.append({"value": wire.encode(out)})
        except Exception as exc:  # the learner's bug, reported as a diagnosis
            results.append({"raised": f"{type(exc).__name__}: {exc}"[:500]})
        after.append([wire.encode(a) if _is_array(a) else None for a in case.args])
    return results, after


def _is_array(value):
    import numpy as np

    return isinstance(value, np.ndarray)


def ask_judge(request):
    """The judge's verdict: from the grader when grading (it records it), else from a subprocess."""
    from . import guard

    if guard.channel() is not None:
        return guard.channel().ask({"type": "judge", "request": request})
    command = [sys.executable, "-I", "-c",
               _JUDGE.format(paths=[str(GRADING_DIR), str(REFERENCE_DIR)])]
    done = subprocess.run(command, input=json.dumps(request), capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError("the grading judge failed; tell your instructor.\n" + done.stderr[-2000:])
    return json.loads(done.stdout)


def _private_reference():
    """The reference package, loaded under a throwaway name and left out of ``sys.modules``."""
    name = f"_trusted_{secrets.token_hex(8)}"
    init = REFERENCE_DIR / "attention_reference" / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]
    return module


def _namespaces(fn):
    """The global namespaces the learner's code behind ``fn`` reads: its own, or, for a grader's
    wrapper around learner functions (``learner_functions``), theirs."""
    spaces = []
    for function in getattr(fn, "learner_functions", None) or (fn,):
        namespace = getattr(function, "__globals__", None)
        if isinstance(namespace, dict) and all(namespace is not s for s in spaces):
            spaces.append(namespace)
    return spaces


@contextlib.contextmanager
def substituted(fn, names):
    """Point ``names`` in the learner's namespace at correct implementations for the duration."""
    spaces = _namespaces(fn) if names else []
    if not spaces:
        yield
        return
    trusted = _private_reference()
    missing = object()
    saved = [{n: namespace.get(n, missing) for n in names} for namespace in spaces]
    try:
        for namespace in spaces:
            namespace.update({n: getattr(trusted, n) for n in names})
        yield
    finally:
        for namespace, before in zip(spaces, saved):
            for n, value in before.items():
                if value is missing:
                    namespace.pop(n, None)
                else:
                    namespace[n] = value


def check(name, fn):
    """Raise ``HiddenTestFailure`` with a diagnosis unless ``fn`` agrees with the reference."""
    spec = spec_module.get(name)
    if not callable(fn):
        raise HiddenTestFailure(f"{name} should be a function, but it is a {type(fn).__name__}.")
    with substituted(fn, spec.substitutes):
        results, after = run_cases(fn, spec)
        measurements = call_quietly(spec.measure, fn) if spec.measure else {}
    verdict = ask_judge({"name": name, "results": results, "after": after,
                         "measurements": measurements})
    if not verdict["passed"]:
        raise HiddenTestFailure(verdict["message"])
    print(f"{name}: hidden tests passed ({verdict['cases']} cases).")
