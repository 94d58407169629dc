"""Every attack of tests/hostile_catalogue.py, graded beside a correct learner, two ways: by
``make grade`` (two workers, forked sandboxed kernels, feedback) and by plain ``nbgrader
autograde`` (the course's nbgrader_config.py, one notebook at a time). For each attack, both ways:

- the attacker gains nothing on the exercise it attacks, and the correct learner keeps full marks;
- nothing of the course changes: ``submitted/``, ``source/``, ``solutions/``, ``instructor/`` are
  byte-identical, and no file of the course environment was written (no file's ctime moved:
  Linux sets it on every write and no process can set it back);
- no file named by an attack appears anywhere (/tmp, home folders, the course, its environment),
  no process an attack started is left, nothing reached a local server, no script survives in
  an autograded notebook, no reference code in the attacker's feedback;
- grading finishes, and a later run grades a correct learner as before.

Both runs start in the background when the tests are collected (tests/background.py).
"""
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import nbformat
import pytest

import background
import hostile_catalogue as catalogue
import leaks
from conftest import ROOT, copy_course, nbgrader
from grading_helpers import LESSON, grade_table, run_grade, tree_hash
from notebook_tools import solved

pytestmark = pytest.mark.nbgrader
ATTACKS = sorted(catalogue.ATTACKS)
SECRET = "attention-grader-secret-6f1d2"
COURSE_TREES = ("submitted", "source", "solutions", "instructor")
SEARCHED = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/root"), ROOT]


