"""Grading kernels: sandboxed, and forked from a warm parent instead of started cold.

Every kernel runs in the operating-system sandbox of ``sandbox`` (unless an instructor turned it
off explicitly), described per kernel by a ``SandboxRequest`` that ``GuardedExecute`` hangs on
the kernel manager. A cold ``python -m ipykernel_launcher`` spends most of a second importing
IPython, numpy and matplotlib; here a ``zygote`` process (one per grading process and
environment, ``zygote_client``) does those imports once, and each kernel is a fork of it that
enters its sandbox and then starts ipykernel as usual. Interrupts, kills, restarts and crash
detection work as with a cold kernel (see ``zygote_client.ForkedProcess``). With
``GuardedExecute.fork_kernels = False``, or when the zygote cannot serve, kernels start cold
through ``sandbox/launch.py``, in the same sandbox.

A kernel's channels use jupyter_client's ``ipc`` transport: UNIX sockets beside its connection
file, in the grader's scratch folder, which the sandbox's waiter binds before the kernel starts
and hands to it (``sandbox.channels``); the kernel has no network at all. Nobody else can take or
reach those paths, so a kernel always starts on the first try.
"""
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import port_names
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner
from jupyter_core.utils import ensure_async
from traitlets import default

from . import sandbox
from ..course import GRADER_FILES
from ..paths import INSTRUCTOR_DIR
from .sandbox import channels, support
from .sandbox.account import kernel_account
from .sandbox.limits import Limits
from .sandbox.limits import BLAS_THREADS, KERNEL_MALLOC
from .zygote_client import ForkedProcess, zygote_for

# Files of the grader's that may sit in a submission folder: never copied into a kernel's.

LAUNCH_SCRIPT = Path(__file__).parent / "sandbox" / "launch.py"
CHANNELS = "ch"        # the channels' socket paths: <folder of the connection file>/ch-<n>


def shadowing_files(folder):
    """``[(file name, package name)]``: what was handed in beside the notebook under the name of
    a module the kernel imports from its installation (``attention_course/``, ``numpy.py``). The
    kernel imports the installed one (``channels.folder_last``); an instructor is told anyway."""
    import importlib.machinery

    installed = [p for p in sys.path if p and os.path.isdir(p) and os.path.realpath(p) != os.path.realpath(folder)]
    found = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for entry in names:
        if entry.endswith(".ipynb") or entry in GRADER_FILES or entry.startswith("."):
            continue
        if os.path.isdir(os.path.join(folder, entry)):
            name = entry
        elif entry.endswith((".py", ".pyc", ".so", ".pyd")):
            name = entry.split(".", 1)[0]
        else:
            continue
        if not name.isidentifier():
            continue
        if name in sys.builtin_module_names or name in getattr(sys, "stdlib_module_names", ()) or \
                importlib.machinery.PathFinder.find_spec(name, installed) is not None:
            found.append((entry, name))
    return found


class SandboxRequest:
    """What ``GuardedExecute`` asks of one notebook's kernels: their scratch folder, the files
    they start with, the paths that must stay out of their view, their limits (``None`` on the
    kernel manager: no sandbox, only when the instructor asked for that)."""

    def __init__(self, scratch, seed=None, protected=(), limits=None, account=None):
        self.scratch, self.seed, self.protected = scratch, seed, list(protected)
        self.limits, self.account = limits, account

    @classmethod
    def for_submission(cls, folder, course_root, limit_overrides=None):
        """A fresh scratch folder holding a copy of the submission's files (notebooks and the
        grader's own files left out), and the request that confines its kernels to it. Raises
        ``sandbox.SandboxUnavailable`` where this machine cannot sandbox."""
        support.require()
        scratch = tempfile.mkdtemp(prefix="attention-kernel-")
        try:
            seed = os.path.join(scratch, "submission")
            shutil.copytree(folder, seed, symlinks=True, ignore=lambda _, names: [
                n for n in names if n.endswith(".ipynb") or n in GRADER_FILES])
            account = kernel_account()
            if account is not None:   # the kernel's account must reach its folder and connection file
                os.chmod(scratch, 0o711)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        limits = Limits(**{**Limits().as_dict(), **(limit_overrides or {})})
        return cls(scratch, seed, [course_root, str(INSTRUCTOR_DIR), folder], limits, account)

    def fresh(self):
        """The same confinement in a new scratch folder that starts empty: no file of the
        submission and nothing an earlier kernel of it left there (a module that shadows numpy,
        say) can run before the code the caller runs first."""
        scratch = tempfile.mkdtemp(prefix="attention-kernel-")
        seed = os.path.join(scratch, "submission")
        os.mkdir(seed)
        if self.account is not None:
            os.chmod(scratch, 0o711)
        return SandboxRequest(scratch, seed, self.protected, self.limits, self.account)

    def policy(self, channels, requested_env, connection_file):
        root = os.path.join(self.scratch, "sandbox")
        env = sandbox.kernel_environment(requested_env, root)
        env.update({k: "1" for k in BLAS_THREADS})
        env.update(KERNEL_MALLOC)
        env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        return sandbox.make(self.scratch, channels, env, seed=self.seed, readable=[connection_file],
                            protected=self.protected, account=self.account, limits=self.limits)

    def describe(self):
        """How these kernels are confined, in one line (for grading notes and the report)."""
        who = (f"uid {self.account[0]} (account {sandbox.account.ACCOUNT})" if self.account
               else "uid 0 without capabilities")
        return (f"sandboxed: {who}, no_new_privs, Landlock (files, TCP, signals), seccomp (no sockets), "
                f"PID/mount/IPC/network namespaces, every mount read-only but its scratch tmpfs, rlimits, "
                f"{sandbox.limits.cgroup_summary()}")


class SandboxedProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner: every kernel in its sandbox, forked from a zygote
    when it can be, else started cold through the sandbox launcher."""

    async def launch_kernel(self, cmd, **kwargs):
        km = self.parent
        request = getattr(km, "sandbox_request", None)
        env = dict(kwargs.get("env") or os.environ)
        policy = self._policy(request, env)
        zygote = None
        if getattr(km, "fork_kernels", True):
            try:
                zygote = zygote_for(cmd)
            except Exception as exc:
                self.log.warning("no kernel zygote (%s): starting the kernel cold", exc)
        if zygote is not None:
            try:
                return await self._fork(zygote, cmd, env, kwargs, policy)
            except KernelSandboxError:
                raise
            except Exception as exc:
                self.log.warning("the kernel zygote failed (%s): starting the kernel cold", exc)
        if policy is not None:
            policy_file = os.path.join(request.scratch, "policy.json")
            with open(policy_file, "w") as fh:
                fh.write(policy.to_json())
            cmd = [sys.executable, "-I", str(LAUNCH_SCRIPT), policy_file, "--", *cmd]
            kwargs = dict(kwargs, env=policy.env, cwd=request.scratch)
        else:      # no sandbox, started cold: the kernel's folder stays off sys.path (no handed-in file shadows a package)
            cmd = [*cmd, channels.IGNORE_CWD]
        return await super().launch_kernel(cmd, **kwargs)

    def _policy(self, request, env):
        if request is None:
            return None
        return request.policy(self.parent.channel_paths(), env, self.parent.connection_file)

    async def _fork(self, zygote, cmd, env, kwargs, policy):
        cwd = kwargs.get("cwd") or os.getcwd()
        pid, status = zygote.spawn(list(cmd[3:]), policy.env if policy else env, cwd, policy)
        if status.startswith("error"):
            raise KernelSandboxError(status.removeprefix("error: "))
        self.process = ForkedProcess(pid)
        self.pid = pid
        self.pgid = pid  # the child calls setsid(); until it has, signals fall back to the pid
        self.cwd = cwd
        return self.connection_info


class KernelSandboxError(RuntimeError):
    """A kernel's sandbox could not be set up (the message says why)."""


class QuickReadyClient(AsyncKernelClient):
    """``wait_for_ready`` that ends when the kernel has answered, not after 0.2 s of silence.

    jupyter_client's version drains IOPub until nothing arrives for 0.2 s, once per kernel
    start. The kernel's last message about a ``kernel_info`` request is its ``idle`` status,
    so waiting for exactly that one proves IOPub is connected and leaves nothing to drain.
    """

    async def _async_wait_for_ready(self, timeout=None):
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        asked = set()       # a slow kernel may answer an earlier request: any answer will do
        while True:
            asked.add(self.kernel_info())
            try:
                reply = await ensure_async(self.shell_channel.get_msg(timeout=1))
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply" \
                    and reply["parent_header"].get("msg_id") in asked \
                    and await self._idle_after(reply["parent_header"]["msg_id"]):
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


class SandboxedKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` whose kernels are sandboxed (``sandbox_request``), forked from a
    zygote unless ``fork_kernels`` is False, whose channels are UNIX sockets beside its
    connection file (the ``ipc`` transport; the sandbox allows no other), and whose clients are
    ``QuickReadyClient``. Every socket it and its clients open to the kernel refuses a message part
    larger than ``max_message_bytes`` and queues at most ``message_queue`` unread messages, so
    that what a kernel sends cannot take the grader's memory."""

    sandbox_request = None   # set by GuardedExecute before the kernel starts
    fork_kernels = True
    max_message_bytes = 4 << 20       # GuardedExecute passes ConversationLimits' settings
    message_queue = 16

    @default("client_factory")
    def _quick_ready_client(self):
        return QuickReadyClient

    @default("transport")
    def _ipc(self):
        return "ipc"

    def kernel_pid(self):
        """The kernel's own pid (a cold sandboxed kernel's launcher waits outside it, as its parent)."""
        process = self.provisioner.process
        if isinstance(process, ForkedProcess) or self.sandbox_request is None:
            return process.pid
        with open(f"/proc/{process.pid}/task/{process.pid}/children") as fh:
            children = fh.read().split()
        return int(children[0]) if children else process.pid

    def channel_paths(self):
        """The socket path of each of the kernel's five channels (the ``ipc`` transport)."""
        return [f"{self.ip}-{getattr(self, name)}" for name in port_names]

    async def _async_finish_shutdown(self, waittime=None, pollinterval=0.01, restart=False):
        # A kernel leaves within milliseconds of its shutdown reply; polling every 0.1 s (the
        # default) would add most of that tenth of a second to every notebook.
        return await super()._async_finish_shutdown(waittime, pollinterval, restart)

    async def _async_pre_start_kernel(self, **kw):
        if not self.connection_file:
            self.connection_file = os.path.join(tempfile.mkdtemp(prefix="attention-kernel-"), "connection.json")
        if self.transport == "ipc":      # the channels' sockets beside the connection file
            self.ip = os.path.join(os.path.dirname(os.path.abspath(self.connection_file)), CHANNELS)
        for option, value in ((zmq.MAXMSGSIZE, self.max_message_bytes), (zmq.RCVHWM, self.message_queue)):
            self.context.setsockopt(option, value)     # default of every socket made from now on
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        if self.provisioner is None:
            self.provisioner = SandboxedProvisioner(kernel_id=self.kernel_id, kernel_spec=self.kernel_spec,
                                                    parent=self)
        return await super()._async_pre_start_kernel(**kw)
