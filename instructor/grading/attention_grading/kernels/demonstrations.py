"""The lesson's demonstrations: cells grading need not run, decided from the notebook's text.

A demonstration is a code cell of the lesson's own (its source, unchanged, is a code cell of the
lesson's ``source/`` notebook: the learner did not write it), neither graded nor an answer nor the
set-up cell, and that
no later cell needs: it binds no name that a later cell which runs reads, and the only names it
shares with those cells are modules and functions (a cell that uses an array, a generator or a
model a later cell reads could change it, so it runs). Since a function reads its globals when
it is called (the hidden tests call the answers after the last cell), a name any cell that runs
reads is needed wherever it is bound; a demonstration kept for that adds its own names, until
nothing changes. Every cell the learner wrote or added, every answer, test and visible part of a
hidden test runs, in order.

Conservative where the text cannot tell: nothing is skipped in a notebook where a cell that runs
cannot be parsed (an IPython magic), reaches names by strings (``globals()``, ``eval``, ``exec``,
``vars``, ``locals``, ``__import__``, ``get_ipython``), or declares ``global``/``nonlocal`` (a
function that writes a global when a demonstration calls it). The hidden tests read the graded
functions and whatever those read. What the text still cannot see (a name reached otherwise) ends
in a ``NameError``, and then ``steps.execute.GuardedExecute`` grades the notebook whole again.
"""
import ast

from ..cells import grade_id, is_code, role
from .figures import code_digest

HARMLESS_MAGICS = {"matplotlib", "config"}     # line magics that reach no name of the notebook
DYNAMIC = {"globals", "eval", "exec", "vars", "locals", "__import__", "get_ipython", "__builtins__"}
NOTE = ("[a demonstration of the lesson: not run while grading, since no grade depends on it; "
        "run the notebook to see its output]\n")


