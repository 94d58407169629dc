"""The sandbox's pieces, in-process: the fork/status protocol, the channel sockets a kernel
inherits, the seccomp filter's decisions (its BPF program, as libseccomp builds it for x86_64 and
for aarch64, run on an interpreter: tests/seccomp_bpf.py) and the grader's memory meters. The
whole sandbox, with real kernels, is tests/test_sandbox.py's."""
import errno
import os
import subprocess
import sys

import pytest

from attention_grading.kernels.sandbox import channels, seccomp
from attention_grading.kernels.sandbox.forking import READY, fork_reporting, wait_for
from attention_grading.kernels.sandbox.meter import CgroupMeter, ProcessMeter, meter_for


# ---------------------------------------------------------------- the fork/status protocol

@pytest.mark.parametrize("body, line, code", [
    (lambda report: (report.ready(), os._exit(0)), READY, 0),
    (lambda report: (report.error("no Landlock\non this machine"), os._exit(70)), "error: no Landlock on this machine", 70),
    (lambda report: os._exit(3), "", 3),
    (lambda report: 1 / 0, "", 1),
], ids=["ready", "an error on one line", "died first", "raised"])
def test_a_child_reports_one_line(body, line, code):
    """The parent hears ready, an error (one line), or nothing when the child ended first."""
    pid, status = fork_reporting(body)
    assert status == line and wait_for(pid) == code


# ---------------------------------------------------------------- channel sockets

def test_a_kernel_takes_the_socket_its_waiter_bound(tmp_path):
    """ZeroMQ binding the channel's path takes the inherited listening socket (ZMQ_USE_FD) and
    creates none; then bind is ZeroMQ's own again."""
    import zmq
    from zmq.sugar.socket import Socket

    path = str(tmp_path / "ch-1")
    sockets = channels.listen([path])
    assert list(sockets) == [f"ipc://{path}"] and oct(os.stat(path).st_mode & 0o777) == "0o600"
    original = Socket.bind
    inode = os.stat(path).st_ino
    context = zmq.Context()
    server, client = context.socket(zmq.REP), context.socket(zmq.REQ)
    try:
        channels.use_inherited(sockets)
        server.bind(f"ipc://{path}")     # without the inherited socket, ZeroMQ would replace the file
        assert Socket.bind is original and os.stat(path).st_ino == inode
        client.connect(f"ipc://{path}")
        client.send(b"ping")
        assert server.poll(5000) and server.recv() == b"ping"
    finally:
        for s in (server, client):
            s.close(linger=0)
        context.term()
        Socket.bind = original


def test_a_cold_kernels_bootstrap_is_this_file(tmp_path):
    """The command of a cold kernel runs the channels module's text (``-P``: its folder not first on
    sys.path), given its sockets as JSON."""
    source = channels.bootstrap_source()
    command = channels.bootstrap_command("/usr/bin/python3", source, {"ipc:///x-1": 7}, ["-f", "c.json"])
    assert command[:3] == ["/usr/bin/python3", "-P", "-c"] and command[3].endswith("main()\n")
    assert command[4:] == ['{"ipc:///x-1": 7}', "-f", "c.json"]
    compile(command[3], "<bootstrap>", "exec")


# ---------------------------------------------------------------- the seccomp filter

