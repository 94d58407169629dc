"""Time limits that count the kernel's own time, so that a busy machine does not stop a cell an idle
one would finish.

A limit in wall-clock time also counts the time the kernel waited for a CPU while other
processes held them: with four workers, their kernels and whatever else runs beside them, a cell
of 2 s can take 20 s. The kernel's own time is the wall-clock time less that wait, as Linux
counts it for the kernel's main thread, which runs the cells (the second field of
``/proc/<pid>/schedstat``, in nanoseconds). Running, and waiting for anything else (a sleep, a
lock, the grader's reply), both count: a cell that sleeps for ever still reaches its limit.

Learner code can lengthen the wait only by competing with its own main thread (threads or
children beside it), so every limit also ends after ``stretch`` times its length of wall-clock
time. Where the file cannot be read (no such process, another kernel than Linux), own time is
wall-clock time.
"""
import asyncio
import math
from time import monotonic

from nbclient.util import ensure_async


def run_queue_wait(pid):
    """Seconds thread ``pid`` has spent ready to run while waiting for a CPU, or None."""
    try:
        with open(f"/proc/{pid}/schedstat") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError, TypeError):
        return None


def kernel_pid(km):
    """The pid of the kernel's main thread (``SandboxedKernelManager.kernel_pid``; a plain
    manager's process), or None."""
    try:
        pid_of = getattr(km, "kernel_pid", None)
        return pid_of() if pid_of is not None else km.provisioner.process.pid
    except Exception:           # no kernel, or a provisioner without a process
        return None


class Allowance:
    """What is left of one request's time: ``limit`` seconds of the kernel's own time, at most
    ``stretch`` × ``limit`` of wall-clock time, never past ``until`` (a ``time.monotonic()`` value).
    Counted from its creation."""

    def __init__(self, pid, limit, stretch, until=math.inf, waited=run_queue_wait):
        self.pid, self.limit, self.stretch, self.until = pid, limit, stretch, until
        self._waited = waited
        self.started = monotonic()
        self._wait_at_start = waited(pid)

    def wall(self):
        return monotonic() - self.started

    def own(self):
        """Seconds of the kernel's own time since the start."""
        wall, waited = self.wall(), self._waited(self.pid)
        if waited is None or self._wait_at_start is None:
            return wall
        return min(wall, max(0.0, wall - (waited - self._wait_at_start)))

    def left(self):
        """Wall-clock seconds one may wait before asking again; at most 0 once it is used up.
        (Own time never runs faster than the wall clock, so waiting this long never overshoots.)"""
        return min(self.limit - self.own(), self.stretch * self.limit - self.wall(), self.until - monotonic())


#: Seconds an interrupted kernel gets to send the rest of the cell's outputs and say it is done
#: (nbclient's default wait for outputs). One that took the interrupt does so within milliseconds;
#: one that swallowed it never does, and this wait running out is how the grader tells.
AFTER_INTERRUPT = 4


class OwnTimeLimits:
    """A mixin for nbclient's ``NotebookClient`` (``GuardedExecute``, which declares the
    ``time_stretch`` setting): a cell's ``timeout`` counts the kernel's own time. nbclient calls
    ``_async_handle_timeout`` once the timeout has passed on the wall clock; this waits on while
    the kernel has had less than that to itself.

    The wait for a cell's last outputs (``iopub_timeout``) stays long after a reply (the outputs
    are on their way; on a busy machine megabytes of them take a while to read) and becomes short
    once the kernel has been interrupted (``AFTER_INTERRUPT``)."""

    def _get_timeout(self, cell):
        # nbclient asks for the limit just after it has sent a request: the request's clock starts here.
        self._allowance = Allowance(kernel_pid(self.km), math.inf, self.time_stretch)
        return super()._get_timeout(cell)

    async def _async_poll_for_reply(self, *args, **kwargs):
        configured, self._awaiting_outputs = self.iopub_timeout, True
        try:
            return await super()._async_poll_for_reply(*args, **kwargs)
        finally:
            self.iopub_timeout, self._awaiting_outputs = configured, False

    async def _async_handle_timeout(self, timeout, cell=None):
        allowance = getattr(self, "_allowance", None)
        if allowance is not None:
            allowance.limit = timeout          # the limit nbclient waited for
            while (left := allowance.left()) > 0:
                await self._async_check_alive()
                if await ensure_async(self.kc.shell_channel.msg_ready()):
                    return None             # nbclient reads it, and comes back if it was not the reply
                await asyncio.sleep(min(left, 0.2))
        if getattr(self, "_awaiting_outputs", False):     # (``wait_for_reply`` waits for none)
            self.iopub_timeout = min(self.iopub_timeout, AFTER_INTERRUPT)
        return await super()._async_handle_timeout(timeout, cell)
