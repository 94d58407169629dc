"""One cell of the learner's notebook run in the guarded kernel: a kernel that dies, hangs or breaks
the messaging protocol while running it is marked and replaced (``recovery``), never the end of
the notebook; a graded cell without a hidden test gets the verdict of its own run.

Each function takes the executor (``client``: ``steps.execute.GuardedExecute``, whose
``execute_plain`` is nbgrader's own execution of one cell) and the notebook's ``RunState``.
"""
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from ..cells import error_output
from ..results import CRASHED, RAISED, RAN, TIMEOUT, Verdict
from . import figures
from .recovery import crash, hang, responsive


def run_cell(client, state, cell, resources, index):
    """Run cell ``index`` (its figures drawn if the learner wrote it); what went wrong is in its
    outputs and in ``state``."""
    if not client.render_figures and state.lesson_cells is not None:
        figures.draw_figures(client, state, figures.learners_own(state, cell), index)
    try:
        cell, resources = client.execute_plain(cell, resources, index)
    except CellTimeoutError:
        # the kernel answered the interrupt but kept running (it swallowed it)
        cell.outputs.append(error_output("CellTimeoutError", f"the cell ran longer than {client.timeout} s"))
        hang(client, state, cell, index)
        return cell, resources
    except DeadKernelError:
        cell.outputs.append(error_output("KernelDied", "the kernel died while running this cell (os._exit, "
                                         "a crash, or too much memory); later cells ran in a fresh kernel"))
        crash(client, state, cell, index)
        return cell, resources
    except Exception as exc:       # a message the client cannot read: the kernel broke the protocol
        cell.outputs.append(error_output("KernelProtocolError", "the kernel sent a message the grader "
                                         f"cannot read ({type(exc).__name__}); later cells ran in a fresh kernel"))
        state.flag(f"the kernel broke the messaging protocol ({type(exc).__name__})", index, cell)
        crash(client, state, cell, index)
        return cell, resources
    timed_out = (state.replies.get(index) or {}).get("ename") == "CellTimeoutError"
    if timed_out:
        state.hung_once = True
        state.mark_broken(cell.source, index)
        if not responsive(client):
            hang(client, state, cell, index, mark=False)
    return cell, resources


def ran_verdict(state, cell, index):
    """The verdict of a graded cell without a hidden test: whether it ran without an error
    (from the kernel's execute reply: such a cell tests inside the kernel, which no lesson does)."""
    failed = state.failed(index)
    name = state.function_of(cell, index)
    if failed is None:
        return Verdict(name, True, "the cell ran without an error", kind=RAN)
    kind = CRASHED if index in state.crashed else TIMEOUT if index in state.hung else RAISED
    return Verdict(name, False, f"the cell failed: {failed}", kind=kind)
