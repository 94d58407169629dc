"""What the guarded execution does when learner code crashes its kernel or hangs: remember which
graded functions were running, skip the demonstrations that would only crash or hang again, and
go on in a fresh kernel that has the earlier cells' definitions replayed.

Each function takes the nbclient executor whose kernel it drives (``client``: its kernel manager
and client, ``execute_cell``, ``wait_for_reply``, ``max_restarts``) and the notebook's
``run_state.RunState``.
"""
import copy

from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode


def crash(client, state, cell, index):
    """Cell ``index`` killed its kernel: a fresh one goes on."""
    state.crashed.append(index)
    state.mark_broken(cell.source, index)
    recover(client, state, index)


def hang(client, state, cell, index, mark=True):
    """Cell ``index`` did not finish and its kernel no longer answers: a fresh one goes on."""
    state.hung_once = True
    state.hung.append(index)
    if mark:
        state.mark_broken(cell.source, index)
    recover(client, state, index)


def responsive(client):
    """Does the kernel still run code? (It may have swallowed the interrupt and kept looping, or
    taken it and stopped answering.)

    A kernel that took the interrupt runs ``pass`` in milliseconds; one still looping would
    only burn the wait, so the wait is short and a fresh kernel costs little more.
    """
    saved, client.timeout = client.timeout, 3
    try:
        # nbclient gives None, not an error, when the reply does not come in time
        return client.wait_for_reply(client.kc.execute("pass", store_history=False)) is not None
    except Exception:
        return False
    finally:
        client.timeout = saved


def recover(client, state, upto):
    """A fresh kernel with the definitions of every earlier non-test cell replayed (what the
    replay shows is dropped: each cell keeps what its first run showed, at its own index); once the
    hidden tests run, of the whole notebook as it ran."""
    state.drawing = client.render_figures        # a fresh kernel starts as configured
    if state.after_last_cell:
        upto = len(client.nb.cells)
    while True:
        state.restarts += 1
        if state.restarts > client.max_restarts:
            state.deadline = 0  # give up: remaining test cells score 0 with a message
            return
        run_sync(client.km.restart_kernel)(now=True)
        client.kc.stop_channels()
        client.start_new_kernel_client()
        client.wait_for_reply(client.kc.kernel_info())
        broken = set(state.crashed) | set(state.hung) | set(state.skipped)
        replies = dict(state.replies)
        try:
            for j in range(upto):
                source = replay_source(state, client.nb.cells[j], j, broken)
                if source is None:
                    continue
                original = client.nb.cells[j]
                try:
                    client.execute_cell(NotebookNode(copy.deepcopy(original), source=source), j, store_history=True)
                finally:
                    client.nb.cells[j] = original  # nbclient stored the copy there: keep the first run
            return
        except Exception:          # it died again, or broke the protocol: skip that cell
            state.crashed.append(j)
        finally:
            state.replies = replies


def replay_source(state, cell, index, broken):
    """The code a fresh kernel runs again for cell ``index``, or None: every code cell before
    the one that broke, except tests and cells that broke a kernel themselves; at a hidden test's
    cell whose visible part ran, the functions it keeps for its test."""
    if index in state.kept and index not in broken:
        return state.remember_source(index)
    if cell.cell_type != "code" or index in broken or index in state.plan.tests or index in state.demonstrations:
        return None
    return cell.source
