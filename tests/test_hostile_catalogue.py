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


CORRECT = "solution"            # the correct learner graded beside every attack
FEEDBACK_READERS = ("print_everything_into_feedback", "script_in_output", "script_in_answer", "grader_secrets")


def write_attacks(root):
    """Hand in every attack (and, unless the course has one, a correct learner) for lesson 01 of
    the course at ``root``; start the listener; take the "before" snapshot. Returns the context."""
    listener = Listener()
    answer = solved(ROOT / "notebooks" / LESSON / f"{LESSON}.ipynb", ROOT / "solutions" / LESSON / f"{LESSON}.ipynb")
    context = {"course": str(root), "port": listener.port, "grader_pid": os.getpid(), "secret": SECRET}
    students = [(f"attack_{name}", *catalogue.build(answer, name, context)) for name in ATTACKS]
    if not (root / "submitted" / CORRECT / LESSON).exists():
        students.append((CORRECT, answer, []))
    for student, nb, files in students:
        folder = root / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{LESSON}.ipynb")
        for path, content in files:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(content)
    return {"listener": listener, "root": root,
            "before": {tree: tree_hash(root / tree) for tree in COURSE_TREES},
            "environment_before": ctimes(Path(os.sys.prefix))}


def inspect(context, run, again=None):
    """Everything the assertions need, after one grading ``run`` of the course."""
    root = context["root"]
    time.sleep(2)                      # what a detached process would do after the run
    grades_csv = root / "grades.csv"
    results = {"run": run, "root": root,
               "after": {tree: tree_hash(root / tree) for tree in COURSE_TREES},
               "before": context["before"], "environment_before": context["environment_before"],
               "environment_after": ctimes(Path(os.sys.prefix)),
               "scores": grade_table(f"sqlite:///{root / 'gradebook.db'}"), "traces": traces(),
               "listener": list(context["listener"].received), "again": again,
               "grades_csv": grades_csv.read_bytes() if grades_csv.exists() else None}
    return results


def after_make_grade(context, run):
    """The ``make grade`` half (called by tests/lesson_grading.py's catalogue run, which grades
    the attacks, and their feedback, with everything else): a later run, then the snapshot."""
    root = context["root"]
    again = run_grade(root, "--lesson", LESSON, "--student", CORRECT, "--force", "--no-report",
                      "--no-feedback", timeout=300)
    results = inspect(context, run, (again, grade_table(f"sqlite:///{root / 'gradebook.db'}")))
    context["listener"].close()
    return results


def grade_with_nbgrader(folder):
    """The plain ``nbgrader autograde`` half: a course of its own, one notebook at a time."""
    root = copy_course(Path(folder) / "course", lessons=[LESSON])
    with open(root / "nbgrader_config.py", "a") as config:
        config.write("\nc.Execute.timeout = 10\n")
    nbgrader(root, "generate_assignment", LESSON, "--force")
    context = write_attacks(root)
    run = subprocess.run(
        [os.sys.executable, "-m", "nbgrader", "autograde", LESSON, "--force"], cwd=root,
        env={**os.environ, "ATTENTION_TEST_SECRET": SECRET,
             "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=900)
    results = inspect(context, run)
    context["listener"].close()
    return results


@pytest.fixture(scope="session")
def graded_run(request):
    import lesson_grading
    from conftest import graded_selection

    return background.result(request.session, "graded", lesson_grading.grade_all, *graded_selection(request.session))


@pytest.fixture(scope="session")
def make_grade_half(graded_run):
    """The attacks graded by ``make grade`` with the catalogue (tests/lesson_grading.py)."""
    return graded_run["_hostile"]


@pytest.fixture(scope="session")
def nbgrader_half(request):
    """The attacks graded by plain ``nbgrader autograde`` (started in the background)."""
    return background.result(request.session, "hostile", grade_with_nbgrader, after="validation")


@pytest.fixture
def hostile(request, way):
    """The results of grading every attack the way the test is parametrized with."""
    return request.getfixturevalue({"make grade": "make_grade_half", "nbgrader autograde": "nbgrader_half"}[way])


def _points(scores, student, exercise_tests):
    return {gid: scores.get((student, LESSON, gid)) for gid in exercise_tests}


TESTS = {"softmax": ["softmax_matches_reference"], "contextualize": ["contextualize_matches_reference"]}


# The plain-nbgrader half runs in the full tier (``pytest --full``).
WAYS = ["make grade", pytest.param("nbgrader autograde", marks=pytest.mark.full)]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("attack", ATTACKS)
def test_the_attacker_gains_nothing(hostile, attack, way):
    """The attacked exercise scores 0; its hidden test was graded (not lost to an error)."""
    scores = hostile["scores"]
    target = catalogue.ATTACKS[attack].target
    got = _points(scores, f"attack_{attack}", TESTS[target])
    assert all(v is not None for v in got.values()), f"{attack} was not graded by {way}: {got}"
    assert all(v[0] == 0 for v in got.values()), f"{attack} won points on {target} ({way}): {got}"


@pytest.mark.parametrize("way", WAYS)
def test_the_correct_learner_keeps_full_marks_and_grading_finishes(hostile, way):
    """The correct learner, graded in the same run as every attack, scores every autograded point;
    the run ended."""
    run = hostile["run"]
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    correct = _points(hostile["scores"], CORRECT, TESTS["softmax"] + TESTS["contextualize"])
    assert all(v == (3.0, False) for v in correct.values()), (correct, run.stdout[-3000:])


@pytest.mark.parametrize("way", WAYS)
def test_the_course_is_untouched(hostile, way):
    """submitted/, source/, solutions/ and instructor/ are byte-identical; the stored hidden tests
    are still source/'s."""
    from attention_grading.gradebook import stored_test_mismatches

    assert hostile["after"] == hostile["before"]
    root = hostile["root"]
    assert stored_test_mismatches(root, f"sqlite:///{root / 'gradebook.db'}", "attention", [LESSON]) == {}


@pytest.mark.parametrize("way", WAYS)
def test_the_course_environment_is_untouched(hostile, way):
    """No file of the course environment was written, none appeared."""
    before, after = hostile["environment_before"], hostile["environment_after"]
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)
                     and "__pycache__" not in p)
    assert not changed, changed[:10]


