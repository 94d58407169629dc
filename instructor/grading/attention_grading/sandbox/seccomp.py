"""A seccomp filter for sandboxed kernels: what Landlock cannot see.

A kernel needs no socket of its own: its Jupyter channels are listening UNIX sockets it inherits
(``channels``), and its network namespace holds only its own loopback. So ``socket()`` is refused
for every family (TCP, UDP, UNIX, raw, packet, netlink); ``socketpair()`` stays for UNIX stream
pairs only (asyncio's self-pipe, multiprocessing's pipes): a connected stream socket can never be
pointed elsewhere (``connect`` and a send with an address fail with EISCONN), where a datagram
pair could be re-``connect``ed, or sent from, to any pathname socket of the host (a network
namespace does not scope those). Behind that, ``connect()`` is refused outright (no socket a
kernel holds has a use for it) and so is ``sendto()`` with an address (seccomp cannot read the
address behind ``sendmsg``'s header: no socket that could take one exists). As a second wall behind the namespace and Landlock's TCP rules: no TCP Fast Open
(``MSG_FASTOPEN`` on ``sendto``/``sendmsg``/``sendmmsg``, the ``TCP_FASTOPEN`` and
``TCP_FASTOPEN_CONNECT`` options), which Landlock does not mediate. Also refused: io_uring (its
socket operations would pass beside this filter), new namespaces, mounts, and calls that read
other processes or the kernel's keyrings. Other system calls are allowed: every privileged one
already fails for a process without capabilities. x86_64 only (system call numbers differ
elsewhere).
"""
import ctypes
import errno
import struct

from ._libc import MACHINE, PR_SET_SECCOMP, checked, libc

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_MODE_FILTER = 2
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06

AF_NETLINK, IPPROTO_TCP, TCP_FASTOPEN, TCP_FASTOPEN_CONNECT = 16, 6, 23, 30
MSG_FASTOPEN = 0x20000000
NAMESPACE_FLAGS = 0x7E020000 | 0x00000080   # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}

AF_UNIX, SOCK_STREAM = 1, 1
SOCK_TYPE_BITS = 0xF          # the type in socketpair's second argument; the rest are flags (CLOEXEC, NONBLOCK)
SOCKET, CONNECT, SENDTO, SENDMSG, SETSOCKOPT, CLONE, SOCKETPAIR, SENDMMSG, CLONE3 = \
    41, 42, 44, 46, 54, 56, 53, 307, 435
FLAGS_ARGUMENT = {SENDTO: 3, SENDMSG: 2, SENDMMSG: 3}   # where each send call takes its flags
REFUSED = {   # name: x86_64 number
    "ptrace": 101, "syslog": 103, "personality": 135, "pivot_root": 155, "chroot": 161,
    "acct": 163, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "init_module": 175, "delete_module": 176, "quotactl": 179, "kexec_load": 246,
    "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320,
    "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438, "mount_setattr": 442,
}


def _arg_low(index):
    return 16 + 8 * index     # offsetof(struct seccomp_data, args[index]), low half (little-endian)


def _arg_high(index):
    return _arg_low(index) + 4


def program():
    """The filter as (code, jt, jf, k) instructions; jumps name labels until ``_assemble``."""
    ops = [(LD_ABS, 0, 0, 4), (JEQ, None, "kill", AUDIT_ARCH_X86_64),
           (LD_ABS, 0, 0, 0), (JGE, "kill", None, X32_SYSCALL_BIT)]
    ops += [(JEQ, "eperm", None, number) for number in sorted(REFUSED.values())]
    ops += [(JEQ, "enosys", None, CLONE3), (JEQ, "socket", None, SOCKET), (JEQ, "eacces", None, CONNECT),
            (JEQ, "socketpair", None, SOCKETPAIR), (JEQ, "sendto", None, SENDTO),
            (JEQ, "setsockopt", None, SETSOCKOPT), (JEQ, "clone", None, CLONE)]
    ops += [(JEQ, f"send-{number}", None, number) for number in FLAGS_ARGUMENT if number != SENDTO]
    ops += [(RET, 0, 0, RET_ALLOW)]
    ops += ["clone", (LD_ABS, 0, 0, _arg_low(0)), (JSET, "eperm", None, NAMESPACE_FLAGS),
            (RET, 0, 0, RET_ALLOW)]
    # ZeroMQ lists the network interfaces (getifaddrs, over netlink) when it binds a TCP address,
    # and aborts the process on any error but "not supported", which it reads as "none".
    ops += ["socket", (LD_ABS, 0, 0, _arg_low(0)), (JEQ, None, "eacces", AF_NETLINK),
            (RET, 0, 0, RET_ERRNO | errno.EOPNOTSUPP)]
    # socketpair(AF_UNIX, SOCK_STREAM | flags) only: the type's bits must be 0b0001.
    ops += ["socketpair", (LD_ABS, 0, 0, _arg_low(0)), (JEQ, None, "eacces", AF_UNIX),
            (LD_ABS, 0, 0, _arg_low(1)), (JSET, "eacces", None, SOCK_TYPE_BITS & ~SOCK_STREAM),
            (JSET, "allow", "eacces", SOCK_STREAM)]
    # sendto(fd, buf, len, flags, dest_addr, addrlen): no address (both halves of the pointer 0).
    ops += ["sendto", (LD_ABS, 0, 0, _arg_low(4)), (JEQ, None, "eacces", 0),
            (LD_ABS, 0, 0, _arg_high(4)), (JEQ, f"send-{SENDTO}", "eacces", 0)]
    for number, index in FLAGS_ARGUMENT.items():
        ops += [f"send-{number}", (LD_ABS, 0, 0, _arg_low(index)), (JSET, "eacces", None, MSG_FASTOPEN),
                (RET, 0, 0, RET_ALLOW)]
    ops += ["setsockopt", (LD_ABS, 0, 0, _arg_low(1)), (JEQ, None, "allow", IPPROTO_TCP),
            (LD_ABS, 0, 0, _arg_low(2)), (JEQ, "eacces", None, TCP_FASTOPEN),
            (JEQ, "eacces", None, TCP_FASTOPEN_CONNECT), (RET, 0, 0, RET_ALLOW)]
    ops += ["eperm", (RET, 0, 0, RET_ERRNO | errno.EPERM), "eacces", (RET, 0, 0, RET_ERRNO | errno.EACCES),
            "enosys", (RET, 0, 0, RET_ERRNO | errno.ENOSYS),
            "kill", (RET, 0, 0, RET_KILL_PROCESS), "allow", (RET, 0, 0, RET_ALLOW)]
    return _assemble(ops)


def _assemble(ops):
    labels, position = {}, 0
    for op in ops:
        if isinstance(op, str):
            labels[op] = position
        else:
            position += 1
    out, position = [], 0
    for op in ops:
        if isinstance(op, str):
            continue
        code, jt, jf, k = op
        offset = lambda target: 0 if target is None else labels[target] - position - 1  # noqa: E731
        out.append((code, offset(jt) if isinstance(jt, str) or jt is None else jt,
                    offset(jf) if isinstance(jf, str) or jf is None else jf, k))
        position += 1
    return out


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install():
    """Install the filter on the calling thread (inherited by every child); needs no_new_privs."""
    if MACHINE != "x86_64":
        raise OSError(errno.ENOSYS, f"the seccomp filter knows x86_64 system calls only, not {MACHINE}")
    instructions = program()
    raw = b"".join(struct.pack("HBBI", *op) for op in instructions)
    buffer = ctypes.create_string_buffer(raw, len(raw))
    fprog = _Fprog(len(instructions), ctypes.addressof(buffer))
    checked(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp")
