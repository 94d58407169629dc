"""Run a lesson's visible checks on any answer, in this process, in well under a second.

For one graded function: execute the lesson's code cells that come before its solution cell once
(setup, provided code, demonstrations, the correct solutions of the earlier exercises; hidden
test cells skipped), then, for each answer, a fresh copy of that namespace runs the answer and the
visible test cells that follow the solution cell. The outcome is what a learner would see: the
message of the first check that failed, or nothing.
"""
import ast
import contextlib
import io
import linecache
import os
import warnings
from dataclasses import dataclass
from functools import lru_cache

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402

from conftest import ROOT, fresh_python  # noqa: E402
from notebook_tools import cell_role, grade_id, is_solution_code, is_test  # noqa: E402


@dataclass
class Outcome:
    failed: bool
    message: str = ""
    error: str = ""


def _is_visible_check(cell):
    meta = cell_role(cell)
    return cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution")


@lru_cache(maxsize=None)
def layout(lesson):
    """``(code cells, {function: (index of its solution cell, [indices of its visible checks])})`` for
    the functions graded here (a test cell follows their checks); a function the lesson asks to paste
    from an earlier lesson, with no test of its own here (lesson 09's ``split_heads``), is left out."""
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    functions, graded, current = {}, set(), None
    for i, cell in enumerate(cells):
        if is_solution_code(cell):
            current = grade_id(cell)
            functions[current] = (i, [])
        elif current and is_test(cell):
            graded.add(current)
            current = None
        elif current and _is_visible_check(cell):
            functions[current][1].append(i)
    return cells, {name: where for name, where in functions.items() if name in graded}


def _run_cell(source, name, namespace):
    """Run a cell's code in ``namespace``; the value its last line shows under the cell in a notebook
    (IPython displays a final expression that is not None and not ended by ``;``), or None."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("%"))
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    if last is None or code.rstrip().endswith(";"):
        exec(compile(tree, name, "exec"), namespace)
        return None
    exec(compile(ast.Module(tree.body[:-1], type_ignores=[]), name, "exec"), namespace)
    return eval(compile(ast.Expression(last.value), name, "eval"), namespace)


@contextlib.contextmanager
def _quiet():
    saved = os.environ.get("NBGRADER_EXECUTION")
    os.environ["NBGRADER_EXECUTION"] = "autograde"     # demonstrations do their short versions
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        plt.close("all")
        if saved is None:
            os.environ.pop("NBGRADER_EXECUTION", None)
        else:
            os.environ["NBGRADER_EXECUTION"] = saved


@lru_cache(maxsize=None)
def _prefix(lesson, function):
    """The namespace after every code cell before ``function``'s solution cell."""
    cells, functions = layout(lesson)
    namespace = {"__name__": "__main__"}
    with _quiet():
        for i, cell in enumerate(cells[: functions[function][0]]):
            if not is_test(cell):
                _run_cell(cell.source, f"<{lesson} cell {i}>", namespace)
    return namespace


def _fresh(namespace):
    """A copy of ``namespace`` in which arrays (also inside dicts) can be changed without harm."""
    out = dict(namespace)
    for key, value in namespace.items():
        if isinstance(value, np.ndarray):
            out[key] = value.copy()
        elif isinstance(value, dict) and any(isinstance(v, np.ndarray) for v in value.values()):
            out[key] = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in value.items()}
    return out


def run_visible_checks(lesson, function, answer, earlier=None):
    """What the visible checks of ``function`` say about ``answer`` (the source of its solution cell).

    ``earlier`` optionally replaces earlier functions: ``{name: source}``.
    """
    cells, functions = layout(lesson)
    namespace = _fresh(_prefix(lesson, function))
    with _quiet():
        try:
            for name, source in (earlier or {}).items():
                _run_cell(source, f"<answer {name}>", namespace)
            _run_cell(answer, f"<answer {function}>", namespace)
            for i in functions[function][1]:
                _run_cell(cells[i].source, f"<{lesson} cell {i}>", namespace)
        except Exception as exc:  # what the learner would see
            return Outcome(True, str(exc), type(exc).__name__)
    return Outcome(False)


_ALONE = """
import json, sys
from dataclasses import asdict
from visible_checks import run_visible_checks
lesson, function, answer = json.load(sys.stdin)
print(json.dumps(asdict(run_visible_checks(lesson, function, answer))))
"""


def run_visible_checks_alone(lesson, function, answer):
    """``run_visible_checks`` in a fresh interpreter, alone as in a learner's kernel: for the
    memory checks, whose ``tracemalloc`` counts every thread of its process, the pytest process's
    background runs included (a correct answer once read 1.6 MB too much at T = 2048 there)."""
    import json

    out = fresh_python(_ALONE, input=json.dumps([lesson, function, answer]))
    return Outcome(**json.loads(out.splitlines()[-1]))


def named(outcome, keywords):
    """True when the message contains every keyword (case-insensitive)."""
    text = outcome.message.lower()
    return outcome.failed and all(k.lower() in text for k in keywords)
