"""The unprivileged account kernels run as, where the Python installation is readable by it.

Where grading runs as root, the account is created on first use. It is used only when every
folder a kernel must read is readable by it; otherwise (here: Python installed in root's home,
mode 700) kernels stay uid 0 with every capability dropped, confined by Landlock like any other.
"""
import functools
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig

ACCOUNT = "attention-kernel"


def ensure_account():
    """The account's (uid, gid), creating it when running as root; None if it cannot exist."""
    try:
        entry = pwd.getpwnam(ACCOUNT)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        pass
    if os.geteuid() != 0 or not shutil.which("useradd"):
        return None
    subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                    "--shell", "/usr/sbin/nologin", "--user-group", ACCOUNT],
                   check=False, capture_output=True)
    try:
        entry = pwd.getpwnam(ACCOUNT)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def _others_may(path, need_read):
    """Can a process that is neither the owner nor in the group traverse (and read) ``path``
    and every folder above it?"""
    path = os.path.realpath(path)
    parts = path.split(os.sep)
    for depth in range(1, len(parts) + 1):
        folder = os.sep.join(parts[:depth]) or os.sep
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            return False
        last = depth == len(parts)
        if stat.S_ISDIR(mode) and not mode & stat.S_IXOTH:
            return False
        if last and need_read and not mode & stat.S_IROTH:
            return False
    return True


def python_readable_by_others():
    """Is what a kernel loads (the interpreter, the standard library, site-packages, numpy,
    the learner package) readable by an account that owns none of it?"""
    paths = [sys.executable, sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    for name in ("numpy", "attention_course"):
        try:
            paths.append(os.path.dirname(__import__(name).__file__))
        except ImportError:
            pass
    return all(_others_may(p, need_read=True) for p in paths if p)


@functools.lru_cache(maxsize=1)
def kernel_account():
    """(uid, gid) for kernels to switch to, or None: stay uid 0 without capabilities (as root),
    or stay the grader's own uid inside a user namespace (not root)."""
    if os.geteuid() != 0 or not python_readable_by_others():
        if os.geteuid() == 0:
            ensure_account()       # made all the same, for when the course moves to a readable Python
        return None
    return ensure_account()
