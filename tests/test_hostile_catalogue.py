"""Every attack of tests/hostile_catalogue.py, graded beside a correct learner, two ways: by
``make grade`` (two workers, forked sandboxed kernels, feedback) and by plain ``nbgrader
autograde`` (the course's nbgrader_config.py, one notebook at a time). For each attack, both ways:

- the attacker gains nothing on the exercises it attacks (each graded, not left blank: a
  submission that makes itself ungradable scores 0 with the reason; only a file that is not a
  notebook the grader reads is left ungraded, named), and the correct learners keep full marks;
- nothing of the course changes: ``submitted/``, ``source/``, ``solutions/``, ``instructor/`` are
  byte-identical with modes, owners, times (ctime included: Linux sets it on every write and
  metadata change, and no process can set it back) and extended attributes; the course
  environment, the learner package and the Python installation likewise (every file's ctime,
  mode, owner and attributes, every folder's mode, owner and attributes);
- no file named by an attack appears anywhere (/tmp, home folders, the course, its environment),
  no process an attack started is left, nothing reached a server of this machine (a TCP, UDP,
  UNIX stream, UNIX datagram or ZeroMQ server the test runs), no attack reports that anything it
  tried worked, no script survives in an autograded notebook, no reference code in the
  attacker's feedback, and the autograded notebooks stay within the output caps;
- grading finishes, and a later run grades a correct learner as before;
- an attack that makes a second attempt (``Attack.resubmit``: the same notebook, a file of
  answers beside it) hands it in once the first is graded, both ways, and is graded again: it
  gains nothing either, and nothing its first attempt showed carries a hidden case;
- every graded cell stays, with a score, whatever a learner's hook does to the kernel; any text
  a notebook's JSON can hold is graded; a stand-in asked for more than its test needs is refused.

Both runs start in the background when the tests are collected (tests/background.py).
"""
import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

import background
import hostile_catalogue as catalogue
import leaks
from attention_grading.hidden.cases import course_secret
from conftest import ROOT, copy_course, nbgrader
from grading_helpers import (CELL_TIMEOUT, LESSON, grade_table, metadata_snapshot, run_grade, snapshot_changes,
                             tree_hash)
from listeners import Listener
from notebook_tools import solved

pytestmark = pytest.mark.nbgrader
ATTACKS = sorted(catalogue.ATTACKS)
QUICK_ATTACKS = catalogue.selected(full=False)


def tier_marks(*attacks):
    """The marks of a test that reads ``attacks``: none when the quick tier grades them all, else ``full``."""
    return (pytest.mark.full,) if set(attacks) - set(QUICK_ATTACKS) else ()


def reading(*attacks):
    """Decorate a test that reads ``attacks`` with ``tier_marks``."""
    def marked(test):
        for mark in tier_marks(*attacks):
            test = mark(test)
        return test
    return marked


#: ``attack`` parameters: those the quick tier does not grade run in the full tier only.
ATTACK_PARAMS = [pytest.param(name, marks=tier_marks(name)) for name in ATTACKS]
SECRET = "attention-grader-secret-6f1d2"
COURSE_TREES = ("submitted", "source", "solutions", "instructor")
SEARCHED = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/root"), ROOT]
# What a kernel can read and must not change: the course environment, the learner package, the
# Python installation's standard library.
WATCHED = sorted({sys.prefix, str(ROOT / "src" / "attention_course"), sysconfig.get_paths()["stdlib"]})


def traces():
    """Files named by an attack of this catalogue, anywhere searched, and processes an attack
    started (by each attack's own marker: another test's markers on this machine are not ours)."""
    markers = tuple(catalogue.PREFIX + name for name in ATTACKS)
    found = []
    for root in SEARCHED:
        for top, dirs, files in os.walk(root):
            found += [os.path.join(top, n) for n in dirs + files if n.startswith(markers)]
    return found, attack_processes()


