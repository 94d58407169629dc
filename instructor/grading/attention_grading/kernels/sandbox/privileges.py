"""Leave the grader's privileges: switch to the kernel account, or stay uid 0 with no capability.

Either way the process ends with empty capability sets (bounding set included, so an exec of a
set-uid program or, as uid 0, of anything gains none back), securebits that keep it so, and
``no_new_privs``, which Landlock and seccomp need.
"""
import ctypes
import os

from ._libc import (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, PR_CAPBSET_DROP, PR_GET_NO_NEW_PRIVS,
                    PR_SET_NO_NEW_PRIVS, PR_SET_SECUREBITS, prctl, syscall)

LINUX_CAPABILITY_VERSION_3 = 0x20080522
# NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each with its lock; KEEP_CAPS locked off.
SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _last_cap():
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except OSError:
        return 63


def drop(account=None):
    """Become ``account`` (uid, gid) if given, then drop every capability and set no_new_privs."""
    if os.geteuid() == 0:   # root of this (maybe nested) user namespace: lock root's powers away
        prctl(PR_SET_SECUREBITS, SECUREBITS, what="securebits")
    for cap in range(_last_cap() + 1):
        prctl(PR_CAPBSET_DROP, cap, what=f"drop capability {cap} from the bounding set")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, what="clear ambient capabilities")
    if account is not None:
        uid, gid = account
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    syscall("capset", ctypes.byref(header), ctypes.byref(data))
    prctl(PR_SET_NO_NEW_PRIVS, 1, what="no_new_privs")


def status():
    """{"CapEff": ..., "CapBnd": ..., "NoNewPrivs": ..., "Uid": ...} of this process (for checks)."""
    wanted = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Uid", "Gid", "Seccomp")
    with open("/proc/self/status") as fh:
        fields = dict(line.split(":", 1) for line in fh if ":" in line)
    out = {k: fields[k].strip() for k in wanted if k in fields}
    out["no_new_privs"] = prctl(PR_GET_NO_NEW_PRIVS)
    return out
