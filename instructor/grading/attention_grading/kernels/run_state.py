"""One notebook's run under ``steps.execute.GuardedExecute``, held in one object.

Everything the guarded execution learns while it runs a notebook lives here, reset for every
notebook: which cells crashed or hung a kernel, which were skipped or came too late, how many
fresh kernels it took, the kernel's replies, which hidden tests are over, the output budget, the
deadline. The functions that run cells (``cell_runs``), hidden tests (``hidden_runs``),
measurements (``measurement``) and recover from a dead kernel (``recovery``) take it as an
argument, with the nbclient executor whose kernel they drive; none keeps anything of its own.
``finish`` turns it into the notebook's ``NotebookNotes``.
"""
from dataclasses import dataclass, field
from typing import Optional

from ..cells import CellPlan, grade_id, mentions
from ..learner_text import well_formed
from ..results import NOTES_KEY, Flag, NotebookNotes
from .output_caps import OutputBudget

# Run in the kernel right after the visible part of a hidden-test cell (a request of its own, silent):
# which functions the notebook's names stand for there, so that its test (after the last cell)
# calls those. A learner can change what it keeps only to choose among functions of their own.
KEPT = "__attention_kept__"
REMEMBER = """
try:
    globals().setdefault({kept!r}, {{}})[{key!r}] = {{_n: globals()[_n] for _n in {names!r} if _n in globals()}}
except Exception:
    pass
"""


@dataclass
class RunState:
    plan: CellPlan                       # which cell is which
    budget: OutputBudget                 # what outputs may still be kept
    secret: bytes = b""                  # the course's secret (cases.case_generator)
    case_key: str = ""                   # the submission's attempt (cases.case_key)
    reference: object = None             # the hidden reference package
    notes: NotebookNotes = field(default_factory=NotebookNotes)
    deadline: float = float("inf")       # time.monotonic() when the notebook's time is up
    scratch: str = ""                    # the kernel's folder
    sandbox_request: object = None       # kernels.manager.SandboxRequest, or None without a sandbox
    crashed: list = field(default_factory=list)     # cells whose kernel died
    hung: list = field(default_factory=list)        # cells that did not finish in time
    late: list = field(default_factory=list)        # cells not run: the notebook's time was up
    skipped: list = field(default_factory=list)     # cells that call a function that crashed or hung
    demonstrations: set = field(default_factory=set)  # the lesson's cells no grade needs: not run
    restarts: int = 0                    # fresh kernels so far
    crashing: set = field(default_factory=set)      # graded functions that crashed or hung a kernel
    hung_once: bool = False              # some cell timed out: later ungraded cells get a short time
    replies: dict = field(default_factory=dict)     # {cell index: its execute reply's content}
    hidden_order: list = field(default_factory=list)  # (cell index, test name, visible part ran)
    kept: set = field(default_factory=set)          # hidden-test cells whose functions the kernel keeps
    completed: set = field(default_factory=set)     # hidden tests over (their stand-ins may be lent)
    after_last_cell: bool = False        # the hidden tests are running
    lesson_cells: Optional[set] = None   # digests of the lesson's own code cells, or None
    drawing: Optional[bool] = None       # the kernel draws figures as pictures now (None: unknown)

    def record(self, cell, verdict):
        """``verdict`` is the graded cell's (its message well-formed text)."""
        verdict.message = well_formed(verdict.message)
        self.notes.verdicts[grade_id(cell)] = verdict.as_dict()

    def flag(self, why, index=None, cell=None):
        self.notes.flags.append(vars(Flag(why, index, grade_id(cell) if cell is not None else None)))

    def function_of(self, cell, index):
        """The graded function a cell's verdict is about."""
        return self.plan.hidden.get(index) or self.plan.owner.get(index) or grade_id(cell)

    def mark_broken(self, source, index):
        """Remember the graded functions a cell that crashed or hung was using."""
        self.crashing |= {name for name in self.plan.solutions if mentions(source, [name])}
        if self.plan.owner.get(index):
            self.crashing.add(self.plan.owner[index])

    def calls_crashed_code(self, cell):
        """An ungraded cell (a demo, a visible check) that uses a function which crashed or hung.

        Running it would only kill or stall the next kernel too; graded cells and answers always run.
        """
        meta = cell.metadata.get("nbgrader", {})
        if not self.crashing or meta.get("grade") or meta.get("solution") or meta.get("grade_id") == "setup":
            return False
        return mentions(cell.source, self.crashing)

    def failed(self, index):
        """Why the cell's run failed (the kernel died, hung, or replied with an error), or None."""
        if index in self.crashed:
            return "the kernel died while running it"
        if index in self.hung:
            return "it did not finish in the time allowed"
        reply = self.replies.get(index)
        if reply is None:
            return "the kernel did not answer"
        if reply.get("status") != "ok":
            return self.budget.clip(f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}", 300)
        return None

    def remember_source(self, index):
        """The code that keeps, in the kernel, the functions the test of cell ``index`` calls."""
        return REMEMBER.format(kept=KEPT, key=str(index), names=tuple(sorted(self.plan.solutions)))

    def finish(self, nb, max_restarts):
        """The notebook's ``NotebookNotes``: what happened to its cells, and what the restoring
        steps before it recorded in its metadata."""
        notes = self.notes
        notes.crashed_cells = [_describe(nb, i) for i in self.crashed]
        notes.hung_cells = [_describe(nb, i) for i in self.hung]
        notes.not_run_cells = [_describe(nb, i) for i in self.late]
        notes.skipped_cells = [_describe(nb, i) for i in self.skipped]
        notes.kernel_restarts = min(self.restarts, max_restarts)
        restoring = nb.metadata.get(NOTES_KEY, {})
        notes.restored_cells = restoring.get("restored_cells", [])
        notes.missing_answer_cells = restoring.get("missing_answer_cells", [])
        notes.restored_metadata = restoring.get("restored_metadata", [])
        notes.flags += [vars(Flag(f"the nbgrader metadata of {name} was changed; the gradebook's was used",
                                  grade_id=name)) for name in notes.restored_metadata]
        unstamped = restoring.get("unstamped_metadata", [])
        if unstamped:      # not a change: said as what it is, so that it is not read as tampering
            notes.flags.append(vars(Flag(
                f"{len(unstamped)} graded cell(s) carry no nbgrader checksum or cell type, as the notebooks of "
                f"solutions/ are written (a copied solution?) or as a tool that strips nbgrader's stamps leaves "
                f"them; nothing else in their metadata changed, and the gradebook's was used")))
        return notes


def _describe(nb, index):
    cell = nb.cells[index]
    first = cell.source.strip().splitlines()[0][:80] if cell.source.strip() else ""
    return {"cell": index, "grade_id": grade_id(cell), "starts_with": first}
