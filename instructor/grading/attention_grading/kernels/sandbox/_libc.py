"""The few system calls the sandbox makes that Python's ``os`` module does not offer (3.10+)."""
import ctypes
import errno
import os
import platform

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.unshare.argtypes = [ctypes.c_int]
libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]

MACHINE = platform.machine()
#: The system calls ``syscall`` makes, by name: their numbers are this machine's (``syscall_numbers``).
SYSCALLS = ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "capset", "mount_setattr")
_NUMBERS = {}       # {name: number} known here: handed in by the policy (``enter``), or asked of libseccomp

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22


def checked(result, what):
    """Raise OSError (with the call's name) when a libc call returned -1."""
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def syscall_numbers(names=SYSCALLS):
    """{name: this machine's number} of the system calls ``names``, as libseccomp knows them."""
    import pyseccomp      # loads libseccomp: in the grader, which hands the numbers on (``policy.make``)

    numbers = {name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name) for name in names}
    unknown = [name for name, number in numbers.items() if number < 0]
    if unknown:
        raise OSError(errno.ENOSYS, f"no system call {', '.join(unknown)} on {MACHINE} (libseccomp)")
    return numbers


def know_syscalls(numbers):
    """Use these numbers ({name: number}, as ``syscall_numbers`` gave them) from now on."""
    _NUMBERS.update(numbers)


def syscall(name, *args):
    if name not in _NUMBERS:
        know_syscalls(syscall_numbers([name]))
    return checked(libc.syscall(_NUMBERS[name], *args), name)


def prctl(option, arg2=0, arg3=0, arg4=0, arg5=0, what="prctl"):
    return checked(libc.prctl(option, arg2, arg3, arg4, arg5), what)


def unshare(flags):
    checked(libc.unshare(flags), f"unshare({flags:#x})")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def read_only_below(path):
    """Make every mount at and below ``path`` read-only, in this mount namespace (Linux 5.12+)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    syscall("mount_setattr", ctypes.c_int(AT_FDCWD), os.fsencode(path), ctypes.c_uint(AT_RECURSIVE),
            ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    checked(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")
