"""Small notebooks and cells for the per-step tests, with the nbgrader metadata the course's
lessons carry (``nbgrader.tests``' ``create_grade_cell`` and friends, for this course's roles):
an answer cell holding a graded function, its hidden test, a written answer, a locked setup cell.

``lesson()`` builds a whole lesson-shaped notebook in one call; the pieces compose for anything
else. Everything returns ``nbformat`` nodes, ready for a preprocessor or ``nbformat.writes``.
"""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from nbgrader.utils import compute_checksum

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _grading(cell, grade_id, *, grade=False, solution=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = float(points or 0)
    cell.metadata["nbgrader"] = meta
    cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)
    return cell


def plain_code(source, outputs=()):
    """A code cell nbgrader knows nothing about (a demonstration)."""
    cell = new_code_cell(source)
    cell.outputs = list(outputs)
    return cell


def setup_cell(source="import numpy as np"):
    """The locked setup cell every lesson starts with."""
    return _grading(new_code_cell(source), "setup", locked=True)


def answer(name, body="    raise NotImplementedError()", *, args="x"):
    """The answer cell of graded function ``name`` (grade_id = the name): ``def name(args):`` and
    ``body`` (a learner's source: pass ``source=`` to ``answer_source`` instead for a whole cell)."""
    return _grading(new_code_cell(f"def {name}({args}):\n{body}"), name, solution=True)


def answer_source(name, source):
    """The answer cell of ``name`` holding exactly ``source``."""
    return _grading(new_code_cell(source), name, solution=True)


def hidden_test(name, points=3, grade_id=None, visible=None, outputs=()):
    """The graded test cell of ``name``: a docstring, a visible line, the hidden block
    ``check("name")``, and its metadata naming the hidden test (``attention_course.spec``)."""
    visible = visible if visible is not None else (
        f'"""{name} agrees with the reference on hidden, seeded inputs."""\ncheck_attempted({name})\n')
    source = (f"{visible}### BEGIN HIDDEN TESTS\nfrom attention_grading.hidden import check\n"
              f'check("{name}")\n### END HIDDEN TESTS')
    cell = _grading(new_code_cell(source), grade_id or f"{name}_matches_reference", grade=True,
                    locked=True, points=points)
    cell.metadata["attention_course"] = {"spec": name}
    cell.outputs = list(outputs)
    return cell


def visible_check(name, grade_id=None, source=None):
    """A locked, ungraded visible check of ``name``."""
    return _grading(new_code_cell(source or f'"""{name} on the worked example."""\nassert {name}'),
                    grade_id or f"{name}_visible_check", locked=True)


def written_answer(grade_id, text="YOUR ANSWER HERE", points=1):
    """A manually graded markdown answer; ``text`` is what the learner wrote."""
    cell = _grading(new_markdown_cell("YOUR ANSWER HERE"), grade_id, grade=True, solution=True,
                    points=points)
    cell.source = text
    return cell


def prose(text):
    return new_markdown_cell(text)


def notebook(*cells, kernelspec=True):
    nb = new_notebook(cells=list(cells))
    if kernelspec:
        nb.metadata["kernelspec"] = dict(KERNELSPEC)
    return nb


def lesson(functions=("softmax", "contextualize"), written=("self_weight_answer",), points=3):
    """A lesson-shaped notebook: setup, then per function its answer, a visible check and its
    hidden test (``points`` each), then the written answers (1 point each)."""
    cells = [prose("# A lesson"), setup_cell()]
    for name in functions:
        cells += [answer(name), visible_check(name), hidden_test(name, points)]
    cells += [written_answer(w) for w in written]
    return notebook(*cells)


def stream(text, name="stdout"):
    return new_output("stream", name=name, text=text)


def error(ename="ValueError", evalue="wrong"):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def result(data, kind="execute_result", execution_count=1):
    """An ``execute_result`` (or ``display_data`` with ``kind``) of ``data`` ({mime: value})."""
    if kind == "execute_result":
        return new_output(kind, data=data, execution_count=execution_count)
    return new_output(kind, data=data)


def writes(nb):
    """The notebook as the text a learner hands in."""
    return nbformat.writes(nb)