# The kernel's numbers (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64), typed here
# rather than asked of libseccomp, which builds the filter: a wrong table there fails these tests.
NUMBERS = {
    "x86_64": {"read": 0, "socket": 41, "connect": 42, "sendto": 44, "sendmsg": 46, "socketpair": 53,
               "setsockopt": 54, "clone": 56, "ptrace": 101, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
               "sendmmsg": 307, "setns": 308, "process_vm_readv": 310, "bpf": 321, "userfaultfd": 323,
               "io_uring_setup": 425, "clone3": 435, "mount_setattr": 442},
    "aarch64": {"read": 63, "unshare": 97, "ptrace": 117, "socket": 198, "socketpair": 199, "connect": 203,
                "sendto": 206, "setsockopt": 208, "sendmsg": 211, "keyctl": 219, "clone": 220, "perf_event_open": 241,
                "setns": 268, "sendmmsg": 269, "process_vm_readv": 270, "bpf": 280, "userfaultfd": 282,
                "io_uring_setup": 425, "clone3": 435, "mount_setattr": 442},
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
AUDIT_ARCH_I386, AUDIT_ARCH_ARM, X32_SYSCALL_BIT = 0x40000003, 0x40000028, 0x40000000
# seccomp's return values (linux/seccomp.h)
KILL_PROCESS, ALLOW = 0x80000000, 0x7FFF0000


def refused(code):
    return 0x00050000 | code        # SECCOMP_RET_ERRNO with that errno


def _run_filter(machine, name, args=(0,) * 6, arch=None, number=None):
    """What the filter built for ``machine`` returns for one system call, on an interpreter of
    its BPF program as libseccomp exported it (the bytes ``install`` gives the kernel)."""
    import seccomp_bpf

    number = NUMBERS[machine][name] if number is None else number
    return seccomp_bpf.run(seccomp.program(machine), AUDIT_ARCH[machine] if arch is None else arch, number, args)


EACCES = refused(errno.EACCES)
HIGH = 0xFFFFFFFF00000000           # an int argument's upper half: the kernel ignores it
DECISIONS = {
    "socket(AF_INET, SOCK_STREAM)": (("socket", (2, 1, 0, 0, 0, 0)), EACCES),
    "socket(AF_UNIX, SOCK_STREAM)": (("socket", (1, 1, 0, 0, 0, 0)), EACCES),
    "socket(AF_INET, SOCK_DGRAM)": (("socket", (2, 2, 0, 0, 0, 0)), EACCES),
    "socket(AF_PACKET)": (("socket", (17, 3, 0, 0, 0, 0)), EACCES),
    "socket(AF_NETLINK): not supported, which ZeroMQ survives": (("socket", (16, 3, 0, 0, 0, 0)),
                                                                 refused(errno.EOPNOTSUPP)),
    "socket(AF_NETLINK), upper half set": (("socket", (HIGH | 16, 3, 0, 0, 0, 0)), EACCES),
    "socket(AF_INET), upper half set": (("socket", (HIGH | 2, 1, 0, 0, 0, 0)), EACCES),
    "socketpair(AF_UNIX, SOCK_STREAM)": (("socketpair", (1, 1, 0, 0, 0, 0)), ALLOW),
    "socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK)": (("socketpair", (1, 0x80801, 0, 0, 0, 0)), ALLOW),
    "socketpair(AF_UNIX, SOCK_DGRAM)": (("socketpair", (1, 2, 0, 0, 0, 0)), EACCES),
    "socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC)": (("socketpair", (1, 0x80002, 0, 0, 0, 0)), EACCES),
    "socketpair(AF_UNIX, SOCK_SEQPACKET)": (("socketpair", (1, 5, 0, 0, 0, 0)), EACCES),
    "socketpair(AF_UNIX, SOCK_RAW)": (("socketpair", (1, 3, 0, 0, 0, 0)), EACCES),
    "socketpair(AF_UNIX, type 0)": (("socketpair", (1, 0, 0, 0, 0, 0)), EACCES),
    "socketpair(AF_INET, SOCK_STREAM)": (("socketpair", (2, 1, 0, 0, 0, 0)), EACCES),
    "connect (any socket, any address)": (("connect", (5, 0x7F0000001000, 110, 0, 0, 0)), EACCES),
    "connect (a null address: AF_UNSPEC-like)": (("connect", (5, 0, 0, 0, 0, 0)), EACCES),
    "sendto": (("sendto", (5, 0, 1, 0, 0, 0)), ALLOW),
    "sendto with an address": (("sendto", (5, 0, 1, 0, 0x7F0000001000, 110)), EACCES),
    "sendto with an address whose low half is 0": (("sendto", (5, 0, 1, 0, 0x100000000, 110)), EACCES),
    "sendto with an address and MSG_FASTOPEN": (("sendto", (5, 0, 1, 0x20000000, 0x7F0000001000, 16)), EACCES),
    "sendto(MSG_FASTOPEN)": (("sendto", (5, 0, 1, 0x20000000, 0, 0)), EACCES),
    "sendmsg(MSG_FASTOPEN)": (("sendmsg", (5, 0, 0x20000000, 0, 0, 0)), EACCES),
    "sendmsg": (("sendmsg", (5, 0, 0x40, 0, 0, 0)), ALLOW),
    "sendmmsg(MSG_FASTOPEN)": (("sendmmsg", (5, 0, 1, 0x20000000, 0, 0)), EACCES),
    "sendmmsg": (("sendmmsg", (5, 0, 1, 0x40, 0, 0)), ALLOW),
    "setsockopt(TCP, TCP_FASTOPEN_CONNECT)": (("setsockopt", (5, 6, 30, 0, 4, 0)), EACCES),
    "setsockopt(TCP, TCP_FASTOPEN)": (("setsockopt", (5, 6, 23, 0, 4, 0)), EACCES),
    "setsockopt(TCP, TCP_FASTOPEN), upper halves set": (("setsockopt", (5, HIGH | 6, HIGH | 23, 0, 4, 0)), EACCES),
    "setsockopt(SOL_SOCKET, SO_RCVBUF)": (("setsockopt", (5, 1, 8, 0, 4, 0)), ALLOW),
    "clone(CLONE_NEWNET)": (("clone", (0x40000000, 0, 0, 0, 0, 0)), refused(errno.EPERM)),
    "clone(thread | CLONE_NEWUSER)": (("clone", (0x3D0F00 | 0x10000000, 0, 0, 0, 0, 0)), refused(errno.EPERM)),
    "clone(CLONE_NEWTIME)": (("clone", (0x80, 0, 0, 0, 0, 0)), refused(errno.EPERM)),
    "clone(thread)": (("clone", (0x3D0F00, 0, 0, 0, 0, 0)), ALLOW),
    "clone3: not implemented, so glibc falls back to clone": (("clone3", (0,) * 6), refused(errno.ENOSYS)),
    "unshare": (("unshare", (0x40000000, 0, 0, 0, 0, 0)), refused(errno.EPERM)),
    "setns": (("setns", (3, 0, 0, 0, 0, 0)), refused(errno.EPERM)),
    "mount_setattr": (("mount_setattr", (0,) * 6), refused(errno.EPERM)),
    "io_uring_setup": (("io_uring_setup", (8, 0, 0, 0, 0, 0)), refused(errno.EPERM)),
    "ptrace": (("ptrace", (16, 1, 0, 0, 0, 0)), refused(errno.EPERM)),
    "process_vm_readv": (("process_vm_readv", (1, 0, 1, 0, 1, 0)), refused(errno.EPERM)),
    "keyctl": (("keyctl", (0,) * 6), refused(errno.EPERM)),
    "bpf": (("bpf", (0,) * 6), refused(errno.EPERM)),
    "perf_event_open": (("perf_event_open", (0,) * 6), refused(errno.EPERM)),
    "userfaultfd": (("userfaultfd", (0,) * 6), refused(errno.EPERM)),
    "read": (("read", (0,) * 6), ALLOW),
}


@pytest.mark.parametrize("machine", sorted(NUMBERS))
@pytest.mark.parametrize("call", sorted(DECISIONS))
def test_the_filter_decides(call, machine):
    """On x86_64 and aarch64 alike: no socket of any family (netlink: "not supported"), no socket
    pair but a UNIX stream pair (whatever its flags), no connect, no sendto with an address, no
    Fast Open by flag or option (an int's ignored upper half changes nothing), no new namespace,
    no mount change, no io_uring, no reading other processes or the keyrings; everything else allowed."""
    (name, args), expected = DECISIONS[call]
    assert _run_filter(machine, name, args) == expected


def test_other_architectures_are_killed():
    """A call made through another architecture's numbers (i386 and x32 on x86_64; 32-bit ARM,
    or x86_64's, on aarch64) kills the process."""
    assert _run_filter("x86_64", "socket", arch=AUDIT_ARCH_I386) == KILL_PROCESS
    assert _run_filter("x86_64", "socket", number=41 | X32_SYSCALL_BIT) == KILL_PROCESS
    assert _run_filter("x86_64", "read", number=X32_SYSCALL_BIT) == KILL_PROCESS
    assert _run_filter("aarch64", "socket", arch=AUDIT_ARCH_ARM) == KILL_PROCESS
    assert _run_filter("aarch64", "socket", arch=AUDIT_ARCH["x86_64"]) == KILL_PROCESS


def test_the_installed_program_is_this_machines():
    """``install`` hands the kernel the program built for this processor (the one the tests above
    run, when it is one of theirs); a processor without a filter is named, not guessed at."""
    import platform

    if platform.machine() in NUMBERS:
        assert seccomp.program() == seccomp.program(platform.machine())
    with pytest.raises(OSError, match="no seccomp filter is built for riscv64"):
        seccomp.program("riscv64")


# ---------------------------------------------------------------- memory meters

# A fresh, small interpreter rather than a fork of pytest: a fork inherits pytest's heap and its
# threads' state, and a collection or trim in the child could hand back more than it allocates
# (seen once beside a loaded full tier: 40 MB touched, 60 KB of growth).
_ALLOCATOR = """
import gc, sys
gc.disable()
sys.stdout.write("x"); sys.stdout.flush()
sys.stdin.read(1)
block = bytearray(int(sys.argv[1]) << 20)
block[::4096] = b"\\1" * len(block[::4096])
sys.stdout.write("y"); sys.stdout.flush()
sys.stdin.read(1)
"""


def _allocating_child(megabytes, cgroup=None):
    """A child put in ``cgroup`` (a folder) that waits for a byte, touches ``megabytes`` MB, then
    waits to be killed; (process, go)."""
    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", _ALLOCATOR, str(megabytes)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        if cgroup:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
                fh.write(str(child.pid))
        assert child.stdout.read(1) == b"x"
    except BaseException:
        child.kill()
        child.wait()
        raise

    def go():
        child.stdin.write(b"g")
        child.stdin.flush()
        assert child.stdout.read(1) == b"y"

    return child, go


def test_the_process_meter_sees_what_a_process_allocated():
    """Peak resident memory of a process since start(), read from outside it."""
    child, go = _allocating_child(40)
    try:
        meter = ProcessMeter(child.pid)
        meter.start()
        go()
        assert 38 << 20 <= meter.growth() <= 60 << 20
    finally:
        child.kill()
        child.wait()


def test_the_cgroup_meter_sees_what_the_sandbox_allocated():
    """Peak memory of a sandbox's own cgroup since start(), read from outside it; a process
    outside every sandbox cgroup gets the process meter."""
    from attention_grading.kernels.sandbox.limits import Cgroups, Limits

    groups = Cgroups(Limits())
    memory = [f for f in groups.folders if "memory" in str(f) or (f / "memory.current").exists()]
    if not memory:
        groups.remove()
        pytest.skip("the grader cannot make a memory cgroup here")
    child, go = _allocating_child(40, str(memory[0]))
    try:
        meter = meter_for(child.pid)
        assert isinstance(meter, CgroupMeter)
        meter.start()
        go()
        assert 38 << 20 <= meter.growth() <= 60 << 20
        meter.close()
        assert isinstance(meter_for(os.getpid()), ProcessMeter)
    finally:
        child.kill()
        child.wait()
        groups.remove()


# ---------------------------------------------------------------- the policy's read roots

def test_read_roots_inside_others_are_dropped_and_links_to_one_folder_kept_once(tmp_path):
    """A root inside another is covered by it; two names of one folder (``/bin`` and ``/usr/bin``)
    keep one of them, not neither, the same one whatever the order; everything else stays."""
    from attention_grading.kernels.sandbox.policy import _outermost

    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "python").mkdir(parents=True)
    (tmp_path / "etc").mkdir()
    (tmp_path / "bin").symlink_to(tmp_path / "usr" / "bin")
    paths = [str(tmp_path / p) for p in ("usr/bin", "bin", "usr/lib", "usr/lib/python", "etc", "bin/tool")]
    expected = [str(tmp_path / p) for p in ("bin", "etc", "usr/lib")]
    assert _outermost(paths) == expected
    assert _outermost(paths[::-1]) == expected


