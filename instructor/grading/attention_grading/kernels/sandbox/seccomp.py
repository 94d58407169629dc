"""A seccomp filter for sandboxed kernels: what Landlock cannot see.

A kernel needs no socket of its own: its Jupyter channels are listening UNIX sockets it inherits
(``channels``), and its network namespace holds only its own loopback. So ``socket()`` is refused
for every family (TCP, UDP, UNIX, raw, packet, netlink); ``socketpair()`` stays for UNIX stream
pairs only (asyncio's self-pipe, multiprocessing's pipes): a connected stream socket can never be
pointed elsewhere (``connect`` and a send with an address fail with EISCONN), where a datagram
pair could be re-``connect``ed, or sent from, to any pathname socket of the host (a network
namespace does not scope those). Behind that, ``connect()`` is refused outright (no socket a
kernel holds has a use for it) and so is ``sendto()`` with an address (seccomp cannot read the
address behind ``sendmsg``'s header: no socket that could take one exists). As a second wall
behind the namespace and Landlock's TCP rules: no TCP Fast Open (``MSG_FASTOPEN`` on
``sendto``/``sendmsg``/``sendmmsg``, the ``TCP_FASTOPEN`` and ``TCP_FASTOPEN_CONNECT`` options),
which Landlock does not mediate. Also refused: io_uring (its socket operations would pass beside
this filter), new namespaces, mounts, and calls that read other processes or the kernel's
keyrings. Other system calls are allowed: every privileged one already fails for a process
without capabilities.

The rules name system calls; libseccomp (Debian's ``libseccomp2``, through the ``pyseccomp``
binding) turns them into the BPF program of an architecture, with that architecture's numbers
and its check that a call comes from that architecture (a call made through another one, i386 or
x32 on x86_64, 32-bit ARM on aarch64, kills the process). The grader builds the program once
(``program``) and hands it to each sandbox in its policy (``policy.make``: the sandbox's processes
may run a Python without libseccomp), which installs it as it was exported (``install``): what the
tests run on a BPF interpreter (``tests/seccomp_bpf.py``) is what the kernel runs.
"""
import ctypes
import errno
import functools
import os
import platform

from ._libc import (CLONE_NEWCGROUP, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER,
                    CLONE_NEWUTS, PR_SET_SECCOMP, checked, libc)

SECCOMP_MODE_FILTER = 2
CLONE_NEWTIME = 0x00000080
NAMESPACE_FLAGS = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                   CLONE_NEWNET, CLONE_NEWTIME)
AF_UNIX, AF_NETLINK, SOCK_STREAM = 1, 16, 1
SOCK_TYPE_BITS = 0xF          # the type in socketpair's second argument; the rest are flags (CLOEXEC, NONBLOCK)
IPPROTO_TCP, TCP_FASTOPEN, TCP_FASTOPEN_CONNECT = 6, 23, 30
MSG_FASTOPEN = 0x20000000
LOW_HALF = 0xFFFFFFFF         # an ``int`` argument: the kernel reads the register's low 32 bits only
FLAGS_ARGUMENT = {"sendto": 3, "sendmsg": 2, "sendmmsg": 3}   # where each send call takes its flags
REFUSED = ("ptrace", "syslog", "personality", "pivot_root", "chroot", "acct", "mount", "umount2", "swapon",
           "swapoff", "reboot", "init_module", "delete_module", "quotactl", "kexec_load", "add_key",
           "request_key", "keyctl", "unshare", "perf_event_open", "name_to_handle_at", "open_by_handle_at",
           "setns", "process_vm_readv", "process_vm_writev", "kcmp", "finit_module", "kexec_file_load", "bpf",
           "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "open_tree", "move_mount",
           "fsopen", "fsconfig", "fsmount", "fspick", "pidfd_getfd", "mount_setattr")
#: The architectures the filter is built and tested for: {``platform.machine()``: AUDIT_ARCH_*}.
ARCHITECTURES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def _seccomp():
    import pyseccomp      # loads libseccomp: only where a filter is built

    return pyseccomp


