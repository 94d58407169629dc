"""Landlock (Linux 5.13+): an unprivileged process restricts itself and every process it starts.

Rules are an allow list. Files: read, write, execute beneath the listed folders only. TCP (ABI 4+):
no port may be bound or connected to (a kernel's channels are inherited UNIX sockets). Scopes (ABI 6+): no signal to, and no abstract UNIX
socket of, any process outside the domain. A domain cannot be left or widened, across exec too.
"""
import ctypes
import os

from ._libc import syscall

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

# Filesystem rights (ABI: first version that knows the right).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

READ = READ_FILE | READ_DIR | EXECUTE
READ_WRITE_FILE = READ_FILE | WRITE_FILE | IOCTL_DEV
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi():
    """The Landlock ABI version the running kernel offers; 0 when it has none (or it is disabled)."""
    try:
        return syscall("landlock_create_ruleset", None, ctypes.c_size_t(0),
                       ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def handled_fs(version):
    return FS_BY_ABI.get(version, (1 << 16) - 1)


def ruleset(read_only, read_write, devices, listable=()):
    """A Landlock ruleset (a file descriptor) allowing only what is listed; made while the process
    may still open every listed path (before it drops its privileges).

    ``read_only``: folders and files to read and execute; ``read_write``: folders with every
    right; ``devices``: files to read and write (``/dev/null``); ``listable``: folders whose entries
    may be listed, nothing read. No TCP port is allowed, for binding or connecting.
    """
    version = abi()
    if version < 4:
        raise OSError(95, f"Landlock ABI {version} has no TCP rules (ABI 4, Linux 6.7, needed)")
    fs = handled_fs(version)
    attr = _RulesetAttr(fs, BIND_TCP | CONNECT_TCP,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else ctypes.sizeof(ctypes.c_uint64) * 2
    fd = syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for paths, rights in ((read_only, READ), (read_write, fs), (devices, READ_WRITE_FILE),
                              (listable, READ_DIR)):
            for path in paths:
                _allow_path(fd, path, rights & fs)
    except BaseException:
        os.close(fd)
        raise
    return fd


def restrict_self(fd):
    """Enter the domain of ruleset ``fd`` (for good); ``no_new_privs`` must already be set."""
    try:
        syscall("landlock_restrict_self", fd, ctypes.c_uint32(0))
    finally:
        os.close(fd)


def _allow_path(ruleset, path, rights):
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        syscall("landlock_add_rule", ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
    finally:
        os.close(fd)