def test_a_read_root_is_split_open_around_what_it_must_not_show(tmp_path):
    """``allow_except``: a root holding a protected folder becomes its other entries (the folders
    opened on the way listed in ``split``); an entry that is, or links into, the protected folder
    is left out, whichever name the protected folder is given; a root with nothing protected in it
    stays whole, even inside a protected folder (the course's environment lies in the course)."""
    from attention_grading.kernels.sandbox.policy import allow_except

    site = tmp_path / "site"
    for folder in ("numpy", "grading/attention_grading", "grading/other"):
        (site / folder).mkdir(parents=True)
    (site / "shortcut").symlink_to(site / "grading" / "attention_grading")
    (site / "grading" / "README").write_text("")
    (tmp_path / "alias").symlink_to(site / "grading")
    split = []
    allowed = allow_except(str(site), [str(tmp_path / "alias" / "attention_grading")], split)
    assert allowed == [str(site / p) for p in ("grading/README", "grading/other", "numpy")]
    assert split == [str(site), str(site / "grading")]
    assert allow_except(str(site / "numpy"), [str(site / "grading")]) == [str(site / "numpy")]
    inner = str(site / "grading" / "other")
    assert allow_except(inner, [str(site / "grading")]) == [inner]


def test_a_measurement_kernels_request_starts_empty_and_as_confined(tmp_path):
    """``SandboxRequest.fresh``: a new scratch folder whose submission folder is empty (no file of
    the learner's, nothing an earlier kernel left), with the same protected paths, limits and account."""
    import shutil

    from attention_grading.kernels.manager import SandboxRequest
    from attention_grading.kernels.sandbox.limits import Limits

    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "numpy.py").write_text("raise SystemExit")
    request = SandboxRequest(str(tmp_path), str(tmp_path / "submission"), ["/course", "/instructor"], Limits(), None)
    fresh = request.fresh()
    try:
        assert fresh.scratch != request.scratch and os.listdir(fresh.seed) == []
        assert os.listdir(fresh.scratch) == ["submission"]
        assert (fresh.protected, fresh.limits, fresh.account) == (request.protected, request.limits, request.account)
    finally:
        shutil.rmtree(fresh.scratch)
