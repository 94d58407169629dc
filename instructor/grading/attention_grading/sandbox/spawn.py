"""Start a process in a new sandbox: a small waiter outside, the sandboxed process inside.

The waiter (a fork of the caller) makes the PID namespace and the cgroups, forks the sandboxed
process (PID 1 of that namespace), reports its pid, waits for it, then removes the cgroups. When
PID 1 of a namespace ends, Linux kills every process left in it, so nothing a kernel started
outlives it; the waiter and the kernel both die with their parent (``PR_SET_PDEATHSIG``).
Used by the kernel zygote (``zygote.py``) and by the cold-start launcher (``launch.py``).
"""
import os
import signal
import traceback

from ._libc import CLONE_NEWPID, CLONE_NEWUSER, PR_SET_PDEATHSIG, prctl, unshare
from .enter import enter
from .limits import Cgroups


def enter_user_namespace():
    """Without root: become root of a new user namespace (no power outside it) to make the others."""
    uid, gid = os.getuid(), os.getgid()
    unshare(CLONE_NEWUSER)
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)


def prepare_namespace(policy):
    """In the waiter: the user namespace (without root), cgroups (where possible), the PID namespace."""
    if os.geteuid() != 0:
        enter_user_namespace()
    cgroups = Cgroups(policy.limits) if os.getuid() == 0 else None
    unshare(CLONE_NEWPID)
    return cgroups


def run_inside(policy, cgroups, status_fd, then):
    """In the sandboxed process: enter the sandbox, then ``then(status_fd)``; never returns.

    ``then`` writes ``ready`` on ``status_fd`` when the process is ready (or leaves that to
    an exec'd program); a failure to enter is written there as ``error: <why>``.
    """
    try:
        enter(policy, cgroups)
    except BaseException as exc:
        detail = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        os.write(status_fd, f"error: the sandbox could not be set up ({detail})\n".encode())
        os._exit(70)
    try:
        then(status_fd)
    except BaseException:
        traceback.print_exc()
    os._exit(1)


def wait_and_clean(pid, cgroups):
    """In the waiter: wait for the sandboxed process, remove its cgroups; returns its exit code."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 1 << 8
            break
        except InterruptedError:
            continue
    if cgroups is not None:
        cgroups.remove()
    return os.waitstatus_to_exitcode(status)


def fork_sandboxed(policy, then, close=()):
    """Fork a waiter and, through it, a sandboxed process running ``then`` (see ``run_inside``).

    Returns ``(pid, status)``: the sandboxed process's pid (as the caller sees it) and the first
    line it wrote on its status pipe (``ready``, ``error: ...``, or ``""`` if it died first).
    The caller must be single-threaded (it forks). ``close``: the caller's file descriptors
    the new processes must not keep (the zygote's channel to the grader).
    """
    info_r, info_w = os.pipe()
    waiter = os.fork()
    if waiter == 0:
        try:
            os.close(info_r)
            for fd in close:
                os.close(fd)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)   # the zygote ignores it; we wait
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            cgroups = prepare_namespace(policy)
            status_r, status_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(status_r)
                os.close(info_w)
                run_inside(policy, cgroups, status_w, then)
            os.close(status_w)
            os.write(info_w, f"{pid}\n".encode())
            with os.fdopen(status_r, "rb") as status:
                os.write(info_w, status.readline() or b"\n")
            os.close(info_w)
            os._exit(wait_and_clean(pid, cgroups))
        except BaseException as exc:
            try:
                os.write(info_w, f"0\nerror: the sandbox could not be set up ({exc})\n".encode())
            finally:
                os._exit(70)
    os.close(info_w)
    with os.fdopen(info_r, "rb") as info:
        first = info.readline().strip()
        status = info.readline().decode(errors="replace").strip()
    pid = int(first) if first.isdigit() else 0
    return pid, status