def attack_processes():
    """Command lines of the processes an attack started (they carry its marker)."""
    markers = tuple(catalogue.PREFIX + name for name in ATTACKS)
    ps = subprocess.run(["pgrep", "-af", catalogue.PREFIX], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if "pgrep" not in line and any(m in line for m in markers)]


CORRECT = "solution"            # the correct learner graded beside every attack (of each lesson)
FEEDBACK_READERS = ("print_everything_into_feedback", "script_in_output", "script_in_answer", "grader_secrets",
                    "carry_cases_to_the_next_attempt", "carry_cases_across_lessons", "hidden_inputs_in_exceptions")


def write_attacks(root, names):
    """Hand in the attacks ``names`` (and, unless the course has one, a correct learner of each
    attacked lesson) in the course at ``root``; start the listener; take the "before" snapshots.
    Returns the context."""
    listener = Listener()
    lessons = catalogue.lessons_of(names)
    context = {"course": str(root), "grader_pid": os.getpid(), "secret": SECRET, **listener.addresses()}
    answers = {lesson: solved(ROOT / "notebooks" / lesson / f"{lesson}.ipynb",
                              ROOT / "solutions" / lesson / f"{lesson}.ipynb") for lesson in lessons}
    for lesson, answer in answers.items():
        if not (root / "submitted" / CORRECT / lesson).exists():
            folder = root / "submitted" / CORRECT / lesson
            folder.mkdir(parents=True)
            nbformat.write(answer, folder / f"{lesson}.ipynb")
    for name in names:
        lesson = catalogue.ATTACKS[name].lesson
        nb, files, raw = catalogue.build(answers[lesson], name, context)
        folder = root / "submitted" / f"attack_{name}" / lesson
        folder.mkdir(parents=True)
        if raw is None:
            nbformat.write(nb, folder / f"{lesson}.ipynb")
        else:
            (folder / f"{lesson}.ipynb").write_text(raw)
        for path, content in files:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(content)
    course_secret(root)           # the course's own state, made before grading as a first run does
    return {"listener": listener, "root": root, "attacks": list(names), "lessons": lessons, "fill": context,
            "before": {tree: tree_hash(root / tree) for tree in COURSE_TREES},
            "environment_before": {folder: metadata_snapshot(folder) for folder in WATCHED}}


def _shown(root, student, lesson):
    """What a learner can read of a graded submission: its autograded notebook (the outputs its
    feedback shows) and its feedback page, if one was made."""
    texts = []
    for path in (root / "autograded" / student / lesson / f"{lesson}.ipynb",
                 root / "feedback" / student / lesson / f"{lesson}.html"):
        if path.is_file():
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


def hand_in_next_attempts(context):
    """Once the first grading is over: the next attempt of every attack that makes one, handed in
    as its learner would (the same notebook, files added beside it, made from what the first
    attempt showed and from that attempt's cases), and its submission to a companion lesson.
    Returns {student: lessons to grade again} and keeps what the first attempts showed in the
    context."""
    root, again = context["root"], {}
    context["first_attempts"] = {}
    for name in context["attacks"]:
        attack = catalogue.ATTACKS[name]
        if attack.resubmit is None:
            continue
        student = f"attack_{name}"
        shown = _shown(root, student, attack.lesson)
        context["first_attempts"][name] = {attack.lesson: shown}
        namespace = catalogue.attack_namespace(name, context["fill"])
        for path, content in attack.resubmit(root, student, namespace, shown):
            (root / "submitted" / student / attack.lesson / path).write_text(content)
        again[student] = [attack.lesson]
        if attack.companion:
            lesson = attack.companion[0]
            answer = solved(ROOT / "notebooks" / lesson / f"{lesson}.ipynb",
                            ROOT / "solutions" / lesson / f"{lesson}.ipynb")
            folder = root / "submitted" / student / lesson
            folder.mkdir(parents=True)
            nbformat.write(catalogue.build_companion(answer, name, context["fill"]), folder / f"{lesson}.ipynb")
            for path, content in attack.companion[3](root, student, namespace):
                (folder / path).write_text(content)
            again[student].append(lesson)
    # The learner changed their submission: what grading must leave untouched is it as it is now.
    context["before"]["submitted"] = tree_hash(root / "submitted")
    return again


