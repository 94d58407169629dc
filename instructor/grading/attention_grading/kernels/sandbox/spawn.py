"""Start a process in a new sandbox: a small waiter outside, the sandboxed process inside.

The waiter (a fork of the caller, or the cold launcher itself) binds the kernel's channel sockets
(``channels``), makes the user namespace (without root), the cgroups and the PID namespace, forks
the sandboxed process (PID 1 of that namespace), reports its pid, waits for it, then removes the
cgroups. When PID 1 of a namespace ends, Linux kills every process left in it, so nothing a kernel
started outlives it; the waiter and the kernel both die with their parent (``PR_SET_PDEATHSIG``).
Every fork goes through ``forking.fork_reporting``. Used by the kernel zygote (``zygote.py``), the
cold-start launcher (``launch.py``) and the sandbox check (``support``).
"""
import os
import signal
from dataclasses import dataclass, field

from . import channels
from ._libc import CLONE_NEWPID, CLONE_NEWUSER, PR_SET_PDEATHSIG, prctl, unshare
from .enter import enter
from .forking import error_line, fork_reporting, wait_for
from .limits import Cgroups


@dataclass
class Prepared:
    """What the waiter made before the sandboxed process: its cgroups and its channel sockets."""
    cgroups: object = None
    sockets: dict = field(default_factory=dict)    # {endpoint: inherited listening socket}

    def release(self):
        """The waiter's copies of the sockets (the sandboxed process has its own)."""
        channels.close(self.sockets)
        self.sockets = {}


def enter_user_namespace():
    """Without root: become root of a new user namespace (no power outside it) to make the others."""
    uid, gid = os.getuid(), os.getgid()
    unshare(CLONE_NEWUSER)
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def prepare_namespace(policy):
    """In the waiter: the channel sockets, the user namespace (without root), cgroups (where
    possible), the PID namespace."""
    prepared = Prepared(sockets=channels.listen(policy.channels))
    try:
        if os.geteuid() != 0:
            enter_user_namespace()
        prepared.cgroups = Cgroups(policy.limits) if os.getuid() == 0 else None
        unshare(CLONE_NEWPID)
    except BaseException:
        prepared.release()
        raise
    return prepared


def run_inside(policy, prepared, report, then):
    """In the sandboxed process: enter the sandbox, then ``then(report, sockets)``; never returns.

    ``then`` reports ``ready`` when the process is ready (or leaves that to an exec'd program);
    a failure to enter is reported as ``error: <why>``.
    """
    try:
        enter(policy, prepared.cgroups)
    except BaseException as exc:
        report(error_line(f"the sandbox could not be set up ({type(exc).__name__}: {exc})"))
        os._exit(70)
    then(report, prepared.sockets)
    os._exit(1)


def start_inside(policy, prepared, then, close=()):
    """In the waiter: fork the sandboxed process; ``(its pid, its status line)``."""
    return fork_reporting(lambda report: run_inside(policy, prepared, report, then), close=close)


def wait_and_clean(pid, prepared):
    """In the waiter: wait for the sandboxed process, remove its cgroups; returns its exit code."""
    code = wait_for(pid)
    if prepared.cgroups is not None:
        prepared.cgroups.remove()
    return code


def fork_sandboxed(policy, then, close=()):
    """Fork a waiter and, through it, a sandboxed process running ``then(report, sockets)``
    (see ``run_inside``).

    Returns ``(pid, status)``: the sandboxed process's pid (as the caller sees it) and the line it
    reported (``ready``, ``error: ...``, or ``""`` if it died first). The caller must be
    single-threaded (it forks). ``close``: the caller's file descriptors the new processes must
    not keep (the zygote's channel to the grader).
    """
    def waiter(report):
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)   # the zygote ignores it; we wait
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            prepared = prepare_namespace(policy)
        except BaseException as exc:
            report(f"0 {error_line(f'the sandbox could not be set up ({exc})')}")
            os._exit(70)
        pid, status = start_inside(policy, prepared, then, close=[report.fd])
        prepared.release()
        report(f"{pid} {status}")
        os._exit(wait_and_clean(pid, prepared))

    _, line = fork_reporting(waiter, close=close)
    first, _, status = line.partition(" ")
    return (int(first) if first.isdigit() else 0), status
