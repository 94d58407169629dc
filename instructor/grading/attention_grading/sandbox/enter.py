"""Enter the sandbox: run in the first process of a fresh PID namespace, before any learner code.

Order matters: namespaces and mounts need the grader's privileges; the limits, the privilege drop,
Landlock and seccomp come last, and each of them holds for every process started afterwards.
"""
import os
import shutil
import signal

from . import landlock, privileges, seccomp
from ._libc import (CLONE_NEWIPC, CLONE_NEWNS, CLONE_NEWUTS, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE,
                    MS_REC, PR_SET_PDEATHSIG, mount, prctl, unshare)
from .limits import apply_rlimits, set_pid_max
from .policy import sandbox_dirs


def enter(policy, cgroups=None):
    """Make this process (PID 1 of its own PID namespace) the sandbox ``policy`` describes."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, what="die with the grader")
    if cgroups is not None:
        cgroups.join()
    unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)              # nothing mounted here leaks out
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)   # this namespace's processes only
    set_pid_max(policy.limits.pid_max)
    os.makedirs(policy.root, mode=0o700, exist_ok=True)
    mount("tmpfs", policy.root, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={policy.limits.scratch_bytes},mode=0700")
    _populate(policy)
    _redirect_stdio(policy.log)
    rules = landlock.ruleset(read_only=policy.read_only + policy.readable, read_write=[policy.root],
                             devices=policy.devices, bind_ports=policy.bind_ports, listable=policy.listable)
    apply_rlimits(policy.limits)
    privileges.drop(policy.account)
    landlock.restrict_self(rules)
    seccomp.install()
    os.chdir(policy.work)
    os.environ.clear()
    os.environ.update(policy.env)


def _populate(policy):
    """The kernel's folders on the fresh tmpfs; the submission's files copied into ``work``."""
    if policy.seed and os.path.isdir(policy.seed):
        shutil.copytree(policy.seed, policy.work, symlinks=True)
    os.makedirs(policy.work, exist_ok=True)
    for folder in sandbox_dirs(policy.root).values():
        os.makedirs(folder, exist_ok=True)
    if policy.font_cache and os.path.isfile(policy.font_cache):
        # matplotlib would otherwise rebuild its font list (seconds) in every cold kernel
        shutil.copy(policy.font_cache, sandbox_dirs(policy.root)["MPLCONFIGDIR"])
    if policy.account:
        uid, gid = policy.account
        for path in policy.readable:
            os.chown(path, uid, gid)
        for top, dirs, files in os.walk(policy.root):
            for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
                os.lchown(name, uid, gid)


def _redirect_stdio(log):
    """stdin from /dev/null; stdout and stderr (kernel start-up messages) to the scratch log."""
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)