def _scores(root, lessons):
    table = {}
    for lesson in lessons:
        table.update(grade_table(f"sqlite:///{root / 'gradebook.db'}", lesson))
    return table


def inspect(context, run, again=None):
    """Everything the assertions need, after one grading ``run`` of the course."""
    root = context["root"]
    # A process an attack left running is found by its marker, whatever it has done yet: wait
    # (a minute at most) for the ones the run's end is still taking down, so that only one that
    # outlived it is reported.
    deadline = time.monotonic() + 60
    while attack_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    grades_csv = root / "grades.csv"
    return {"run": run, "root": root, "attacks": context["attacks"], "lessons": context["lessons"],
            "first_attempts": context.get("first_attempts", {}), "fill": context["fill"],
            "companions": {name: _shown(root, f"attack_{name}", catalogue.ATTACKS[name].companion[0])
                           for name in context["attacks"] if catalogue.ATTACKS[name].companion},
            "resubmitted": context.get("resubmitted"),
            "after": {tree: tree_hash(root / tree) for tree in COURSE_TREES},
            "before": context["before"],
            "environment_changed": {folder: snapshot_changes(state, metadata_snapshot(folder))
                                    for folder, state in context["environment_before"].items()},
            "scores": _scores(root, context["lessons"]), "traces": traces(),
            "listener": list(context["listener"].received), "ignored": list(context["listener"].ignored),
            "again": again, "grades_csv": grades_csv.read_bytes() if grades_csv.exists() else None,
            "grader_max_rss": _max_rss_of_children()}


def _max_rss_of_children():
    """The largest resident set of any process this one waited for, directly or not (bytes)."""
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def after_make_grade(context, run):
    """The ``make grade`` half (called by tests/lesson_grading.py's catalogue run, which grades
    the attacks, and their feedback, with everything else): a later run, then the snapshot."""
    root = context["root"]
    next_attempts = hand_in_next_attempts(context)
    if next_attempts:
        lessons = sorted({lesson for lessons in next_attempts.values() for lesson in lessons})
        context["resubmitted"] = run_grade(root, *[a for l in lessons for a in ("--lesson", l)],
                                           *[a for s in next_attempts for a in ("--student", s)], "--no-report",
                                           timeout=900)
    again = run_grade(root, "--lesson", LESSON, "--student", CORRECT, "--force", "--no-report",
                      "--no-feedback", timeout=300)
    results = inspect(context, run, (again, grade_table(f"sqlite:///{root / 'gradebook.db'}")))
    context["listener"].close()
    return results


# A guard against a hung grader, not a speed target: stock nbgrader grades the lesson-01 attacks one
# at a time (about 60, several of which wait out their time limits), beside the rest of the full tier.
HANG_GUARD = 3600


def grade_with_nbgrader(folder):
    """The plain ``nbgrader autograde`` half: a course of its own, one notebook at a time."""
    root = copy_course(Path(folder) / "course", lessons=list(catalogue.LESSONS))
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
    for lesson in catalogue.LESSONS:
        nbgrader(root, "generate_assignment", lesson, "--force")
    context = write_attacks(root, ATTACKS)
    runs = [subprocess.run(
        [os.sys.executable, "-m", "nbgrader", "autograde", lesson, "--force"], cwd=root,
        env={**os.environ, "ATTENTION_TEST_SECRET": SECRET,
             "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"},
        capture_output=True, text=True, timeout=HANG_GUARD) for lesson in catalogue.LESSONS]
    for student, lessons in hand_in_next_attempts(context).items():
        runs += [subprocess.run(
            [os.sys.executable, "-m", "nbgrader", "autograde", lesson, "--student", student, "--force"], cwd=root,
            env={**os.environ, "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"},
            capture_output=True, text=True, timeout=HANG_GUARD) for lesson in lessons]
    run = subprocess.CompletedProcess(runs[0].args, max(r.returncode for r in runs),
                                      "".join(r.stdout for r in runs), "".join(r.stderr for r in runs))
    results = inspect(context, run)
    context["listener"].close()
    return results


