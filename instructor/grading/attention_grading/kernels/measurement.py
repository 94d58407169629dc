"""Calls whose memory decides points, each in a fresh kernel where no learner code ran before the
grader started its meter.

A kernel that has run the learner's notebook can hold memory it made resident earlier: a buffer
kept in a global, or freed heap it told the allocator to keep (``mallopt``). A call that reuses
that memory takes no new page, however large its arrays, so no meter outside the kernel sees it
grow. Here measured calls run in a kernel of their own, in a new sandbox (its own memory cgroup)
with an empty scratch folder: the lesson's given cells run there (the course's own code), the
memory they freed goes back to the system, the grader starts the meter, and only then do the
learner's answer cells run, then the calls. Whatever the learner's code uses during a call was
taken after the meter started, so it counts; memory inherited from the kernel's warm parent is
shared copy-on-write, and a page written there is charged to the new kernel too.

Calls that share a kernel (``Call.kernel``: lesson 08's full and causal call at one length) run
one after the other and the meter is never reset between them, so each figure is the most the
sandbox took since the meter started: a later call can only read higher, never hide in memory an
earlier one left behind. A kernel per group rather than per call halves the kernels started.
"""
import shutil
import tempfile
from queue import Empty
from time import monotonic

from nbclient.util import run_sync

from ..hidden.conversation import StopTest
from .kernel_time import Allowance, kernel_pid
from .session import KernelSession, kernel_alive
from ..results import CRASHED, TIMEOUT

# Run by the grader after the given cells, before the meter starts: garbage collected and the
# allocator's free memory handed back, so that the learner's code finds no page to reuse.
SETTLE = """\
import gc as _gc, ctypes as _ctypes
_gc.collect()
try:
    _ctypes.CDLL(None).malloc_trim(0)
except (OSError, AttributeError):
    pass
del _gc, _ctypes
"""


def last_batch_of_each_kernel(measured):
    """``measured`` ({batch: kernel}, one kernel's batches consecutive): the last batch each
    kernel serves, in order."""
    batches = sorted(measured)
    return [batch for batch, following in zip(batches, [*batches[1:], None])
            if following is None or measured[following] != measured[batch]]


class GivenCellFailed(RuntimeError):
    """A cell of the lesson's own code failed in a fresh kernel: the course's fault, not the learner's."""


def measure_in_fresh_kernels(client, state, conversation, measured, index, timeout):
    """Serve the measured batches of ``conversation`` (the last ones; ``measured``: {batch: its
    kernel}, from ``plan_calls``) for the hidden test in cell ``index``, each group in a fresh
    kernel made as the executor ``client`` makes its own (its kernel settings and
    ``configure_kernel_manager``); the ``StopTest`` that ended one early, or None."""
    given, answers = state.plan.definitions_before(index)
    given = [client.nb.cells[i].source for i in given if i not in state.demonstrations]
    answers = [client.nb.cells[i].source for i in answers]
    for last in last_batch_of_each_kernel(measured):
        try:
            run_sync(_measure_in_one_kernel)(client, state, conversation, last, given, answers, timeout)
        except StopTest as stop:
            return stop
    return None


async def _measure_in_one_kernel(client, state, conversation, last, given, answers, timeout):
    """Serve the conversation's next batches, up to ``last``, in a fresh kernel."""
    request = state.sandbox_request.fresh() if state.sandbox_request is not None else None
    scratch = request.scratch if request is not None else tempfile.mkdtemp(prefix="attention-kernel-")
    km = client.kernel_manager_class(config=client.config, kernel_name=client.km.kernel_name)
    client.configure_kernel_manager(km, request, scratch)
    kc = meter = None
    until = max(state.deadline, monotonic() + 1)
    try:
        await km.start_kernel(extra_arguments=client.extra_arguments, cwd=scratch)
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=client.startup_timeout)
        session = KernelSession(kc, km)
        for source in [*given, SETTLE]:
            content = await _run_code(session, _cell_allowance(client, km, until), source, conversation)
            if content.get("status") != "ok":
                raise GivenCellFailed(f"{content.get('ename')}: {content.get('evalue')}"[:300])
        meter = session.meter()
        meter.start()
        for source in answers:       # learner code: from here on, what it takes counts
            await _run_code(session, _cell_allowance(client, km, until), source, conversation)
        conversation.resume(last + 1, meter)
        await session.serve(conversation, timeout, until=until, measurement_factor=client.measurement_timeout_factor,
                            stretch=client.time_stretch)
    finally:
        if meter is not None:
            meter.close()
        if kc is not None:
            kc.stop_channels()
        if km.has_kernel:
            await km.shutdown_kernel(now=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _cell_allowance(client, km, until):
    """A cell's time (``Execute.timeout`` of the kernel's own time) in kernel ``km``, from now."""
    return Allowance(kernel_pid(km), client.timeout or 30, client.time_stretch, until)


async def _run_code(session, allowance, source, conversation):
    """The execute reply's content for ``source``; StopTest if it hangs or its kernel dies."""
    msg_id = session.kc.execute(source, store_history=False, allow_stdin=False, stop_on_error=False)
    while (left := allowance.left()) > 0:
        try:
            reply = await session.kc.get_shell_msg(timeout=min(left, 1.0))
        except Empty:
            if not await kernel_alive(session.km):
                raise StopTest(CRASHED, conversation.calls_done) from None
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return reply.get("content", {})
    raise StopTest(TIMEOUT, conversation.calls_done)
