"""A hidden test's conversation served to a live kernel: ``kernel_probe`` runs there (one execute
request) and asks the grader over the kernel's stdin channel; each batch of calls gets its time
(``kernel_time.Allowance``), a dead or silent kernel stops the test (``StopTest``)."""
import asyncio
import json
import time
from pathlib import Path

import zmq

from ..hidden import kernel_probe
from ..hidden.conversation import StopTest
from ..learner_text import scrubbed
from ..results import CRASHED, REFUSED, TIMEOUT
from .kernel_time import Allowance, kernel_pid

PROBE_SOURCE = Path(kernel_probe.__file__).read_text()
PROBE_CODE = (f"exec(compile({PROBE_SOURCE + chr(10) + 'main()' + chr(10)!r}, '<grader probe>', 'exec'), "
              f"{{'__name__': '__attention_probe__'}})")


class KernelSession:
    """Run ``kernel_probe`` in a live kernel (one execute request) and serve its stdin requests."""

    def __init__(self, kernel_client, kernel_manager):
        self.kc, self.km = kernel_client, kernel_manager

    def meter(self):
        """The memory meter of the kernel's sandbox (``kernels.sandbox.meter``)."""
        from ..kernels.sandbox.meter import meter_for

        return meter_for(self.km.kernel_pid())

    async def serve(self, conversation, timeout, until=None, measurement_factor=4.0, stretch=4.0):
        """``run``, with a message the grader cannot read taken as a refusal (``StopTest``)."""
        try:
            await self.run(conversation, timeout, until=until, measurement_factor=measurement_factor,
                           stretch=stretch)
        except StopTest:
            raise
        except Exception as exc:
            raise StopTest(REFUSED, conversation.calls_done,
                           f"the kernel sent a message the grader cannot read ({type(exc).__name__})") from None

    async def run(self, conversation, timeout, until=None, measurement_factor=4.0, stretch=4.0):
        """Serve until the probe's execute reply arrives; StopTest on a timeout or a dead kernel.

        Each batch of calls gets ``timeout`` seconds of the kernel's own time (the measurement
        batch, ``measurement_factor`` times that; ``kernel_time.Allowance``, with its ``stretch``),
        counted from the moment the kernel receives it, and none may run past ``until`` (a
        ``time.monotonic()`` value: the notebook's own limit)."""
        self.msg_id = msg_id = self.kc.execute(PROBE_CODE, silent=False, store_history=False, allow_stdin=True,
                                 stop_on_error=False)
        until = until or float("inf")
        timeout = timeout * conversation.spec.time_factor
        pid = kernel_pid(self.km)
        allowance = Allowance(pid, timeout, stretch, until)
        poller = zmq.asyncio.Poller()
        stdin, shell, iopub = (self.kc.stdin_channel.socket, self.kc.shell_channel.socket,
                               self.kc.iopub_channel.socket)
        for socket in (stdin, shell, iopub):
            poller.register(socket, zmq.POLLIN)
        while True:
            left = allowance.left()
            if left <= 0:
                raise StopTest(TIMEOUT, conversation.calls_done)
            events = dict(await poller.poll(int(min(left, 1.0) * 1000)))
            if not events:
                if not await kernel_alive(self.km):
                    raise StopTest(CRASHED, conversation.calls_done)
                continue
            if iopub in events:
                await self.kc.iopub_channel.get_msg(timeout=0)      # outputs of the probe: dropped
            if stdin in events:
                request = await self.kc.stdin_channel.get_msg(timeout=0)
                prompt = request.get("content", {}).get("prompt", "")
                if not prompt.startswith(kernel_probe.MAGIC):
                    self.kc.input("")       # the learner's own input(): an empty answer
                    continue
                try:
                    message = json.loads(prompt[len(kernel_probe.MAGIC):])
                except ValueError:
                    raise StopTest(REFUSED, conversation.calls_done, "the kernel sent a malformed request") from None
                reply = conversation.reply(message)
                if "calls" in reply and conversation.fresh_batch:    # a new batch: its own time
                    share = measurement_factor if conversation.next_batch > conversation.cases_batches else 1
                    allowance = Allowance(pid, share * timeout, stretch, until)
                self.kc.input(json.dumps(reply))
            if shell in events:
                reply = await self.kc.shell_channel.get_msg(timeout=0)
                if reply.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                if conversation.finished:
                    return
                content = reply.get("content", {})
                detail = (scrubbed(f"{content.get('ename', 'Error')}: {content.get('evalue', '')}", 300)
                          if content.get("status") != "ok" else "the kernel ended the test early")
                raise StopTest(REFUSED, conversation.calls_done, detail)

    async def settle(self, km, seconds=2.0):
        """After a stop: interrupt the probe and wait for its reply; False if the kernel does not
        answer (it ignores interrupts, or is gone), so that the caller replaces it. A kernel that
        takes the interrupt answers within milliseconds: a longer wait only delays the fresh one."""
        if not await kernel_alive(km):
            return False
        await _maybe_await(km.interrupt_kernel())
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                if await self.kc.stdin_channel.msg_ready():
                    await self.kc.stdin_channel.get_msg(timeout=0)
                    self.kc.input(json.dumps({"error": "the grader stopped this hidden test"}))
                    continue
                reply = await self.kc.shell_channel.get_msg(timeout=min(left, 0.2))
            except Exception:      # queue.Empty: nothing yet
                continue
            if reply.get("parent_header", {}).get("msg_id") == self.msg_id:
                return True
        return False


async def _maybe_await(value):
    return await value if asyncio.iscoroutine(value) else value


async def kernel_alive(km):
    result = km.is_alive()
    return await result if asyncio.iscoroutine(result) else result