@pytest.fixture(scope="session")
def make_grade_half(graded):
    """The attacks graded by ``make grade`` with the catalogue (tests/lesson_grading.py)."""
    return graded["_hostile"]


@pytest.fixture(scope="session")
@background.waits
def nbgrader_half(request):
    """The attacks graded by plain ``nbgrader autograde`` (started in the background)."""
    return background.result(request.session, "hostile", grade_with_nbgrader, after="validation")


@pytest.fixture
@background.waits
def hostile(request, way):
    """The results of grading every attack the way the test is parametrized with."""
    return request.getfixturevalue({"make grade": "make_grade_half", "nbgrader autograde": "nbgrader_half"}[way])


def _points(scores, student, exercise_tests, lesson=LESSON):
    return {gid: scores.get((student, lesson, gid)) for gid in exercise_tests}


TESTS = {"softmax": ["softmax_matches_reference"], "contextualize": ["contextualize_matches_reference"],
         "tiled_attention": ["tiled_attention_matches_reference"],
         "multi_head_attention": ["multi_head_attention_matches_reference"],
         "generate": ["generate_matches_reference"],
         "adam_step": ["adam_step_matches_reference", "adam_step_trains_the_model"],
         "sample_next": ["sample_next_matches_reference"]}
#: The hidden tests of the correct learner of each lesson the attacks are handed in for (3 points each).
CORRECT_TESTS = {catalogue.LESSON: TESTS["softmax"] + TESTS["contextualize"],
                 "06_multi_head": TESTS["multi_head_attention"],
                 catalogue.MEASURED_LESSON: TESTS["tiled_attention"],
                 catalogue.CAPSTONE: TESTS["adam_step"], catalogue.SMALL_GPT: TESTS["sample_next"] + TESTS["generate"]}
# The plain-nbgrader half runs in the full tier (``pytest --full``).
WAYS = ["make grade", pytest.param("nbgrader autograde", marks=pytest.mark.full)]
OUTPUT_CAP_BYTES = (8 << 20) + (2 << 20)   # GuardedExecute.max_notebook_output_bytes, and the lesson itself


def test_an_attack_left_to_the_full_tier_names_a_quick_test_of_its_wall():
    """Each attack the quick tier leaves out (``full_only``) names a test of the quick tier that
    proves the same wall, and that test exists."""
    for name, attack in catalogue.ATTACKS.items():
        if attack.full_only:
            path, test = attack.full_only.split("::")
            source = (ROOT / "tests" / path).read_text()
            assert f"def {test}(" in source, f"{name}: {attack.full_only} is not a test"
            assert not re.search(rf"@pytest\.mark\.full\s*\ndef {test}\(", source), f"{name}: {test} is full tier"