@pytest.mark.parametrize("way", WAYS)
def test_no_trace_is_left(hostile, way):
    """No file an attack named anywhere, no process it started, nothing sent out, no late write
    to the grades or the gradebook."""
    files, processes = hostile["traces"]
    assert not files, files[:10]
    assert not processes, processes
    assert not hostile["listener"], hostile["listener"]
    grades = hostile["grades_csv"]
    assert grades is None or catalogue.PREFIX.encode() not in grades
    assert all(score != 99 for score, _ in hostile["scores"].values())


@pytest.mark.parametrize("way", WAYS)
def test_no_script_survives_in_an_autograded_notebook(hostile, way):
    """The <script>, <img onerror> and JavaScript outputs are gone from what the formgrader shows."""
    root = hostile["root"]
    path = root / "autograded" / "attack_script_in_output" / LESSON / f"{LESSON}.ipynb"
    outputs = json.dumps([c.get("outputs", []) for c in nbformat.read(path, as_version=4).cells])
    assert "<script" not in outputs and "onerror" not in outputs.lower()
    assert "application/javascript" not in outputs


@pytest.mark.parametrize("way", WAYS)
def test_no_script_survives_in_a_written_answer(hostile, way):
    """The attacker's written answers are stored as the sanitiser's output: read as a browser
    reads them, none of their links, images, styles or elements can run or load a script, and
    their words are kept. In the feedback too (make grade)."""
    from attention_grading.cells import is_written_answer
    from attention_grading.sanitize import rendered
    from markup import script_urls

    root = hostile["root"]
    path = root / "autograded" / "attack_script_in_answer" / LESSON / f"{LESSON}.ipynb"
    answers = [c.source for c in nbformat.read(path, as_version=4).cells if is_written_answer(c)]
    assert answers and all("entity colon" in a and "one token's budget" in a for a in answers), answers
    assert not [bad for a in answers for bad in script_urls(rendered(a))]
    feedback = root / "feedback" / "attack_script_in_answer" / LESSON / f"{LESSON}.html"
    if way == "make grade":
        page = feedback.read_text()
        body = page[page.index('id="notebook-container"'):]
        assert "entity colon" in body and not script_urls(body, ids=False)


def test_no_feedback_shows_reference_code(make_grade_half):
    """Feedback of attackers that print all they can find: their own code and verdicts, never the
    reference or a hidden test."""
    root = make_grade_half["root"]
    files = [root / "feedback" / f"attack_{name}" / LESSON / f"{LESSON}.html" for name in FEEDBACK_READERS]
    assert all(f.is_file() for f in files), [str(f) for f in files if not f.is_file()]
    reference = leaks.reference_lines()
    for path in files:
        text = path.read_text()
        found = [line for line in reference if line in text] + [m for m in ("BEGIN HIDDEN TESTS", "_private_reference")
                                                               if m in text]
        assert not found, (path, found[:3])


def test_a_later_run_grades_as_before(make_grade_half):
    """After every attack, grading the correct learner again gives the same full marks."""
    again, scores = make_grade_half["again"]
    assert again.returncode == 0, again.stdout[-3000:]
    correct = _points(scores, CORRECT, TESTS["softmax"] + TESTS["contextualize"])
    assert all(v == (3.0, False) for v in correct.values()), correct


@pytest.mark.parametrize("way", WAYS)
def test_the_grader_secret_never_reached_a_kernel(hostile, way):
    """The grader's environment (a stand-in for a gradebook password) is invisible to kernels."""
    root = hostile["root"]
    nb = nbformat.read(root / "autograded" / "attack_grader_secrets" / LESSON / f"{LESSON}.ipynb", as_version=4)
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "found the secret" not in outputs and SECRET not in outputs


@pytest.mark.parametrize("way", WAYS)
def test_a_crash_is_named_and_costs_its_exercise_only(hostile, way):
    """The segfaulting softmax is named in grading-notes.json; contextualize keeps its points."""
    root = hostile["root"]
    notes = json.loads((root / "autograded" / "attack_segfault" / LESSON / "grading-notes.json").read_text())
    assert notes["crashed_cells"] or any(v["kind"] == "crashed" for v in notes["verdicts"].values()), notes
    assert _points(hostile["scores"], "attack_segfault", TESTS["contextualize"]) == \
        {"contextualize_matches_reference": (3.0, False)}
