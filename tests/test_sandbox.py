"""The operating-system sandbox of graded kernels (attention_grading.sandbox), wall by wall.

A process started in a fresh sandbox, exactly as a kernel is, tries what a hostile submission
would; every attempt must be refused by the operating system, and what a kernel needs must still
work. One sandbox serves every attempt (tests/sandbox_probe.py). The same walls are proven end to
end, through grading, by tests/test_hostile_catalogue.py.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import ROOT
from ports import free_port

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


def probe(tmp_path, attempts, python=sys.executable, user=None, account=None, ports=(), limits=None):
    """{attempt: outcome} of ``attempts`` run in one sandbox. Its folders are made directly under
    /tmp, where any account may reach them (pytest's own folder is root's only)."""
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
        "protected": [str(course), str(ROOT), str(tmp_path)], "ports": list(ports), "account": account,
        "limits": limits or {},
        "attempts": {k: textwrap.dedent(v).replace("{course}", str(course)) for k, v in attempts.items()}}))
    command = [python, str(PROBE), str(request)]
    if user:
        import pwd

        entry = pwd.getpwnam(user)
        for path in (tmp_path, scratch, seed, request):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        command = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ATTENTION_GRADEBOOK_URL": "postgresql://grader:hunter2@db/x",
                               "PYTHONPATH": str(GRADING_DIR)})
    shutil.rmtree(tmp_path / "course", ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"].startswith("{"), f"the sandbox did not start: {report['status']}"
    return json.loads(report["status"]), course, scratch


def _listening_server():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    return server, accepted


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
    "read the real reference": "open('{root}/instructor/reference/attention_reference/core.py').read()",
    "import the real reference": "import sys; sys.path.append('{root}/instructor/reference'); import attention_reference",
    "read the grading code": "open('{root}/instructor/grading/attention_grading/judge.py').read()",
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
    # network
    "connect to a local server": "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)",
    "open a UDP socket": "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)",
    "open a UNIX socket": "import socket; socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
    "listen on another port": "import socket; socket.socket().bind(('127.0.0.1', 0)); socket.socket().listen()",
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
    "its home": "import os; open(os.path.expanduser('~/x'), 'w').write('ok'); result = os.environ['HOME']",
    "bind its own port": "import socket; s = socket.socket(); s.bind(('127.0.0.1', {own_port})); result = 'bound'",
    "the standard library and a subprocess": "import subprocess; result = subprocess.run(['echo', 'hi'], capture_output=True, text=True).stdout",
    "the learner package": "import attention_course; result = attention_course.__name__",
    "numpy": "import numpy as np; result = float(np.linalg.norm(np.ones(4)))",
    "its privileges": "result = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)",
    "its environment": "import os; result = sorted(os.environ)",
    "its processes": "import os; result = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())",
    "a few processes": "import subprocess; ps = [subprocess.Popen(['sleep', '1']) for _ in range(20)]; [p.wait() for p in ps]; result = len(ps)",
    "a process left running": f"import subprocess; subprocess.Popen(['sleep', '1000', '{MARKER}'], start_new_session=True); result = 'started'",
}


def _filled(attempts, **values):
    return {name: code.format(**values) for name, code in attempts.items()}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    server, accepted = _listening_server()
    own_port = free_port()
    tmp_path = tmp_path_factory.mktemp("sandbox")
    values = dict(course="{course}", root=ROOT, marker=MARKER, port=server.getsockname()[1],
                  grader_pid=os.getpid(), own_port=own_port)
    result, course, scratch = probe(tmp_path, {**_filled(WALLS, **values), **_filled(ALLOWED, **values)},
                                    ports=[own_port])
    server.close()
    return {"outcomes": result, "accepted": accepted, "scratch": scratch, "course": course}


@pytest.mark.parametrize("attempt", sorted(WALLS))
def test_a_wall_holds(outcomes, attempt):
    """Each hostile attempt is refused by the operating system."""
    outcome = outcomes["outcomes"][attempt]
    assert "error" in outcome, f"{attempt}: it worked ({outcome})"
    assert outcome["error"] in ("PermissionError", "FileNotFoundError", "ProcessLookupError", "MemoryError",
                                "AssertionError", "OSError", "ModuleNotFoundError"), outcome


def test_what_a_kernel_needs_still_works(outcomes):
    """Its files, its folder, its home and port, a subprocess, numpy, the learner package."""
    got = outcomes["outcomes"]
    failed = {name: got[name] for name in ALLOWED if "ok" not in got[name]}
    assert not failed, failed
    assert got["its own file"]["ok"] == repr("the learner's own file")
    assert got["the standard library and a subprocess"]["ok"] == repr("hi\n")


def test_it_runs_without_privileges_in_its_own_namespaces(outcomes):
    """No capability (bounding set included), no_new_privs, seccomp on, PID 1 of its own namespace,
    and none of the grader's variables (a gradebook URL with a password, PYTHONPATH)."""
    got = outcomes["outcomes"]
    status = eval(got["its privileges"]["ok"])       # noqa: S307 (our own probe's repr of a dict)
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert status[field].strip() == "0000000000000000", (field, status[field])
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
    assert eval(got["its processes"]["ok"])[0] == 1
    env = eval(got["its environment"]["ok"])
    assert "ATTENTION_GRADEBOOK_URL" not in env and "PYTHONPATH" not in env
    assert not outcomes["accepted"], "the sandboxed process reached a local server"