def _autograded(root, name):
    lesson = catalogue.ATTACKS[name].lesson
    return root / "autograded" / f"attack_{name}" / lesson / f"{lesson}.ipynb"


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("attack", ATTACK_PARAMS)
def test_the_attacker_gains_nothing(hostile, attack, way):
    """Every exercise the attack answers scores 0, graded (not left blank by an error); a written
    answer it tampers with still awaits manual grading. A file that is not a notebook the grader
    reads is not graded, and make grade's grades.csv says why."""
    scores, spec = hostile["scores"], catalogue.ATTACKS[attack]
    student = f"attack_{attack}"
    tests = [gid for exercise in spec.exercises for gid in TESTS[exercise]]
    got = _points(scores, student, tests, spec.lesson)
    if not spec.graded:     # make grade names it, grading nobody else's less; nbgrader reads what it can
        assert all(v is None or not v[0] for v in got.values()), f"{attack} won points ({way}): {got}"
        if way == "make grade":
            assert all(v is None or v[0] is None for v in got.values()), f"{attack} was graded: {got}"
            import csv
            import io

            rows = [r for r in csv.DictReader(io.StringIO(hostile["grades_csv"].decode()))
                    if r["student"] == student and r["lesson"] == spec.lesson]
            assert rows and rows[0]["status"] == "ungradable" and "malformed notebook" in rows[0]["note"], rows
        return
    assert all(v is not None for v in got.values()), f"{attack} was not graded by {way}: {got}"
    if spec.correct:    # right answers under changed metadata: exactly the points the gradebook gives
        maxima = _maxima(hostile["root"], spec.lesson)
        assert all(v == (maxima[gid], False) for gid, v in got.items()), f"{attack} ({way}): {got}, {maxima}"
    else:
        assert all(v[0] == 0 for v in got.values()), f"{attack} won points ({way}): {got}"
    written = _points(scores, student, spec.written, spec.lesson)
    assert all(v == (None, True) for v in written.values()), f"{attack} scored a written answer: {written}"


def _maxima(root, lesson):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        return {cell.name: cell.max_score for cell in gb.find_notebook(lesson, lesson).grade_cells}


@pytest.mark.parametrize("way", WAYS)
def test_the_correct_learner_keeps_full_marks_and_grading_finishes(hostile, way):
    """The correct learners (of lesson 01, and of lessons 06, 07, 08 and 09 where their attacks were
    graded), graded in the same run as the attacks, score every point of their hidden tests; the
    run ended."""
    run = hostile["run"]
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-3000:]
    correct = {}
    for lesson in hostile["lessons"]:
        correct.update({(lesson, gid): v for gid, v in
                        _points(hostile["scores"], CORRECT, CORRECT_TESTS[lesson], lesson).items()})
    maxima = {(lesson, gid): points for lesson in hostile["lessons"]
              for gid, points in _maxima(hostile["root"], lesson).items()}
    assert all(v == (maxima[key], False) for key, v in correct.items()), (correct, run.stdout[-3000:])
    if hostile["resubmitted"] is not None:
        assert hostile["resubmitted"].returncode in (0, 1), hostile["resubmitted"].stdout[-3000:]


@pytest.mark.parametrize("way", WAYS)
def test_the_course_is_untouched(hostile, way):
    """submitted/, source/, solutions/ and instructor/ are byte-identical (modes, owners, times and
    extended attributes included); the stored hidden tests are still source/'s."""
    from attention_grading.store.lessons import stored_test_mismatches

    assert hostile["after"] == hostile["before"]
    root = hostile["root"]
    assert stored_test_mismatches(root, f"sqlite:///{root / 'gradebook.db'}", "attention",
                                  hostile["lessons"]) == {}


@pytest.mark.parametrize("way", WAYS)
def test_the_course_environment_is_untouched(hostile, way):
    """No file of the course environment, the learner package or the Python installation was
    written or changed its mode, owner, times or extended attributes; none appeared."""
    changed = {folder: paths for folder, paths in hostile["environment_changed"].items() if paths}
    assert not changed, {folder: paths[:10] for folder, paths in changed.items()}


@pytest.mark.parametrize("way", WAYS)
def test_no_trace_is_left(hostile, way):
    """No file an attack named anywhere, no process it started, nothing reached a server of this
    machine, no late write to the grades or the gradebook."""
    files, processes = hostile["traces"]
    assert not files, files[:10]
    assert not processes, processes
    assert not hostile["listener"], hostile["listener"]
    grades = hostile["grades_csv"]
    assert grades is None or catalogue.PREFIX.encode() not in grades
    assert all(score != 99 for score, _ in hostile["scores"].values())


