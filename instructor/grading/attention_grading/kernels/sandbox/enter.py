"""Enter the sandbox: run in the first process of a fresh PID namespace, before any learner code.

Order matters: namespaces and mounts need the grader's privileges; the limits, the privilege drop,
Landlock and seccomp come last, and each of them holds for every process started afterwards.
The kernel's log is opened before its mount namespace exists (a file open for writing on a mount
would keep that mount from turning read-only); then every mount, ``/proc`` included, is made
read-only, and only its own scratch tmpfs, mounted afterwards, can be written.
"""
import fcntl
import os
import shutil
import signal
import socket
import struct

from . import landlock, privileges, seccomp
from ._libc import (CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWUTS, MS_NODEV, MS_NOEXEC, MS_NOSUID,
                    MS_PRIVATE, MS_REC, PR_SET_PDEATHSIG, know_syscalls, mount, prctl, read_only_below, unshare)
from .limits import apply_rlimits, set_pid_max
from .policy import sandbox_dirs

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
IFREQ = "16sH22x"      # struct ifreq: the interface's name, then its flags


def enter(policy, cgroups=None):
    """Make this process (PID 1 of its own PID namespace) the sandbox ``policy`` describes."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, what="die with the grader")
    know_syscalls(policy.syscalls)        # this machine's numbers, from libseccomp in the grader
    if cgroups is not None:
        cgroups.join()
    log = os.open(policy.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET)
    _loopback_up()                                            # its own; no other interface exists
    mount(None, "/", None, MS_REC | MS_PRIVATE)              # nothing mounted here leaks out
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)   # this namespace's processes only
    set_pid_max(policy.limits.pid_max)
    os.makedirs(policy.root, mode=0o700, exist_ok=True)      # the tmpfs's mount point
    if policy.account:
        for path in policy.readable:                          # its connection file
            os.chown(path, *policy.account)
    read_only_below("/")                                      # modes, owners, times, xattrs, links too
    mount("tmpfs", policy.root, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={policy.limits.scratch_bytes},mode=0700")
    _populate(policy)
    _redirect_stdio(log)
    rules = landlock.ruleset(read_only=policy.read_only + policy.readable, read_write=[policy.root],
                             devices=policy.devices, listable=policy.listable)
    apply_rlimits(policy.limits)
    privileges.drop(policy.account)
    landlock.restrict_self(rules)
    seccomp.install(bytes.fromhex(policy.seccomp_filter) if policy.seccomp_filter else None)
    os.chdir(policy.work)
    os.environ.clear()
    os.environ.update(policy.env)


def _loopback_up():
    """Bring up ``lo`` in this (new) network namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        name = struct.pack(IFREQ, b"lo", 0)
        flags = struct.unpack(IFREQ, fcntl.ioctl(probe, SIOCGIFFLAGS, name))[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


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
        for top, dirs, files in os.walk(policy.root):
            for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
                os.lchown(name, uid, gid)


def _redirect_stdio(log):
    """stdin from /dev/null; stdout and stderr (kernel start-up messages) to the scratch log."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(null)
    os.close(log)
