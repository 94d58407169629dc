"""Hidden tests driven from the grader, in the guarded kernel.

A hidden-test cell's visible part runs in its place; the kernel then keeps which functions the
notebook's names stand for there. The tests themselves run after the notebook's last cell, in
order, each on the functions as they were at its cell: no cell of the learner's runs once a hidden
input, or a stand-in's answer to one, has entered the kernel. The grader sends the cases in as data
and judges what comes back (``hidden.conversation``, ``hidden.decide``); the calls whose memory
decides points run in fresh kernels (``measurement``).

Each function takes the executor (``client``: ``steps.execute.GuardedExecute``, for its kernel
and its settings) and the notebook's ``RunState``.
"""
from time import monotonic

from nbclient.exceptions import DeadKernelError
from nbclient.util import run_sync

from ..cells import split_hidden
from ..hidden import registry
from ..hidden.calls import plan_calls
from ..hidden.cases import case_generator
from ..hidden.conversation import Conversation, ConversationLimits, StopTest
from ..hidden.decide import cases_pass, decide
from ..results import CRASHED, NOT_RUN, REFUSED, TIMEOUT, Verdict
from .cell_runs import run_cell
from .measurement import measure_in_fresh_kernels
from .recovery import crash, hang, recover
from .session import KernelSession


def run_visible_part(client, state, cell, resources, index):
    """Run the cell's visible part in the kernel, then keep which functions its test calls; the
    test itself runs after the notebook's last cell (``run_after_last_cell``)."""
    name = state.plan.hidden[index]
    original = cell.source
    cell.source = split_hidden(original)[0]
    try:
        cell, resources = run_cell(client, state, cell, resources, index)
    finally:
        cell.source = original
    if state.failed(index) is None:
        keep_functions(client, state, cell, index)
    failed = state.failed(index)
    if failed is not None:
        state.record(cell, Verdict(name, False, f"the visible part of this test cell failed: {failed}",
                                   kind=NOT_RUN))
        state.hidden_order.append((index, name, False))
    else:
        state.kept.add(index)
        state.hidden_order.append((index, name, True))
    return cell, resources


def keep_functions(client, state, cell, index):
    """Remember, in the kernel, the functions the test of cell ``index`` is to call; a kernel
    that dies or hangs doing so has done it at this cell (it is replaced, the test fails)."""
    state.replies.pop(index, None)
    try:
        reply = client.wait_for_reply(client.kc.execute(state.remember_source(index), silent=True,
                                                        store_history=False, allow_stdin=False))
    except DeadKernelError:
        reply = None
        crash(client, state, cell, index)
    except Exception:             # a message the client cannot read
        reply = None
        state.flag("the kernel broke the messaging protocol", index, cell)
        crash(client, state, cell, index)
    else:
        if reply is None:
            hang(client, state, cell, index)
    state.replies[index] = (reply or {}).get("content") or {}


def run_after_last_cell(client, state):
    """Every hidden test whose visible part ran, in the notebook's order, once no cell of the
    learner's is left to run; an earlier function's stand-in is lent once its own test is over."""
    state.after_last_cell = True
    for index, name, ready in state.hidden_order:
        cell = client.nb.cells[index]
        if ready and monotonic() > state.deadline:
            state.record(cell, Verdict(name, False, "not run: the notebook used up its "
                                       f"{client.notebook_timeout} s of grading time", kind=NOT_RUN))
        elif ready:
            verdict = hidden_test(client, state, name, index, cell)
            state.record(cell, verdict)
            if verdict.kind == REFUSED:
                state.flag(verdict.message, index, cell)
        state.completed.add(name)


def hidden_test(client, state, name, index, cell):
    """The verdict of the hidden test ``name`` of cell ``index``, on its cases for this attempt."""
    spec = registry.get(name)
    g = case_generator(state.secret, state.case_key, name)
    cases = spec.cases(g)
    batches, callbacks, extra, measured = plan_calls(spec, cases, g)
    session = KernelSession(client.kc, client.km)
    conversation = Conversation(spec, state.reference, batches, callbacks, state.completed, len(cases),
                                extra, ConversationLimits(parent=client), measured, cases=cases, kept=index)
    conversation.serve_until(min(measured, default=len(batches)))    # measured calls: fresh kernels
    started = monotonic()
    timeout = client.hidden_test_timeout or client.timeout or 30
    if name in state.crashing:      # it already hung or crashed a kernel in this notebook
        timeout = min(timeout, max(client.timeout_after_hang, 1))
    stopped = None
    try:
        run_sync(session.serve)(conversation, timeout, until=max(state.deadline, monotonic() + 1),
                                measurement_factor=client.measurement_timeout_factor,
                                stretch=client.time_stretch)
    except StopTest as stop:
        stopped = stop
        if stop.kind == CRASHED:
            state.crashed.append(index)
            state.mark_broken(cell.source, index)
            recover(client, state, index)
        elif stop.kind == REFUSED or not run_sync(session.settle)(client.km):
            # it ignored the interrupt (or the protocol broke): a fresh kernel goes on
            if stop.kind == TIMEOUT:
                state.hung.append(index)
                state.hung_once = True
                state.mark_broken(cell.source, index)
            recover(client, state, index)
    if stopped is None and measured and cases_pass(spec, state.reference, cases, conversation):
        stopped = measure_in_fresh_kernels(client, state, conversation, measured, index, timeout)
    verdict = decide(spec, state.reference, cases, conversation, stopped)
    verdict.seconds = monotonic() - started
    return verdict