@pytest.mark.parametrize("way", WAYS)
def test_nothing_an_attack_tried_worked(hostile, way):
    """No attack reports, in its own outputs, that a socket, a metadata call, a measurement or any
    other attempt got through."""
    root = hostile["root"]
    got = {}
    for name in hostile["attacks"]:
        path = _autograded(root, name)
        if path.is_file():
            said = [json.dumps(c.get("outputs", [])) for c in nbformat.read(path, as_version=4).cells]
            found = [text for text in said if f"{catalogue.PREFIX}{name} {catalogue.GOT}" in text]
            if found:
                got[name] = [text[:300] for text in found[:3]]
    assert not got, got


@pytest.mark.parametrize("way", WAYS)
def test_outputs_stay_within_the_caps(hostile, way):
    """The submission that prints tens of MB of every output type makes an autograded notebook
    within the per-notebook output cap, grades, and the grader's processes stay bounded."""
    root = hostile["root"]
    path = _autograded(root, "huge_outputs_of_every_kind")
    assert path.stat().st_size < OUTPUT_CAP_BYTES, path.stat().st_size
    nb = nbformat.read(path, as_version=4)
    # What each cell kept, so that a run without the note says why (a timeout, a crash, no output).
    kept = [[o.get("ename") or o.get("output_type") for o in c.get("outputs", [])] for c in nb.cells
            if c.cell_type == "code"]
    assert any("dropped by the grader" in json.dumps(c.get("outputs", [])) for c in nb.cells), kept
    print(f"\n{way}: largest grading process {hostile['grader_max_rss'] / 2**20:.0f} MiB; "
          f"autograded notebook {path.stat().st_size / 2**20:.1f} MiB")


@reading("starve_own_kernel")
@pytest.mark.parametrize("way", WAYS)
def test_a_kernel_kept_from_the_cpu_on_purpose_is_stopped_within_the_stretch(hostile, way):
    """The attack that starves its own kernel (eight busy children on its CPU) stretches its cell's
    limit, since time a kernel waits for a CPU does not count, but no further than
    GuardedExecute.time_stretch times it on the wall clock."""
    from attention_grading.steps.execute import GuardedExecute

    path = _autograded(hostile["root"], "starve_own_kernel")
    said = " ".join(json.dumps(c.get("outputs", [])) for c in nbformat.read(path, as_version=4).cells)
    found = re.search(r"stopped after ([0-9.]+) s", said)
    assert found, said[-2000:]
    cap = GuardedExecute.class_traits()["time_stretch"].default_value * CELL_TIMEOUT
    # More than twice the limit: the starving worked (own time was under the limit that long);
    # the slack after the cap is the interrupt reaching a starved kernel on a busy machine.
    assert 2 * CELL_TIMEOUT < float(found.group(1)) <= cap + 15, (found.group(0), cap)


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
    from attention_grading.steps.sanitize import rendered
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
    files = [root / "feedback" / f"attack_{name}" / catalogue.ATTACKS[name].lesson /
             f"{catalogue.ATTACKS[name].lesson}.html" for name in FEEDBACK_READERS if name in make_grade_half["attacks"]]
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


# ---------------------------------------------------------------- cases, attempts, cells, text (issue 37)

RESUBMITTED = [name for name in ATTACKS if catalogue.ATTACKS[name].resubmit is not None]
LEAKING = [name for name in ATTACKS if catalogue.ATTACKS[name].leaks]


def _params(names):
    return [pytest.param(name, marks=tier_marks(name)) for name in names]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("attack", _params(RESUBMITTED))
