"""The operating-system sandbox of graded kernels (attention_grading.kernels.sandbox), wall by wall.

A process started in a fresh sandbox, exactly as a kernel is, tries what a hostile submission
would; every attempt must be refused by the operating system, and what a kernel needs must still
work. One sandbox serves every attempt (tests/sandbox_probe.py). The same walls are proven end to
end, through grading, by tests/test_hostile_catalogue.py.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT
from grading_helpers import metadata_snapshot, snapshot_changes
from listeners import Listener

GRADING_DIR = ROOT / "instructor" / "grading"
PROBE = Path(__file__).with_name("sandbox_probe.py")
MARKER = "attention-sandbox-test-marker"


def fake_course(root):
    """A course's private parts, each holding a secret a kernel must not read."""
    for part in ("instructor/reference/secret.py", "source/lesson/secret.ipynb", "solutions/lesson/secret.ipynb",
                 "submitted/other/lesson/secret.ipynb", "autograded/other/lesson/secret.ipynb",
                 "feedback/other/lesson/secret.html", "gradebook.db"):
        path = root / part
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("SECRET")
    return root


def _libseccomp_facts():
    """What the grader hands every sandbox (``sandbox.make``), asked of libseccomp here: the probe
    may run a Python without it, as a kernel's may."""
    from attention_grading.kernels.sandbox._libc import syscall_numbers
    from attention_grading.kernels.sandbox.seccomp import program

    return {"seccomp_filter": program().hex(), "syscalls": syscall_numbers()}


