"""Grading kernels forked from a warm parent instead of started cold.

A cold ``python -m ipykernel_launcher`` spends most of a second importing IPython, numpy and
matplotlib before it runs the first cell, and grading starts one kernel per notebook. Here a
``zygote`` process (one per grading process and environment) does those imports once; every
kernel is a fork of it that then starts ipykernel as usual, in its own session, with the
environment and working directory jupyter_client asked for. Interrupts, kills, restarts and
crash detection work as with a cold kernel (see ``ForkedProcess``).

``ForkingKernelManager`` is a jupyter_client ``AsyncKernelManager`` whose provisioner forks;
``GuardedExecute`` uses it unless ``GuardedExecute.fork_kernels = False``. Anything the zygote
cannot serve (another kernel command, a zygote that died) falls back to a cold start.
"""
import atexit
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import port_names
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from jupyter_client.provisioning.local_provisioner import LocalPortCache
from jupyter_core.utils import ensure_async
from traitlets import default

ZYGOTE_SCRIPT = Path(__file__).with_name("zygote.py")
# What a Python process reads while it imports: kernels forked from one zygote must agree on it.
IMPORT_TIME_PREFIXES = ("PYTHON", "MPL", "LD_", "OPENBLAS_", "OMP_", "MKL_", "VIRTUAL_ENV")
IMPORT_TIME_NAMES = ("HOME", "PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TMPDIR")
START_TIMEOUT = 120
# jupyter_client picks a kernel's ports by binding and releasing them; until the kernel binds them
# again, any process on the machine may take one (jupyter/jupyter_client#154). A kernel that could
# not bind is started again on fresh ports, at most this many times in all.
BIND_ATTEMPTS = 4

_zygotes = {}
_zygotes_lock = threading.Lock()


def _fingerprint(python, env):
    relevant = sorted((k, v) for k, v in env.items()
                      if k.startswith(IMPORT_TIME_PREFIXES) or k in IMPORT_TIME_NAMES)
    return python, tuple(relevant)


class Zygote:
    """One warm parent process; ``spawn`` forks it into a kernel and returns the kernel's pid."""

    def __init__(self, python, env):
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [python, str(ZYGOTE_SCRIPT), str(theirs.fileno())], pass_fds=[theirs.fileno()],
            env=env, stdin=subprocess.DEVNULL)
        theirs.close()
        self._sock = ours
        self._sock.settimeout(START_TIMEOUT)
        self._reader = ours.makefile("r", encoding="utf-8")
        self._lock = threading.Lock()
        if not json.loads(self._reader.readline() or "{}").get("ready"):
            self.close()
            raise RuntimeError("the kernel zygote did not start")
        self._sock.settimeout(30)

    def alive(self):
        return self.process.poll() is None

    def spawn(self, argv, env, cwd):
        """(pid, bound): the kernel's pid, and whether it got as far as binding its sockets."""
        request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd)})
        with self._lock:
            self._sock.sendall((request + "\n").encode("utf-8"))
            line = self._reader.readline()
        if not line:
            raise RuntimeError("the kernel zygote closed its channel")
        reply = json.loads(line)
        return int(reply["pid"]), bool(reply.get("bound"))

    def close(self):
        try:
            self._sock.close()          # the zygote leaves when its channel closes
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()


def zygote_for(cmd, env):
    """The zygote serving this kernel command and environment, started on first use; or None."""
    if len(cmd) < 3 or list(cmd[1:3]) != ["-m", "ipykernel_launcher"]:
        return None
    key = _fingerprint(cmd[0], env)
    with _zygotes_lock:
        zygote = _zygotes.get(key)
        if zygote is not None and not zygote.alive():
            zygote = _zygotes.pop(key)
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = _zygotes[key] = Zygote(cmd[0], env)
        return zygote


@atexit.register
def close_all():
    with _zygotes_lock:
        while _zygotes:
            _zygotes.popitem()[1].close()


class ForkedProcess:
    """The ``Popen`` surface jupyter_client uses, for a kernel that is the zygote's child.

    Exit is seen through a pidfd (the zygote's children are reaped by the system), so a kernel
    that dies (``os._exit``, a segfault) is noticed at once. The exit status is not knowable
    from here; a finished kernel reports 1 (or the signal that this side sent).
    """

    stdin = stdout = stderr = None

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None
        self._signalled = None
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def poll(self):
        if self.returncode is not None:
            return self.returncode
        if self._pidfd is not None:
            done = bool(select.select([self._pidfd], [], [], 0)[0])
        else:
            try:
                os.kill(self.pid, 0)
                done = False
            except ProcessLookupError:
                done = True
        if done:
            self.returncode = -self._signalled if self._signalled else 1
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, signum):
        if self.poll() is None:
            if signum in (signal.SIGKILL, signal.SIGTERM):
                self._signalled = signum
            os.kill(self.pid, signum)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def terminate(self):
        self.send_signal(signal.SIGTERM)


class ForkingProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, launching through a zygote when it can."""

    async def launch_kernel(self, cmd, **kwargs):
        env = dict(kwargs.get("env") or os.environ)
        try:
            zygote = zygote_for(cmd, env)
        except Exception as exc:
            self.log.warning("no kernel zygote (%s): starting the kernel cold", exc)
            zygote = None
        if zygote is None:
            return await super().launch_kernel(cmd, **kwargs)
        cwd = kwargs.get("cwd") or os.getcwd()
        # As jupyter_client's launcher does, name the parent, so an orphaned kernel exits.
        env["JPY_PARENT_PID"] = str(zygote.process.pid)
        argv = [*cmd[3:], f"--IPKernelApp.parent_handle={zygote.process.pid}"]
        try:
            for attempt in range(1, BIND_ATTEMPTS + 1):
                pid, bound = zygote.spawn(argv, env, cwd)
                if bound or attempt == BIND_ATTEMPTS or self.parent.transport != "tcp":
                    break
                self.log.warning("the kernel could not bind its ports (attempt %d of %d): "
                                 "starting it again on fresh ports", attempt, BIND_ATTEMPTS)
                self._fresh_ports(env)
        except Exception as exc:
            self.log.warning("the kernel zygote failed (%s): starting the kernel cold", exc)
            return await super().launch_kernel(cmd, **kwargs)
        self.process = ForkedProcess(pid)
        self.pid = pid
        self.pgid = pid  # the child calls setsid(); until it has, signals fall back to the pid
        self.cwd = cwd
        return self.connection_info

    def _fresh_ports(self, env):
        """New ports in the connection file (which the next kernel reads); the old ones are
        not handed back to the port cache, since someone else holds at least one of them."""
        km, cache = self.parent, LocalPortCache.instance()
        for name in port_names:
            setattr(km, name, cache.find_available_port(km.ip))
        km._connection_file_written = False
        km.write_connection_file(jupyter_session=env.get("JPY_SESSION_NAME", ""))
        self.connection_info = km.get_connection_info()


class QuickReadyClient(AsyncKernelClient):
    """``wait_for_ready`` that ends when the kernel has answered, not after 0.2 s of silence.

    jupyter_client's version drains IOPub until nothing arrives for 0.2 s, once per kernel
    start. The kernel's last message about a ``kernel_info`` request is its ``idle`` status,
    so waiting for exactly that one proves IOPub is connected and leaves nothing to drain.
    """

    async def _async_wait_for_ready(self, timeout=None):
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            msg_id = self.kernel_info()
            try:
                reply = await ensure_async(self.shell_channel.get_msg(timeout=1))
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply" \
                    and reply["parent_header"].get("msg_id") == msg_id and await self._idle_after(msg_id):
                self._handle_kernel_info_reply(reply)
                return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")

    async def _idle_after(self, msg_id, timeout=1.0):
        """Did IOPub carry the ``idle`` status that closes request ``msg_id``? (False: not connected yet.)"""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                msg = await ensure_async(self.iopub_channel.get_msg(timeout=left))
            except Empty:
                return False
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle" \
                    and msg["parent_header"].get("msg_id") == msg_id:
                return True
        return False

    wait_for_ready = _async_wait_for_ready   # AsyncKernelClient binds the name to the base method


class ForkingKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` whose kernels are forked from a zygote (and whose clients are
    ``QuickReadyClient``)."""

    @default("client_factory")
    def _quick_ready_client(self):
        return QuickReadyClient

    async def _async_finish_shutdown(self, waittime=None, pollinterval=0.01, restart=False):
        # A kernel leaves within milliseconds of its shutdown reply; polling every 0.1 s (the
        # default) would add most of that tenth of a second to every notebook.
        return await super()._async_finish_shutdown(waittime, pollinterval, restart)

    async def _async_pre_start_kernel(self, **kw):
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        if self.provisioner is None:
            self.provisioner = ForkingProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec,
                                                  parent=self)
        return await super()._async_pre_start_kernel(**kw)