def test_a_case_carried_to_the_next_attempt_earns_nothing(hostile, attack, way):
    """The learner hands in the same notebook again with a file answering every hidden case its first
    attempt drew (what its feedback showed, and what mining that attempt completely would give):
    a new attempt, which draws new cases, so the function it never wrote earns nothing. The first
    attempt's feedback showed none of the answers a stand-in gave inside the kernel."""
    from attention_grading.hidden.attempts import AttemptLedger

    root, spec = hostile["root"], catalogue.ATTACKS[attack]
    student = f"attack_{attack}"
    attempts = AttemptLedger(root).attempts(student, spec.lesson)
    assert [a.number for a in attempts] == [1, 2] and attempts[0].digest != attempts[1].digest, attempts
    handed_in = json.loads((root / "submitted" / student / spec.lesson / "answers.json").read_text())
    keys = catalogue.attack_namespace(attack, hostile["fill"])["_key"]
    first = [keys(*values) for values, _ in catalogue.drawn_cases(root, student, spec.lesson, spec.target, 1)]
    second = [keys(*values) for values, _ in catalogue.drawn_cases(root, student, spec.lesson, spec.target, 2)]
    assert first and all(key in handed_in for key in first), "the file does not answer the first attempt's cases"
    assert not set(second) & set(handed_in), "the second attempt drew a case of the first"
    assert _points(hostile["scores"], student, TESTS[spec.target], spec.lesson) == \
        {gid: (0.0, False) for gid in TESTS[spec.target]}
    shown = [*hostile["first_attempts"][attack].values()] + (
        [hostile["companions"][attack]] if attack in hostile["companions"] else [])
    for text in shown:              # what its feedback showed (lesson 09's: the lent answers it asked for)
        assert "LEAKED {}" in text, text[-2000:]
        assert not catalogue.leaked(text), list(catalogue.leaked(text))[:3]


def _hidden_values(root, student, lesson, function):
    """The numbers of the hidden inputs an attempt drew, as text a leak would print them in."""
    values = set()
    for arguments, _ in catalogue.drawn_cases(root, student, lesson, function, 1):
        for value in arguments:
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                for number in value.ravel()[:40]:
                    if np.isfinite(number) and abs(number) > 1e-3 and number != round(number):
                        values |= {repr(float(number)), f"{number:.6f}"}
    return values


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("attack", _params(LEAKING))
def test_no_hidden_input_reaches_what_the_learner_sees(hostile, attack, way):
    """Whatever the attack printed, raised, warned or wrote while its hidden test ran, no number of
    that test's hidden inputs is in its autograded notebook or its feedback (first attempt); an
    exception it raised is still named in the verdict."""
    root, spec = hostile["root"], catalogue.ATTACKS[attack]
    student = f"attack_{attack}"
    shown = hostile["first_attempts"].get(attack) or {spec.lesson: _shown(root, student, spec.lesson)}
    hidden = set().union(*(_hidden_values(root, student, spec.lesson, f) for f in spec.exercises))
    assert hidden
    for lesson, text in shown.items():
        found = sorted(value for value in hidden if value in text)
        assert not found, (attack, lesson, found[:5])
    if attack == "hidden_inputs_in_exceptions":
        notes = json.loads((root / "autograded" / student / LESSON / "grading-notes.json").read_text())
        message = notes["verdicts"]["softmax_matches_reference"]["message"]
        assert "KeyboardInterrupt: " in message and "interrupted …" in message, message
        logged = [line for line in notes["kernel_log"].splitlines() if len(line.strip()) > 20]
        for text in shown.values():       # the kernel's log and the grader's notes stay the instructor's
            assert not [line for line in logged if line in text], logged[:3]
            assert not re.search(rf"{catalogue.PREFIX}{attack} fd[12] [-0-9]", text)    # its code says "fd2 " + ...


