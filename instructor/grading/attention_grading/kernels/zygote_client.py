"""The kernel zygote's client: one warm parent process per grading process and environment,
which imports IPython, numpy and matplotlib once and forks each kernel from there (``zygote.py``
is the other end), and ``ForkedProcess``, the ``Popen`` stand-in for a forked kernel.

A cold ``python -m ipykernel_launcher`` spends most of a second on those imports; a fork of the
zygote spends none. What the zygote holds in memory every kernel inherits, so its environment
carries nothing of the grader's (``zygote_environment``).
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
from pathlib import Path

from .sandbox.limits import BLAS_THREADS, KERNEL_MALLOC

ZYGOTE_SCRIPT = Path(__file__).with_name("zygote.py")
# What a Python process reads while it imports: kernels forked from one zygote must agree on it.
IMPORT_TIME_PREFIXES = ("PYTHON", "MPL", "LD_", "OPENBLAS_", "OMP_", "MKL_", "VIRTUAL_ENV")
IMPORT_TIME_NAMES = ("HOME", "PATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TMPDIR")
START_TIMEOUT = 120

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

    def spawn(self, argv, env, cwd, policy=None):
        """(pid, status): the kernel's pid and ``ready`` once it has bound its sockets, or
        ``error: ...`` (its sandbox could not be set up), or "" (it died first)."""
        request = json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd),
                              "policy": policy.to_json() if policy is not None else None})
        with self._lock:
            self._sock.sendall((request + "\n").encode("utf-8"))
            line = self._reader.readline()
        if not line:
            raise RuntimeError("the kernel zygote closed its channel")
        reply = json.loads(line)
        return int(reply["pid"]), str(reply.get("status", ""))

    def close(self):
        try:
            self._sock.close()          # the zygote leaves when its channel closes
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()


def zygote_environment():
    """The zygote's own environment: only what imports read (paths, locale, matplotlib's caches),
    never the grader's other variables. A forked kernel's memory is a copy of the zygote's
    (``/proc/self/environ`` included), so nothing secret may ever be in it."""
    import matplotlib

    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME")
           if k in os.environ}
    env.update({k: "1" for k in BLAS_THREADS})
    env.update(KERNEL_MALLOC)
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["MPLCONFIGDIR"] = matplotlib.get_configdir()    # its font cache: built once, not per zygote
    return env


def zygote_for(cmd):
    """The zygote serving this kernel command, started on first use; or None."""
    if len(cmd) < 3 or list(cmd[1:3]) != ["-m", "ipykernel_launcher"]:
        return None
    env = zygote_environment()
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