def test_nothing_it_wrote_or_started_is_left(outcomes):
    """Its folder was a tmpfs of its own namespace, and its processes died with it."""
    assert not any((outcomes["scratch"] / "sandbox").iterdir())
    assert "note.txt" not in {p.name for p in outcomes["scratch"].rglob("*")}
    left = subprocess.run(["pgrep", "-f", MARKER], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"a process outlived its sandbox: {left.stdout}"
    assert not list(Path("/tmp").glob(f"{MARKER}*"))


def test_a_fork_bomb_stops_at_the_process_limit(tmp_path):
    """Processes beyond the limit are refused; the machine keeps running."""
    got, _, _ = probe(tmp_path, {"fork bomb": """
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
         "write /tmp": WALLS["write /tmp"], "open a UDP socket": WALLS["open a UDP socket"],
         "its privileges": ALLOWED["its privileges"], "its own file": ALLOWED["its own file"]}


def test_the_kernel_account_is_used_where_python_is_readable(tmp_path):
    """As root with a Python every account can read, the sandbox switches to the kernel account."""
    from attention_grading.sandbox.account import ensure_account

    account = ensure_account()
    if account is None:
        pytest.skip("grading does not run as root here: no account to switch to")
    values = dict(course="{course}", root=ROOT, marker=MARKER, port=1, grader_pid=os.getpid(), own_port=1)
    got, _, _ = probe(tmp_path, _filled(SMALL, **values), python=_readable_python(), account=list(account))
    status = eval(got["its privileges"]["ok"])
    assert status["Uid"].split()[0] == str(account[0]) and status["CapEff"].strip() == "0000000000000000"
    assert all("error" in got[name] for name in SMALL if name not in ("its privileges", "its own file")), got
    assert got["its own file"]["ok"] == repr("the learner's own file")


def test_without_root_a_user_namespace_gives_the_same_walls(tmp_path):
    """An instructor who is not root: the sandbox is made in a user namespace, with the same walls
    (the course files are world-readable here, so only the sandbox keeps them out)."""
    python = _readable_python()
    values = dict(course="{course}", root=ROOT, marker=MARKER, port=1, grader_pid=os.getpid(), own_port=1)
    got, _, _ = probe(tmp_path, _filled(SMALL, **values), python=python, user="nobody")
    assert all("error" in got[name] for name in SMALL if name not in ("its privileges", "its own file")), got
    status = eval(got["its privileges"]["ok"])
    assert status["CapEff"].strip() == "0000000000000000" and status["NoNewPrivs"].strip() == "1"