HOOK_ATTACKS = {"hook_kills_the_kernel_at_a_test_cell": "softmax_matches_reference",
                "hook_kills_the_kernel_before_a_test_cell": None}


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("attack", _params(HOOK_ATTACKS))
def test_every_graded_cell_stays_with_a_score(hostile, attack, way):
    """A learner's hook kills the kernel at softmax's test cell, or just before it: every graded
    cell of the lesson is still in the autograded notebook, every test has a score (0 where the
    kernel died, full marks for the correct answer tested in a fresh kernel), none awaits manual
    grading, and the notes name the cell that was running."""
    from attention_grading.cells import grade_id

    root = hostile["root"]
    student = f"attack_{attack}"
    path = _autograded(root, attack)
    present = {grade_id(c) for c in nbformat.read(path, as_version=4).cells}
    assert set(_maxima(root, LESSON)) <= present, set(_maxima(root, LESSON)) - present
    tests = TESTS["softmax"] + TESTS["contextualize"]
    scores = _points(hostile["scores"], student, tests)
    assert all(v is not None and v[0] is not None and not v[1] for v in scores.values()), scores
    crashed = json.loads((path.parent / "grading-notes.json").read_text())["crashed_cells"]
    if HOOK_ATTACKS[attack]:
        assert [c["grade_id"] for c in crashed][:1] == [HOOK_ATTACKS[attack]], crashed
        assert scores["softmax_matches_reference"] == (0.0, False)
    else:
        assert crashed and crashed[0]["starts_with"] == catalogue.SCRATCH_CELL, crashed
        assert scores["softmax_matches_reference"] == (3.0, False)
    assert scores["contextualize_matches_reference"] == (3.0, False)


@reading("text_any_json_holds")
@pytest.mark.parametrize("way", WAYS)
def test_any_text_a_notebook_holds_is_graded(hostile, way):
    """Lone surrogates and control characters, in code, prose, written answers, metadata and
    outputs: the submission is graded (not failed); softmax, whose only odd text is in a comment,
    keeps its points, contextualize, whose code holds a NUL, scores 0; every surrogate kept became
    U+FFFD."""
    root = hostile["root"]
    scores = _points(hostile["scores"], "attack_text_any_json_holds", TESTS["softmax"] + TESTS["contextualize"])
    assert scores == {"softmax_matches_reference": (3.0, False), "contextualize_matches_reference": (0.0, False)}
    nb = json.loads(_autograded(root, "text_any_json_holds").read_text())
    strings = _strings(nb)
    assert not [t for t in strings if re.search("[\ud800-\udfff]", t)]
    assert any("\ufffd" in t for t in strings)
    outputs = json.dumps([c.get("outputs", []) for c in nb["cells"]], ensure_ascii=False)
    assert "printed \ufffd" in outputs and "shown \ufffd" in outputs, outputs[-2000:]


def _strings(value):
    """Every string of a JSON value, keys included."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            found += list(item)
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return found


@reading("stand_in_asked_for_huge_answers")
@pytest.mark.parametrize("way", WAYS)
def test_a_stand_in_asked_for_more_than_its_test_needs_is_refused_by_name(hostile, way):
    """generate asks the lent positional_encoding for 4096 × 4096 tables again and again: each
    call is refused by the test's own bounds, the verdict names the call (not a grader limit), and
    the correct learner of the lesson keeps full marks (above)."""
    root = hostile["root"]
    notes = json.loads((root / "autograded" / "attack_stand_in_asked_for_huge_answers" / "09_small_gpt" /
                        "grading-notes.json").read_text())
    message = notes["verdicts"]["generate_matches_reference"]["message"]
    assert "your generate called positional_encoding with `T` larger than" in message, message
    assert _points(hostile["scores"], "attack_stand_in_asked_for_huge_answers", ["generate_matches_reference"],
                   "09_small_gpt") == {"generate_matches_reference": (0.0, False)}


@reading("shadow_package_folder")
@pytest.mark.parametrize("way", WAYS)
def test_a_folder_named_like_an_installed_package_is_flagged_and_never_imported(hostile, way):
    """The submission that hands in attention_course/ and numpy/ beside its notebook: neither is
    imported (nothing it planted printed; its gradient-ascent adam_step scores 0 on both tests,
    in test_the_attacker_gains_nothing), and grading-notes.json names each folder for the instructor."""
    notes = json.loads((_autograded(hostile["root"], "shadow_package_folder").parent / "grading-notes.json").read_text())
    flagged = " ".join(flag["why"] for flag in notes["flags"])
    assert "'attention_course'" in flagged and "'numpy'" in flagged and "installed package" in flagged, notes["flags"]