def probe(tmp_path, attempts, python=sys.executable, user=None, account=None, limits=None, watched=()):
    """(``{attempt: outcome}`` of ``attempts`` run in one sandbox, the fake course, the scratch
    folder, whether the course and the ``watched`` folders kept every byte, mode, owner, time and
    extended attribute). Its folders are made directly under /tmp, where any account may reach
    them (pytest's own folder is root's only)."""
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="attention-sandbox-test-"))
    os.chmod(tmp_path, 0o755)
    course = fake_course(tmp_path / "course")
    assert os.stat(course / "gradebook.db").st_mode & 0o004, "only a wall can keep a world-readable file out"
    scratch = tmp_path / "scratch"
    seed = tmp_path / "seed"
    scratch.mkdir()
    seed.mkdir()
    (seed / "data.txt").write_text("the learner's own file")
    request = tmp_path / "request.json"
    request.write_text(json.dumps({
        "grading_dir": str(GRADING_DIR), "scratch": str(scratch), "seed": str(seed),
        "protected": [str(course), str(ROOT), str(tmp_path)], "account": account,
        "channels": [str(scratch / "ch-1"), str(scratch / "ch-2")],
        "limits": limits or {}, **_libseccomp_facts(),
        "attempts": {k: textwrap.dedent(v).replace("{course}", str(course)) for k, v in attempts.items()}}))
    command = [python, str(PROBE), str(request)]
    before = {folder: metadata_snapshot(folder) for folder in [course, *watched]}
    if user:
        import pwd

        entry = pwd.getpwnam(user)
        for path in (tmp_path, scratch, seed, request):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ATTENTION_GRADEBOOK_URL": "postgresql://grader:hunter2@db/x",
                               "PYTHONPATH": str(GRADING_DIR)})
    changed = {str(folder): snapshot_changes(state, metadata_snapshot(folder)) for folder, state in before.items()}
    shutil.rmtree(tmp_path / "course", ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"].startswith("{"), f"the sandbox did not start: {report['status']}"
    return json.loads(report["status"]), course, scratch, {k: v for k, v in changed.items() if v}


# Socket calls: every one is refused (socket() for every family; the Fast Open flags and options
# on the channel sockets it inherits, which seccomp refuses before the network stack sees them).
# Every way out through a UNIX socket, tried again in a forked child, a subprocess and a thread, and
# on a socket received from another process (SCM_RIGHTS): ``result`` lists what worked (nothing may),
# else PermissionError. (A template for ``str.format``: its own braces are doubled.)
EVERYWHERE = """
ESCAPES = r'''
import os, socket, sys
def escapes(made=None):
    worked = []
    def attempt(what, action):
        try:
            action()
            worked.append(what)
        except OSError:
            pass
    def pair(kind):
        return socket.socketpair(socket.AF_UNIX, kind)[0]
    for where in ('{dgram_path}', '\\0{abstract}-datagram'):
        attempt('dgram pair connect', lambda: (lambda s: (s.connect(where), s.send(b'x')))(pair(socket.SOCK_DGRAM)))
        attempt('dgram pair sendto', lambda: pair(socket.SOCK_DGRAM).sendto(b'x', where))
        attempt('stream pair sendto', lambda: pair(socket.SOCK_STREAM).sendto(b'x', where))
        attempt('stream pair sendmsg', lambda: pair(socket.SOCK_STREAM).sendmsg([b'x'], [], 0, where))
        if made is not None:
            attempt('passed socket connect', lambda: made.connect(where))
            attempt('passed socket sendto', lambda: made.sendto(b'x', where))
            attempt('passed socket sendmsg', lambda: made.sendmsg([b'x'], [], 0, where))
    for where in ('{unix_path}', '\\0{abstract}-stream'):
        attempt('stream pair connect', lambda: pair(socket.SOCK_STREAM).connect(where))
    return worked
'''
exec(ESCAPES)
import subprocess, threading
found = {{'here': escapes()}}
carrier, far = socket.socketpair()
child = os.fork()
if child == 0:
    carrier.close()
    mine, _ = socket.socketpair()
    socket.send_fds(far, [b'x'], [mine.fileno()])
    far.sendall(repr(escapes()).encode())
    os._exit(0)
far.close()
_, fds, _, _ = socket.recv_fds(carrier, 1, 1)
os.waitpid(child, 0)
found['forked child'] = carrier.recv(10000).decode()
found['passed descriptor'] = escapes(socket.socket(fileno=fds[0]))
found['subprocess'] = subprocess.run([sys.executable, '-c', ESCAPES + 'print(escapes())'],
                                     capture_output=True, text=True).stdout.strip()
box = []
thread = threading.Thread(target=lambda: box.append(escapes()))
thread.start()
thread.join()
found['thread'] = box[0]
if any(v not in ([], '[]') for v in found.values()):
    result = found
else:
    raise PermissionError('every socket path refused: ' + repr(found))
"""

ON_A_CHANNEL = "import socket; s = socket.socket(fileno=os.dup(next(iter(sockets.values()))))\n"
ONLY_REFUSED = ("\nexcept PermissionError:\n    raise\n"
                "except OSError as exc:   # the network stack answered: the sandbox let it through\n"
                "    result = f'not refused by the sandbox: {{exc}}'")
NETWORK = {
    "connect to a local TCP server": "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'x')",
    "TCP Fast Open to a local server (sendto)":
        "import socket; socket.socket().sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1', {port}))",
    "MSG_FASTOPEN on an inherited socket (sendto)":
        "import os\ntry:\n    " + ON_A_CHANNEL.replace("\n", "\n    ") + "s.sendto(b'x', socket.MSG_FASTOPEN, '{unix_path}')" + ONLY_REFUSED,
    "MSG_FASTOPEN on an inherited socket (sendmsg)":
        "import os\ntry:\n    " + ON_A_CHANNEL.replace("\n", "\n    ") + "s.sendmsg([b'x'], [], socket.MSG_FASTOPEN)" + ONLY_REFUSED,
    "MSG_FASTOPEN on an inherited socket (sendmmsg)":
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = next(iter(sockets.values()))\n"
        "if libc.syscall(307, fd, None, 0, 0x20000000) == -1:\n"
        "    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n"
        "result = 'sent'",
    "TCP_FASTOPEN_CONNECT on an inherited socket":
        "import os\ntry:\n    " + ON_A_CHANNEL.replace("\n", "\n    ") + "s.setsockopt(6, 30, 1)" + ONLY_REFUSED,
    "send UDP to a local server": "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))",
    "connect to a UNIX stream socket": "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{unix_path}'); s.sendall(b'x')",
    "send to a UNIX datagram socket": "import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '{dgram_path}')",
    "open a raw socket": "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)",
    "open a packet socket": "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)",
    "open a netlink socket": "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
    "open an abstract UNIX socket": "import socket; socket.socket(socket.AF_UNIX).connect('\\0attention')",
    # A socket pair is the one socket a kernel may make: only a UNIX stream pair, which can never be
    # pointed elsewhere; a datagram pair could be re-connected (or sent from) to any pathname socket
    # of this machine, which a network namespace does not scope.
    "a datagram socket pair re-connected to a pathname socket":
        "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.connect('{dgram_path}'); a.send(b'x')",
    "a datagram socket pair sent from to an abstract address":
        "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b'x', '\\0{abstract}-datagram')",
    "a sequenced-packet socket pair": "import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)",
    "a stream socket pair re-connected to a pathname socket":
        "import socket; a, b = socket.socketpair(); a.connect('{unix_path}'); a.send(b'x')",
    "a stream socket pair sends to a pathname (sendto)":
        "import socket; a, b = socket.socketpair(); a.sendto(b'x', '{dgram_path}')",
    "a stream socket pair sends to a pathname (sendmsg)":
        "import socket; a, b = socket.socketpair(); a.sendmsg([b'x'], [], 0, '{dgram_path}')",
    "a stream socket pair sends to an abstract address (sendmsg)":
        "import socket; a, b = socket.socketpair(); a.sendmsg([b'x'], [], 0, '\\0{abstract}-datagram')",
    "an inherited channel socket connected to a pathname socket":
        "import os\n" + ON_A_CHANNEL + "s.connect('{unix_path}')",
    "an inherited channel socket sends to a pathname (sendmsg)":
        "import os\n" + ON_A_CHANNEL + "s.sendmsg([b'x'], [], 0, '{dgram_path}')",
    "every socket path again in a forked child, a subprocess and a thread, and through a passed descriptor":
        EVERYWHERE,
    "set up io_uring": "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                       "if libc.syscall(425, 8, ctypes.create_string_buffer(120)) == -1:\n"
                       "    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))",
    "listen on a TCP port": "import socket; socket.socket().bind(('127.0.0.1', 0))",
    "subscribe to a ZeroMQ publisher (another kernel's IOPub)":
        "import zmq; sub = zmq.Context().socket(zmq.SUB); sub.subscribe(b''); sub.connect('tcp://127.0.0.1:{zmq_port}')\n"
        "if not sub.poll(3000):\n    raise TimeoutError('nothing received')\nresult = sub.recv()",
}

# Metadata calls on what a kernel may read (the course environment, the learner package, the
# Python installation) and on the course: each would leave the file as it was (same mode, owner,
# times, size and name) had it worked, but its ctime would show it; every one must be refused.
METADATA = {
    "chmod": "import os; os.chmod(T, os.stat(T).st_mode & 0o7777)",
    "chown": "import os; st = os.stat(T); os.chown(T, st.st_uid, st.st_gid)",
    "utime": "import os; st = os.stat(T); os.utime(T, ns=(st.st_atime_ns, st.st_mtime_ns))",
    "setxattr": "import os; os.setxattr(T, 'user.{marker}', b'x'); os.removexattr(T, 'user.{marker}')",
    "link": "import os; os.link(T, T + '-{marker}'); os.unlink(T + '-{marker}')",
    "symlink": "import os; os.symlink(T, T + '-{marker}'); os.unlink(T + '-{marker}')",
    "rename": "import os; os.rename(T, T + '-{marker}'); os.rename(T + '-{marker}', T)",
    "truncate": "import os; os.truncate(T, os.stat(T).st_size)",
    "mknod": "import os, stat; os.mknod(T + '-{marker}', stat.S_IFIFO | 0o600); os.unlink(T + '-{marker}')",
}
TARGETS = {"the course environment": "{env_file}", "the learner package": "{package_file}",
           "the Python installation": "{python_file}", "the course": "{course}/gradebook.db"}

WALLS = {
    # reading the course
    "read the reference": "open('{course}/instructor/reference/secret.py').read()",
    "list instructor/": "import os; os.listdir('{course}/instructor')",
    "read source/": "open('{course}/source/lesson/secret.ipynb').read()",
    "read solutions/": "open('{course}/solutions/lesson/secret.ipynb').read()",
    "read another learner's submission": "open('{course}/submitted/other/lesson/secret.ipynb').read()",
    "read autograded/": "open('{course}/autograded/other/lesson/secret.ipynb').read()",
    "read feedback/": "open('{course}/feedback/other/lesson/secret.html').read()",
    "read the gradebook": "open('{course}/gradebook.db').read()",
    "read the real reference": "open('{root}/instructor/lessons/01_context_vectors/reference.py').read()",
    "import the real reference": "import sys; sys.path.append('{root}/instructor/reference'); import attention_reference",
    "read the grading code": "open('{root}/instructor/grading/attention_grading/hidden/judge.py').read()",
    "read root's home": "import os; os.listdir('/root')",
    "read /etc/shadow": "open('/etc/shadow').read()",
    "copy the reference in a child process":
        "import subprocess; r = subprocess.run(['cp', '-r', '{root}/instructor', '/tmp/x'], capture_output=True)\n"
        "assert r.returncode == 0, r.stderr",
    # writing where later runs look
    "write /tmp": "open('/tmp/{marker}', 'w').write('x')",
    "write a .pth into the course environment": "import sysconfig; open(sysconfig.get_paths()['purelib'] + '/{marker}.pth', 'w').write('x')",
    "write the course": "open('{course}/{marker}', 'w').write('x')",
    "write the grader's IPython startup": "open('/root/.ipython/profile_default/startup/00-{marker}.py', 'w').write('x')",
    "write /dev/shm": "open('/dev/shm/{marker}', 'w').write('x')",
    "reset its own peak memory (/proc/self/clear_refs)": "open('/proc/self/clear_refs', 'w').write('5')",
    # network
    **NETWORK,
    # metadata
    **{f"{call} on {what}": f"T = '{target}'\n" + code for what, target in TARGETS.items()
       for call, code in METADATA.items()},
    # other processes
    "signal the grader": "import os; os.kill({grader_pid}, 0)",
    "see the grader in /proc": "import os; assert {grader_pid} in [int(p) for p in os.listdir('/proc') if p.isdigit()]",
    "make a new namespace": "import ctypes; assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0",
    # limits
    "allocate 6 GiB": "result = bytearray(6 << 30)",
    "write a 100 MB file": "open('big', 'wb').write(b'x' * (100 << 20))",
}

ALLOWED = {
    "its own file": "result = open('data.txt').read()",
    "write its own folder": "open('note.txt', 'w').write('ok'); result = open('note.txt').read()",
    "change modes and times in its own folder":
        "import os; open('mine', 'w').close(); os.chmod('mine', 0o600); os.utime('mine', (1, 1)); "
        "os.rename('mine', 'ours'); result = oct(os.stat('ours').st_mode)",
    "its home": "import os; open(os.path.expanduser('~/x'), 'w').write('ok'); result = os.environ['HOME']",
    "its channel sockets": "import os, socket\n"
                           "result = sorted((e, socket.socket(fileno=os.dup(fd)).getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))"
                           " for e, fd in sockets.items())",
    "a socket pair": "import socket; a, b = socket.socketpair(); a.sendall(b'ok'); result = b.recv(2)",
    "its network": "result = sorted(line.split(':')[0].strip() for line in open('/proc/net/dev') if ':' in line)",
    "the standard library and a subprocess": "import subprocess; result = subprocess.run(['echo', 'hi'], capture_output=True, text=True).stdout",
    "the learner package": "import attention_course; result = attention_course.__name__",
    "numpy": "import numpy as np; result = float(np.linalg.norm(np.ones(4)))",
    "its privileges": "result = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)",
    "its environment": "import os; result = sorted(os.environ)",
    "its processes": "import os; result = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())",
    "a few processes": "import subprocess; ps = [subprocess.Popen(['sleep', '1']) for _ in range(20)]; [p.wait() for p in ps]; result = len(ps)",
    "a process left running": f"import subprocess; subprocess.Popen(['sleep', '1000', '{MARKER}'], start_new_session=True); result = 'started'",
}


def _targets():
    """Files of the course environment, the learner package and the Python installation that
    the metadata calls aim at (the sandbox can read them; the tests watch their folders)."""
    import attention_course
    import numpy

    return {"env_file": numpy.__file__, "package_file": attention_course.__file__, "python_file": os.__file__}


def _filled(attempts, **values):
    return {name: code.format(**values) for name, code in attempts.items()}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    servers = Listener()
    tmp_path = tmp_path_factory.mktemp("sandbox")
    targets = _targets()
    values = dict(course="{course}", root=ROOT, marker=MARKER, grader_pid=os.getpid(), **servers.addresses(),
                  **targets)
    try:
        result, course, scratch, changed = probe(
            tmp_path, {**_filled(WALLS, **values), **_filled(ALLOWED, **values)},
            watched=sorted({os.path.dirname(p) for p in targets.values()}))
    finally:
        servers.close()
    return {"outcomes": result, "reached": servers.received, "scratch": scratch, "course": course,
            "changed": changed}


@pytest.mark.parametrize("attempt", sorted(WALLS))
def test_a_wall_holds(outcomes, attempt):
    """Each hostile attempt is refused by the operating system."""
    outcome = outcomes["outcomes"][attempt]
    assert "error" in outcome, f"{attempt}: it worked ({outcome})"
    assert outcome["error"] in ("PermissionError", "FileNotFoundError", "ProcessLookupError", "MemoryError",
                                "AssertionError", "OSError", "ModuleNotFoundError", "TimeoutError"), outcome


def test_what_a_kernel_needs_still_works(outcomes):
    """Its files, its folder (modes and times included), its home, its channel sockets, a socket
    pair, a subprocess, numpy, the learner package."""
    got = outcomes["outcomes"]
    failed = {name: got[name] for name in ALLOWED if "ok" not in got[name]}
    assert not failed, failed
    assert got["its own file"]["ok"] == repr("the learner's own file")
    assert got["the standard library and a subprocess"]["ok"] == repr("hi\n")
    assert got["a socket pair"]["ok"] == repr(b"ok")
    channels = eval(got["its channel sockets"]["ok"])      # noqa: S307 (our own probe's repr)
    assert [accepting for _, accepting in channels] == [1, 1], "the inherited sockets listen"
    assert all(endpoint.startswith(f"ipc://{outcomes['scratch']}/ch-") for endpoint, _ in channels)


def test_it_runs_without_privileges_in_its_own_namespaces(outcomes):
    """No capability (bounding set included), no_new_privs, seccomp on, PID 1 of its own namespace,
    a network of its own with only its loopback, and none of the grader's variables (a gradebook
    URL with a password, PYTHONPATH); nothing reached a server of this machine."""
    got = outcomes["outcomes"]
    status = eval(got["its privileges"]["ok"])       # noqa: S307 (our own probe's repr of a dict)
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert status[field].strip() == "0000000000000000", (field, status[field])
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
    assert eval(got["its processes"]["ok"])[0] == 1
    assert eval(got["its network"]["ok"]) == ["lo"]
    env = eval(got["its environment"]["ok"])
    assert "ATTENTION_GRADEBOOK_URL" not in env and "PYTHONPATH" not in env
    assert not outcomes["reached"], f"the sandboxed process reached a server: {outcomes['reached']}"


def test_nothing_outside_its_scratch_changed(outcomes):
    """The course, the course environment, the learner package and the Python installation keep
    every byte, mode, owner, time (ctime included) and extended attribute."""
    assert not outcomes["changed"], outcomes["changed"]


def test_nothing_it_wrote_or_started_is_left(outcomes):
    """Its folder was a tmpfs of its own namespace, and its processes died with it."""
    assert not any((outcomes["scratch"] / "sandbox").iterdir())
    assert "note.txt" not in {p.name for p in outcomes["scratch"].rglob("*")}
    left = subprocess.run(["pgrep", "-f", MARKER], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"a process outlived its sandbox: {left.stdout}"
    assert not list(Path("/tmp").glob(f"{MARKER}*"))


def test_a_fork_bomb_stops_at_the_process_limit(tmp_path):
    """Processes beyond the limit are refused; the machine keeps running."""
    got, _, _, _ = probe(tmp_path, {"fork bomb": """
        import os, time
        children = []
        try:
            for _ in range(2000):
                pid = os.fork()
                if pid == 0:
                    time.sleep(30)
                    os._exit(0)
                children.append(pid)
        except OSError as exc:
            result = (len(children), type(exc).__name__)
        else:
            result = (len(children), None)
    """})
    count, error = eval(got["fork bomb"]["ok"])
    assert error == "BlockingIOError" and count < 400, (count, error)


DEBIAN_PYTHON = Path("/usr/bin/python3")


def _readable_python():
    """Debian's own python3 (readable by every account), or a skip."""
    if not DEBIAN_PYTHON.exists() or not shutil.which("setpriv"):
        pytest.skip("no system python3 or setpriv: the account and user-namespace paths need one")
    return str(DEBIAN_PYTHON)


SMALL = {"read the reference": WALLS["read the reference"], "read root's home": WALLS["read root's home"],
         "write /tmp": WALLS["write /tmp"], "send UDP to a local server": WALLS["send UDP to a local server"],
         "chmod on the course environment": WALLS["chmod on the course environment"],
         "utime on the Python installation": WALLS["utime on the Python installation"],
         "its privileges": ALLOWED["its privileges"], "its own file": ALLOWED["its own file"],
         "its network": ALLOWED["its network"]}


def test_the_kernel_account_is_used_where_python_is_readable(tmp_path):
    """As root with a Python every account can read, the sandbox switches to the kernel account."""
    from attention_grading.kernels.sandbox.account import ensure_account

    account = ensure_account()
    if account is None:
        pytest.skip("grading does not run as root here: no account to switch to")
    values = dict(course="{course}", root=ROOT, marker=MARKER, port=1, grader_pid=os.getpid(), **_targets())
    got, _, _, changed = probe(tmp_path, _filled(SMALL, **values), python=_readable_python(), account=list(account),
                               watched=[os.path.dirname(os.__file__)])
    status = eval(got["its privileges"]["ok"])
    assert status["Uid"].split()[0] == str(account[0]) and status["CapEff"].strip() == "0000000000000000"
    assert all("error" in got[name] for name in SMALL if name not in ALLOWED), got
    assert got["its own file"]["ok"] == repr("the learner's own file")
    assert eval(got["its network"]["ok"]) == ["lo"] and not changed


def test_without_root_a_user_namespace_gives_the_same_walls(tmp_path):
    """An instructor who is not root: the sandbox is made in a user namespace, with the same walls
    (the course files are world-readable here, so only the sandbox keeps them out)."""
    python = _readable_python()
    values = dict(course="{course}", root=ROOT, marker=MARKER, port=1, grader_pid=os.getpid(), **_targets())
    got, _, _, changed = probe(tmp_path, _filled(SMALL, **values), python=python, user="nobody",
                               watched=[os.path.dirname(os.__file__)])
    assert all("error" in got[name] for name in SMALL if name not in ALLOWED), got
    assert eval(got["its network"]["ok"]) == ["lo"] and not changed
    status = eval(got["its privileges"]["ok"])
    assert status["CapEff"].strip() == "0000000000000000" and status["NoNewPrivs"].strip() == "1"