def rules():
    """[(action, system call name, conditions)] of the filter; every other call is allowed.
    A condition is (argument, operator name, value[, masked value]) as libseccomp compares them."""
    seccomp = _seccomp()
    eperm, eacces = seccomp.ERRNO(errno.EPERM), seccomp.ERRNO(errno.EACCES)
    out = [(eperm, name, ()) for name in REFUSED]
    # clone3 hides its flags behind a pointer: "not implemented" makes glibc fall back to clone.
    out.append((seccomp.ERRNO(errno.ENOSYS), "clone3", ()))
    out += [(eperm, "clone", ((0, "MASKED_EQ", flag, flag),)) for flag in NAMESPACE_FLAGS]
    # ZeroMQ lists the network interfaces (getifaddrs, over netlink) when it binds a TCP address,
    # and aborts the process on any error but "not supported", which it reads as "none".
    out.append((seccomp.ERRNO(errno.EOPNOTSUPP), "socket", ((0, "EQ", AF_NETLINK),)))
    out.append((eacces, "socket", ((0, "NE", AF_NETLINK),)))
    # socketpair(AF_UNIX, SOCK_STREAM | flags) only: refused for any other family or type.
    out.append((eacces, "socketpair", ((0, "NE", AF_UNIX),)))
    out += [(eacces, "socketpair", ((1, "MASKED_EQ", SOCK_TYPE_BITS, kind),))
            for kind in range(SOCK_TYPE_BITS + 1) if kind != SOCK_STREAM]
    out.append((eacces, "connect", ()))
    out.append((eacces, "sendto", ((4, "NE", 0),)))        # sendto(fd, buf, len, flags, dest_addr, addrlen)
    out += [(eacces, call, ((index, "MASKED_EQ", MSG_FASTOPEN, MSG_FASTOPEN),))
            for call, index in FLAGS_ARGUMENT.items()]
    out += [(eacces, "setsockopt", ((1, "MASKED_EQ", LOW_HALF, IPPROTO_TCP), (2, "MASKED_EQ", LOW_HALF, option)))
            for option in (TCP_FASTOPEN, TCP_FASTOPEN_CONNECT)]
    return out


def build(machine=None):
    """A libseccomp filter of ``rules`` for ``machine`` (a ``platform.machine()`` name; None: this one)."""
    seccomp = _seccomp()
    machine = machine or platform.machine()
    if machine not in ARCHITECTURES:
        raise OSError(errno.ENOSYS, f"no seccomp filter is built for {machine} (only {', '.join(ARCHITECTURES)})")
    arch = ARCHITECTURES[machine]
    syscall_filter = seccomp.SyscallFilter(seccomp.ALLOW)
    syscall_filter.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    if arch != seccomp.system_arch():
        syscall_filter.add_arch(arch)
        syscall_filter.remove_arch(seccomp.Arch.NATIVE)
    for action, name, conditions in rules():
        args = [seccomp.Arg(index, getattr(seccomp, operator), *values) for index, operator, *values in conditions]
        syscall_filter.add_rule(action, name, *args)
    return syscall_filter


@functools.lru_cache(maxsize=None)
def program(machine=None):
    """The filter's BPF program for ``machine`` (None: this one), as libseccomp exports it: bytes
    of ``struct sock_filter`` (code u16, jt u8, jf u8, k u32), in this machine's byte order."""
    with open(os.memfd_create("seccomp-filter"), "w+b", buffering=0) as exported:
        build(machine).export_bpf(exported)
        exported.seek(0)
        return exported.read()


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(raw=None):
    """Install ``raw`` (a program as ``program`` exports it; None: this machine's, built here) on
    the calling thread, inherited by every child; needs no_new_privs."""
    raw = program() if raw is None else raw
    if not raw or len(raw) % 8:
        raise OSError(errno.EINVAL, "seccomp: not a BPF program")
    buffer = ctypes.create_string_buffer(raw, len(raw))
    fprog = _Fprog(len(raw) // 8, ctypes.addressof(buffer))
    checked(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp")