class Listener:
    """A TCP and a UDP server on one loopback port that remember anything sent to them."""

    def __init__(self):
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen()
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.received = []
        threading.Thread(target=self._accept, daemon=True).start()
        threading.Thread(target=self._datagrams, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.tcp.accept()
            except OSError:
                return
            self.received.append(("tcp", conn.recv(100)))
            conn.close()

    def _datagrams(self):
        while True:
            try:
                self.received.append(("udp", self.udp.recv(100)))
            except OSError:
                return

    def close(self):
        self.tcp.close()
        self.udp.close()


def ctimes(folder):
    """{path: (ctime_ns, size)} of every file under ``folder``: any write shows."""
    out = {}
    for top, _, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            out[os.path.join(top, name)] = (stat.st_ctime_ns, stat.st_size)
    return out


def traces():
    """Files named by an attack, anywhere searched, and processes an attack started."""
    found = []
    for root in SEARCHED:
        for top, dirs, files in os.walk(root):
            found += [os.path.join(top, n) for n in dirs + files if n.startswith(catalogue.PREFIX)]
    ps = subprocess.run(["pgrep", "-af", catalogue.PREFIX], capture_output=True, text=True).stdout
    processes = [line for line in ps.splitlines() if "pgrep" not in line]
    return found, processes


def _course(folder, name, listener, answer):
    root = copy_course(Path(folder) / name, lessons=[LESSON])
    with open(root / "nbgrader_config.py", "a") as config:
        config.write("\nc.Execute.timeout = 10\n")
    nbgrader(root, "generate_assignment", LESSON, "--force")
    context = {"course": str(root), "port": listener.port, "grader_pid": os.getpid(), "secret": SECRET}
    for student, nb, files in [("alice", answer, [])] + [
            (f"attack_{name}", *catalogue.build(answer, name, context)) for name in ATTACKS]:
        folder = root / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{LESSON}.ipynb")
        for path, content in files:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(content)
    return root


def grade_hostile(folder):
    """Both runs, with everything the assertions need."""
    listener = Listener()
    answer = solved(ROOT / "notebooks" / LESSON / f"{LESSON}.ipynb", ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")
    courses = {"make grade": _course(folder, "make-grade", listener, answer),
               "nbgrader autograde": _course(folder, "nbgrader", listener, answer)}
    before = {way: {tree: tree_hash(root / tree) for tree in COURSE_TREES} for way, root in courses.items()}
    environment = ctimes(Path(os.sys.prefix))
    env = {"ATTENTION_TEST_SECRET": SECRET}
    runs = {}
    started = time.monotonic()
    runs["make grade"] = run_grade(courses["make grade"], "--workers", "2", "--force", timeout=900, **env)
    runs["nbgrader autograde"] = subprocess.run(
        [os.sys.executable, "-m", "nbgrader", "autograde", LESSON, "--force"], cwd=courses["nbgrader autograde"],
        env={**os.environ, **env, "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    grades_csv = (courses["make grade"] / "grades.csv").read_bytes()
    time.sleep(2)                      # what a detached process would do after the run
    results = {"seconds": seconds, "runs": runs, "courses": courses, "listener": listener.received,
               "before": before, "environment_before": environment}
    results["after"] = {way: {tree: tree_hash(root / tree) for tree in COURSE_TREES} for way, root in courses.items()}
    results["environment_after"] = ctimes(Path(os.sys.prefix))
    results["grades_csv_later"] = (courses["make grade"] / "grades.csv").read_bytes() == grades_csv
    results["scores"] = {way: grade_table(f"sqlite:///{root / 'gradebook.db'}") for way, root in courses.items()}
    results["traces"] = traces()
    again = run_grade(courses["make grade"], "--student", "alice", "--force", "--no-report", timeout=300)
    results["again"] = (again, grade_table(f"sqlite:///{courses['make grade'] / 'gradebook.db'}"))
    listener.close()
    return results


@pytest.fixture(scope="session")
def hostile(request):
    return background.result("hostile", grade_hostile)


def _points(scores, student, exercise_tests):
    return {gid: scores.get((student, LESSON, gid)) for gid in exercise_tests}


TESTS = {"softmax": ["softmax_matches_reference"], "contextualize": ["contextualize_matches_reference"]}


@pytest.mark.parametrize("way", ["make grade", "nbgrader autograde"])
@pytest.mark.parametrize("attack", ATTACKS)
def test_the_attacker_gains_nothing(hostile, attack, way):
    """The attacked exercise scores 0; its hidden test was graded (not lost to an error)."""
    scores = hostile["scores"][way]
    target = catalogue.ATTACKS[attack].target
    got = _points(scores, f"attack_{attack}", TESTS[target])
    assert all(v is not None for v in got.values()), f"{attack} was not graded by {way}: {got}"
    assert all(v[0] == 0 for v in got.values()), f"{attack} won points on {target} ({way}): {got}"


@pytest.mark.parametrize("way", ["make grade", "nbgrader autograde"])
def test_the_correct_learner_keeps_full_marks_and_grading_finishes(hostile, way):
    """alice, graded in the same run as every attack, scores every autograded point; the run ended."""
    run = hostile["runs"][way]
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    alice = _points(hostile["scores"][way], "alice", TESTS["softmax"] + TESTS["contextualize"])
    assert all(v == (3.0, False) for v in alice.values()), (alice, run.stdout[-3000:])


@pytest.mark.parametrize("way", ["make grade", "nbgrader autograde"])
def test_the_course_is_untouched(hostile, way):
    """submitted/, source/, solutions/ and instructor/ are byte-identical; the stored hidden tests
    are still source/'s."""
    assert hostile["after"][way] == hostile["before"][way]
    from attention_grading.gradebook import stored_test_mismatches

    root = hostile["courses"][way]
    assert stored_test_mismatches(root, f"sqlite:///{root / 'gradebook.db'}", "attention", [LESSON]) == {}


def test_the_course_environment_is_untouched(hostile):
    """No file of the course environment was written, none appeared."""
    before, after = hostile["environment_before"], hostile["environment_after"]
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)
                     and "__pycache__" not in p)
    assert not changed, changed[:10]


def test_no_trace_is_left(hostile):
    """No file an attack named anywhere, no process it started, nothing sent out, no late write."""
    files, processes = hostile["traces"]
    assert not files, files[:10]
    assert not processes, processes
    assert not hostile["listener"], hostile["listener"]
    assert hostile["grades_csv_later"], "grades.csv changed after make grade had finished"
    scores = hostile["scores"]["make grade"]
    assert all(score != 99 for score, _ in scores.values())


def test_no_script_survives_in_an_autograded_notebook(hostile):
    """The <script>, <img onerror> and JavaScript outputs are gone from what the formgrader shows."""
    for root in hostile["courses"].values():
        path = root / "autograded" / "attack_script_in_output" / LESSON / f"{LESSON}.ipynb"
        outputs = json.dumps([c.get("outputs", []) for c in nbformat.read(path, as_version=4).cells])
        assert "<script" not in outputs and "onerror" not in outputs.lower()
        assert "application/javascript" not in outputs


def test_no_feedback_shows_reference_code(hostile):
    """Feedback of every attacker: the learner's own code and verdicts, never the reference."""
    root = hostile["courses"]["make grade"]
    files = list((root / "feedback").glob(f"attack_*/{LESSON}/*.html"))
    assert len(files) >= len(ATTACKS) - 3, sorted(str(f) for f in files)
    reference = leaks.reference_lines()
    for path in files:
        text = path.read_text()
        found = [line for line in reference if line in text] + [m for m in ("BEGIN HIDDEN TESTS", "_private_reference")
                                                               if m in text]
        assert not found, (path, found[:3])


def test_a_later_run_grades_as_before(hostile):
    """After every attack, grading the correct learner again gives the same full marks."""
    again, scores = hostile["again"]
    assert again.returncode == 0, again.stdout[-3000:]
    alice = _points(scores, "alice", TESTS["softmax"] + TESTS["contextualize"])
    assert all(v == (3.0, False) for v in alice.values()), alice


def test_the_grader_secret_never_reached_a_kernel(hostile):
    """The grader's environment (a stand-in for a gradebook password) is invisible to kernels."""
    for root in hostile["courses"].values():
        nb = nbformat.read(root / "autograded" / "attack_grader_secrets" / LESSON / f"{LESSON}.ipynb", as_version=4)
        outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
        assert "found the secret" not in outputs and SECRET not in outputs
