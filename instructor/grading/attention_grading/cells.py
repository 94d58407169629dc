"""The roles of a lesson notebook's cells, read from their nbgrader metadata: the one place that
knows which cell is an answer, a test, a hidden test, and which graded function a test belongs to.

Works on nbformat nodes and on plain JSON dicts alike.
"""
import re

from nbformat.notebooknode import NotebookNode

from .errors import UnnamedHiddenTest

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
#: Where a test cell names the hidden test its hidden block runs: ``metadata.attention_course.spec``
#: (the lesson's source notebook sets it, ``make release`` keeps it, and while grading
#: ``steps.restore.RestoreCells`` puts back the lesson's own: a learner's copy is never read).
SPEC_METADATA, SPEC_KEY = "attention_course", "spec"


def _source(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def role(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell):
    return role(cell).get("grade_id")


def is_code(cell):
    return cell.get("cell_type") == "code"


def is_solution_code(cell):
    """An answer cell holding a graded function."""
    return is_code(cell) and bool(role(cell).get("solution"))


def is_test(cell):
    """A graded test cell (visible part and, maybe, hidden tests)."""
    return is_code(cell) and bool(role(cell).get("grade")) and not role(cell).get("solution")


def is_given_code(cell):
    """Code the lesson gives (its set-up, provided functions): locked, neither an answer nor a
    test, and not a visible check (a check opens with its docstring)."""
    meta = role(cell)
    if not is_code(cell) or not meta.get("locked") or meta.get("grade") or meta.get("solution"):
        return False
    return not _source(cell).lstrip().startswith(("'''", '"""'))


def is_written_answer(cell):
    """A manually graded answer (markdown, or code graded by hand)."""
    meta = role(cell)
    return bool(meta.get("grade")) and bool(meta.get("solution"))


def split_hidden(source):
    """(the part a learner sees, the hidden block) of a test cell's source."""
    if HIDDEN_BEGIN not in source:
        return source, ""
    visible, rest = source.split(HIDDEN_BEGIN, 1)
    return visible, rest.split(HIDDEN_END, 1)[0]


def spec_of(cell):
    """The hidden test a cell's metadata names (``metadata.attention_course.spec``), or None."""
    named = cell.get("metadata", {}).get(SPEC_METADATA)
    name = named.get(SPEC_KEY) if isinstance(named, dict) else None
    return name if isinstance(name, str) and name.isidentifier() else None


def hidden_test_name(cell):
    """The hidden test a test cell's hidden block runs, as its metadata names it (the hidden block
    of ``softmax_matches_reference`` runs ``check("softmax")``: ``metadata.attention_course.spec``
    is ``"softmax"``), or None for a cell without hidden tests. A hidden block whose cell names
    no hidden test is the lesson's mistake: ``UnnamedHiddenTest`` says which cell."""
    if not is_test(cell) or not split_hidden(_source(cell))[1].strip():
        return None
    name = spec_of(cell)
    if name is None:
        raise UnnamedHiddenTest(
            f"the test cell {grade_id(cell)!r} has hidden tests but its metadata names none: give it "
            f'"{SPEC_METADATA}": {{"{SPEC_KEY}": "<the hidden test\'s name>"}} in the lesson\'s source notebook '
            "(beside its nbgrader metadata), then `make release`")
    return name


class CellPlan:
    """Indices of a notebook's cells by role, and the graded function each test belongs to.

    ``hidden``: {index of a test cell with hidden tests: the hidden test it runs}. With
    ``names=False`` (the steps after the kernel, which only ask whether a cell has hidden tests)
    a cell that names none is still there, named ``""``: a notebook graded before its lesson
    named its hidden tests in metadata still gets its page and its table."""

    def __init__(self, cells, names=True):
        self.solutions, self.owner, self.hidden, self.tests, self.written = {}, {}, {}, [], []
        self.grade_ids, self.given, self.answers = {}, [], []
        current = None
        for index, cell in enumerate(cells):
            if grade_id(cell):
                self.grade_ids[index] = grade_id(cell)
            if is_given_code(cell):
                self.given.append(index)
            if is_solution_code(cell) and not role(cell).get("grade"):
                self.answers.append(index)
                current = grade_id(cell)
                self.solutions[current] = index
                self.owner[index] = current
            elif is_test(cell):
                self.tests.append(index)
                self.owner[index] = current
                if not names:
                    if split_hidden(_source(cell))[1].strip():
                        self.hidden[index] = spec_of(cell) or ""
                elif hidden_test_name(cell):
                    self.hidden[index] = hidden_test_name(cell)
            elif is_written_answer(cell):
                self.written.append(index)

    def definitions_before(self, index):
        """(the given cells, the answer cells) before cell ``index``: what a fresh kernel runs to
        have the learner's functions as the learner's notebook had them, without its demonstrations."""
        return [i for i in self.given if i < index], [i for i in self.answers if i < index]

    def tests_of(self, function):
        return [i for i in self.tests if self.owner.get(i) == function]

    def exercise_of_checks(self):
        """{grade_id of a test cell: the graded function it follows}."""
        return {self.grade_ids[i]: self.owner.get(i) for i in self.tests}


def check_title(cell, function=None):
    """What a graded cell is, in words a learner reads: a test as its exercise and the first line
    of its docstring ("softmax: agrees with the reference on hidden, seeded inputs: 1-D to
    3-D, …"), a written answer as its question ("written answer: self weight")."""
    import ast

    name = grade_id(cell) or ""
    if is_written_answer(cell):
        return "written answer: " + name.removesuffix("_answer").replace("_", " ")
    try:
        doc = ast.get_docstring(ast.parse(split_hidden(_source(cell))[0])) or ""
    except SyntaxError:
        doc = ""
    summary = doc.strip().splitlines()[0].rstrip(". ") if doc.strip() else \
        name.replace("_", " ")
    if function:
        summary = summary.removeprefix(function).strip() or summary
        return f"{function}: {summary}"
    return summary


# ---------------------------------------------------------------- what a cell holds

def error_output(ename, evalue):
    """An error output with a one-line traceback (the grader's own messages)."""
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def unscored(output):
    """A kernel's output in a form that scores nothing in nbgrader (``determine_grade`` reads a
    graded cell's first error, stderr text or ``execute_result``): a result becomes display data,
    an error or stderr text becomes printed text; anything else of an unknown kind is dropped."""
    kind = output.get("output_type")
    if kind == "execute_result":
        return NotebookNode(output_type="display_data", data=output.get("data", {}),
                            metadata=output.get("metadata", {}))
    if kind == "error":
        lines = output.get("traceback") or [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return NotebookNode(output_type="stream", name="stdout", text="\n".join(map(str, lines)) + "\n")
    if kind == "stream":
        return NotebookNode(output_type="stream", name="stdout", text=output.get("text", ""))
    if kind == "display_data":
        return output
    return None


def mentions(source, names):
    """Does ``source`` use any of these names (as whole words)?"""
    return any(re.search(rf"\b{re.escape(name)}\b", source) for name in names)
