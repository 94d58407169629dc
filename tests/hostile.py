"""Hostile and broken submissions, built for any lesson from its first graded function.

These are the cases whose handling depends on the lesson (its cells, its tests, what a crash or
a hang interrupts); attacks on the grader itself, which the sandbox stops whatever the lesson,
are in tests/hostile_catalogue.py. Each builder returns a notebook; the expected outcome of each
case is asserted in tests/test_lessons.py and listed in the README.
"""
import nbformat

from notebook_tools import cell_role, grade_id, is_solution_code, is_test, with_answer


def graded_functions(nb):
    return [grade_id(c) for c in nb.cells if is_solution_code(c)]


def patched_helpers(nb, function):
    """A wrong answer plus every trick to make checks pass: numpy, the checks, subprocess, tracebacks."""
    return with_answer(nb, function, f'''
def {function}(*args, **kwargs):
    return np.zeros(3)

np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.array_equal = lambda *a, **k: True
import attention_course.checks as _checks
for _name in dir(_checks):
    if _name.startswith(("check", "cmp")):
        setattr(_checks, _name, lambda *a, **k: None)
import subprocess
class _FakeVerdict:
    returncode, stdout, stderr = 0, '{{"passed": true, "cases": 1, "message": "ok"}}', ""
subprocess.run = lambda *a, **k: _FakeVerdict()
get_ipython().showtraceback = lambda *a, **k: None
''')


def kernel_crash(nb, function):
    """The function kills its own process whenever it is called."""
    return with_answer(nb, function, f'''
def {function}(*args, **kwargs):
    import os
    os._exit(3)
''')


def infinite_loop(nb, function):
    """The function never returns and swallows the interrupt meant to stop it. (It waits rather
    than computes: the grader's limits are wall-clock time, and the test suite's cores are busy.)"""
    return with_answer(nb, function, f'''
def {function}(*args, **kwargs):
    import time
    while True:
        try:
            time.sleep(0.05)
        except BaseException:
            pass
''')


def deleted_test_cells(nb, function):
    """A correct answer whose test cells were deleted by the learner."""
    nb = nbformat.from_dict(nb)
    owner, kept = None, []
    for cell in nb.cells:
        if is_solution_code(cell):
            owner = grade_id(cell)
        if owner == function and (is_test(cell) or (cell_role(cell).get("locked")
                                                     and not cell_role(cell).get("solution"))):
            continue
        kept.append(cell)
    nb.cells = kept
    return nb


def edited_and_duplicated_test_cells(nb, function):
    """A correct answer whose hidden test was emptied, then duplicated."""
    nb = nbformat.from_dict(nb)
    owner, cells = None, []
    for cell in nb.cells:
        if is_solution_code(cell):
            owner = grade_id(cell)
        if owner == function and is_test(cell):
            cell.source = "pass  # no tests here"
            cells.extend([cell, nbformat.from_dict(cell)])
            continue
        cells.append(cell)
    for index, cell in enumerate(cells):
        cell["id"] = f"cell-{index}"
    nb.cells = cells
    return nb


def _wrapped(nb, function, body, at_top_level=""):
    """The correct answer of ``function`` kept as ``_answer_<function>``, behind a wrapper of ``body``."""
    answer = next(c.source for c in nb.cells if grade_id(c) == function and is_solution_code(c))
    call = f"_answer_{function}(*args, **kwargs)"
    return with_answer(nb, function, f"{answer}\n\n_answer_{function} = {function}\n{at_top_level}\n\n"
                                     f"def {function}(*args, **kwargs):\n{body.format(call=call)}\n")


def chatty_correct_with_retyped_test(nb, function):
    """A correct answer that floods stdout, writes to stderr and warns on every call, and whose
    hidden test cell the learner turned into a markdown cell."""
    nb = _wrapped(nb, function, "    import sys, warnings\n"
                                "    for line in range(2000):\n        print('still thinking', line)\n"
                                "    print('working on it', file=sys.stderr)\n"
                                "    warnings.warn('this answer is chatty')\n"
                                "    return {call}",
                  at_top_level="for line in range(20000):\n    print('a long printout, line', line)")
    for cell in nb.cells:
        if grade_id(cell) == f"{function}_matches_reference":
            cell.cell_type = "markdown"
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    return nb


def hard_coded_first_output(nb, function):
    """Remembers what it returned for its first call (the visible example) and returns it ever after."""
    return _wrapped(nb, function, "    if 'first' not in _remembered:\n"
                                  "        _remembered['first'] = {call}\n"
                                  "    return _remembered['first']",
                    at_top_level="_remembered = {}")


CORE_CASES = {
    "patched_helpers": patched_helpers,
    "kernel_crash": kernel_crash,
    "deleted_test_cells": deleted_test_cells,
    "edited_and_duplicated_test_cells": edited_and_duplicated_test_cells,
    "infinite_loop": infinite_loop,
    "hard_coded_first_output": hard_coded_first_output,
    "chatty_correct_with_retyped_test": chatty_correct_with_retyped_test,
}
# Outcome per case: "zero" = the target exercise scores 0 and the rest keep full marks;
# "full" = the (correct) submission keeps full marks. The sandbox denies the reference and the
# grader answers every check: reaching for them costs the exercise, nothing needs flagging.
EXPECTED = {
    "patched_helpers": "zero",
    "kernel_crash": "zero", "infinite_loop": "zero", "hard_coded_first_output": "zero",
    "deleted_test_cells": "full", "edited_and_duplicated_test_cells": "full",
    "chatty_correct_with_retyped_test": "full",
}