class _Names(ast.NodeVisitor):
    """The global names a cell reads and binds (a function's, a lambda's, a comprehension's or a
    class body's own names left out of both: they are its locals), the names it binds as modules,
    functions and classes, and whether it reaches names in ways the text hides."""

    def __init__(self):
        self.reads, self.binds, self.callables, self.opaque = set(), set(), set(), False

    def visit_Name(self, node):
        (self.reads if isinstance(node.ctx, ast.Load) else self.binds).add(node.id)
        if node.id in DYNAMIC:
            self.opaque = True

    def _scope(self, nodes, arguments=None):
        """Visit ``nodes`` as a scope of their own: only what they read and do not bind is global."""
        inner = _Names()
        for node in nodes:
            inner.visit(node)
        local = inner.binds | _parameters(arguments)
        self.reads |= inner.reads - local
        self.opaque |= inner.opaque

    def _defines(self, node):
        self.binds.add(node.name)
        self.callables.add(node.name)
        for outer in [*node.decorator_list, *getattr(node, "bases", []), *getattr(node, "keywords", [])]:
            self.visit(outer)
        if not isinstance(node, ast.ClassDef):
            self._defaults(node.args)
        self._scope(node.body, getattr(node, "args", None))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _defines

    def _defaults(self, arguments):
        for default in [*arguments.defaults, *[d for d in arguments.kw_defaults if d is not None]]:
            self.visit(default)

    def visit_Lambda(self, node):
        self._defaults(node.args)
        self._scope([node.body], node.args)

    def _comprehension(self, node):
        self.visit(node.generators[0].iter)          # read in the enclosing scope
        rest = [node.elt] if hasattr(node, "elt") else [node.key, node.value]
        parts = [*(g.target for g in node.generators), *(c for g in node.generators for c in g.ifs),
                 *(g.iter for g in node.generators[1:]), *rest]
        self._scope(parts)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Import(self, node):
        for alias in node.names:
            name = alias.asname or alias.name.split(".")[0]
            self.binds.add(name)
            self.callables.add(name)

    visit_ImportFrom = visit_Import

    def visit_Global(self, node):
        self.opaque = True

    visit_Nonlocal = visit_Global

    def visit_ExceptHandler(self, node):
        if node.name:
            self.binds.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.binds.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_Call(self, node):
        """``%matplotlib inline`` (IPython's ``get_ipython().run_line_magic('matplotlib', ...)``)
        reaches no name; any other use of ``get_ipython`` makes the cell opaque."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "run_line_magic" and \
                isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and \
                func.value.func.id == "get_ipython" and node.args and \
                isinstance(node.args[0], ast.Constant) and node.args[0].value in HARMLESS_MAGICS:
            return
        self.generic_visit(node)


def _parameters(arguments):
    if arguments is None:
        return set()
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
             *[a for a in (arguments.vararg, arguments.kwarg) if a is not None]]
    return {a.arg for a in every}


def names(source):
    """The ``_Names`` of ``source`` (IPython's syntax as IPython turns it into Python), or None
    where it is not Python."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        try:
            from IPython.core.inputtransformer2 import TransformerManager

            tree = ast.parse(TransformerManager().transform_cell(source))
        except Exception:
            return None
    found = _Names()
    found.visit(tree)
    return found


def candidate(cell, lesson_cells):
    """A code cell of the lesson's own (its text unchanged: the learner did not write it) that is
    neither graded, an answer nor the set-up."""
    meta = role(cell)
    if not is_code(cell) or meta.get("grade") or meta.get("solution"):
        return False
    if grade_id(cell) == "setup" or not cell.get("source", "").strip():
        return False
    return code_digest(cell.get("source", "")) in lesson_cells


def demonstrations(cells, lesson_cells, graded_functions=()):
    """Indices of the cells of ``cells`` grading need not run (see the module); none when
    ``lesson_cells`` (digests of the lesson's code cells) is None or the text cannot tell."""
    if lesson_cells is None:
        return set()
    read = _names_everywhere(cells)
    if read is None:
        return set()
    kinds = {}      # name -> every way the notebook binds it is a callable (a builtin: not bound)
    for found in read.values():
        for name in found.binds:
            kinds[name] = kinds.get(name, True) and name in found.callables
    candidates = {i for i in read if candidate(cells[i], lesson_cells)}
    if any(read[i].opaque for i in read if i not in candidates):
        return set()
    # A function runs when it is called, maybe after the last cell (the hidden tests): what any
    # cell that runs reads is needed everywhere, so the kept cells grow until nothing changes.
    kept = set(read) - candidates
    while True:
        needed = set(graded_functions).union(*(read[i].reads for i in kept))
        more = {i for i in candidates - kept if read[i].binds & needed
                or not all(kinds.get(name, True) for name in read[i].reads & needed)}
        if not more:
            return set() if any(read[i].opaque for i in kept) else candidates - kept
        kept |= more


def _names_everywhere(cells):
    """{index: _Names} of every code cell, or None when a cell that is not a candidate cannot be
    parsed (a candidate that cannot be parsed simply runs: read as reading every name)."""
    out = {}
    for index, cell in enumerate(cells):
        if not is_code(cell):
            continue
        found = names(cell.get("source", ""))
        if found is None:
            return None
        out[index] = found
    return out


def hidden_reads(plan):
    """The names the hidden tests of a notebook (``CellPlan``) reach in the kernel: the graded
    functions, and every function their specs call, stand in for or lend."""
    from ..hidden import registry

    found = set(plan.solutions)
    for name in set(plan.hidden.values()):
        try:
            spec = registry.get(name)
        except Exception:            # an unknown test: it fails on its own, later
            continue
        target = getattr(spec.target, "name", None)
        found |= {name, *([target] if target else []), *spec.learner_functions, *spec.substitutes, *spec.lent}
    return found


def needs_whole_run(state):
    """Did a cell that ran, or a hidden test, meet a ``NameError`` (a name a skipped demonstration
    might have defined)?"""
    replies = (reply for index, reply in state.replies.items() if index not in state.demonstrations)
    if any((reply or {}).get("ename") == "NameError" for reply in replies):
        return True
    return any("NameError" in str(verdict.get("message", "")) for verdict in state.notes.verdicts.values())
