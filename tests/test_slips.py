"""Nothing is lost on an instructor's slip: a moved gradebook or a mistyped URL, two `make grade`
at once, Ctrl-C, a misspelled --student. On copies of conftest.lesson01_class (graded once for
the session), and one small class graded from scratch for Ctrl-C."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dask_cluster import wait_until
from grading_helpers import LESSON, copy_course, env_for, grade_table, notebook, run_grade, submit

pytestmark = pytest.mark.nbgrader


@pytest.fixture
def graded_copy(lesson01_class, tmp_path):
    """A copy of the shared, graded lesson-01 class."""
    root = tmp_path / "course"
    shutil.copytree(lesson01_class[0], root, symlinks=True)
    return root


@pytest.mark.full   # four make grade runs; the quick tier's slips are the two tests below
def test_a_missing_gradebook_stops_the_run_and_names_both(graded_copy, tmp_path, monkeypatch):
    """gradebook.db moved away, or a URL pointing at a gradebook that is not there (or is empty),
    while autograded/ holds results: nothing is graded or written, and the message names the
    gradebook, autograded/ and --new-gradebook; --new-gradebook starts over on purpose."""
    root = graded_copy
    before = (root / "grades.csv").read_bytes()
    (root / "gradebook.db").rename(tmp_path / "elsewhere.db")
    moved = run_grade(root, "--no-report")
    out = moved.stdout + moved.stderr
    assert moved.returncode == 1, out
    assert f"the gradebook {root / 'gradebook.db'} does not exist" in out
    assert str(root / "autograded") in out and "--new-gradebook" in out and "grading " not in moved.stdout
    assert not (root / "gradebook.db").exists() and (root / "grades.csv").read_bytes() == before

    typo = run_grade(root, "--no-report", ATTENTION_GRADEBOOK_URL=f"sqlite:///{root / 'gradebok.db'}")
    assert typo.returncode == 1 and "gradebok.db does not exist" in typo.stdout + typo.stderr
    assert not (root / "gradebok.db").exists()

    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))  # alembic
    Gradebook(f"sqlite:///{tmp_path / 'empty.db'}", "attention").close()
    empty = run_grade(root, "--no-report", "--db-url", f"sqlite:///{tmp_path / 'empty.db'}")
    assert empty.returncode == 1 and "holds no submission" in empty.stdout + empty.stderr

    fresh = run_grade(root, "--no-report", "--no-feedback", "--new-gradebook", "--student", "alice")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert "grading 1 submission(s)" in fresh.stdout
    assert {k[0] for k in grade_table(f"sqlite:///{root / 'gradebook.db'}")} == {"alice"}


def test_a_misspelled_student_is_refused_with_the_nearest_names(graded_copy):
    """--student alcie grades nobody, exits 2 and suggests alice."""
    done = run_grade(graded_copy, "--student", "alcie", "--no-report")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "unknown student(s): alcie (did you mean alice?)" in out and "grading " not in done.stdout


def _started(command_root, *args, log):
    return subprocess.Popen([sys.executable, "-m", "attention_grading.cli.grade", "--root", str(command_root), *args],
                            cwd=command_root, env=env_for(command_root), stdout=log, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def test_a_second_run_refuses_or_waits_and_a_crashed_one_leaves_no_lock(graded_copy, tmp_path):
    """While one run holds the course, another stops at once (exit 75, naming the holder) and
    changes nothing; with --wait it starts when the first is done. A run killed outright leaves
    no lock behind (the kernel drops an flock with its process)."""
    from attention_grading.run.lock import course_lock

    root = graded_copy
    before = (root / "grades.csv").stat().st_mtime_ns
    with course_lock(root):
        refused = run_grade(root, "--student", "alice", "--no-report")
        assert refused.returncode == 75, refused.stdout + refused.stderr
        assert f"another make grade is running on this course (pid {os.getpid()}" in refused.stderr
        assert (root / "grades.csv").stat().st_mtime_ns == before
        with open(tmp_path / "waiting.log", "w") as log:
            waiting = _started(root, "--student", "alice", "--no-report", "--wait", log=log)
        wait_until(lambda: "waiting for the make grade" in (tmp_path / "waiting.log").read_text(), 120,
                  "the second run to wait")
        assert waiting.poll() is None
    assert waiting.wait(600) == 0, (tmp_path / "waiting.log").read_text()
    assert (root / "grades.csv").stat().st_mtime_ns > before

    holder = subprocess.Popen([sys.executable, "-c", "import os, signal, sys, time\n"
                               "from attention_grading.run.lock import course_lock\n"
                               f"with course_lock({str(root)!r}):\n"
                               "    print('held', flush=True); time.sleep(600)"],
                              env=env_for(root), stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(30)
    after_crash = run_grade(root, "--student", "alice", "--no-report")
    assert after_crash.returncode == 0, after_crash.stdout + after_crash.stderr


def _group(pgid):
    """[(pid, command line)] of the processes in process group ``pgid``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.getpgid(int(proc.name)) == pgid:
                found.append((proc.name, (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:200]))
        except (OSError, ProcessLookupError):
            continue
    return found


@pytest.mark.full
def test_ctrl_c_stops_cleanly_with_what_was_saved(tmp_path):
    """Ctrl-C (SIGINT to the terminal's process group) after the first submission is saved: exit
    130, no traceback, the saved ones in the gradebook and grades.csv, no grading process left;
    the next run grades exactly the others."""
    root = copy_course(tmp_path / "course")
    students = ["amy", "ben", "cat", "dan", "eve"]
    for student in students:
        submit(root, student, notebook("correct"))
    with open(tmp_path / "first.log", "w") as log:
        first = _started(root, "--workers", "1", "--no-report", log=log)
    results = lambda: list((root / "autograded").glob(f"*/{LESSON}/grading-result.json"))  # noqa: E731
    wait_until(lambda: results() or first.poll() is not None, 600, "a first submission to be saved")
    os.killpg(first.pid, signal.SIGINT)
    assert first.wait(120) == 130, (tmp_path / "first.log").read_text()
    out = (tmp_path / "first.log").read_text()
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    saved = {p.parts[-3] for p in results()}
    assert 1 <= len(saved) < len(students), out
    assert f"STOPPED by Ctrl-C: the {len(saved)} submission(s) graded before it are saved, " \
           f"{len(students) - len(saved)} were not graded" in out
    table = grade_table(f"sqlite:///{root / 'gradebook.db'}")
    assert {k[0] for k, v in table.items() if v[0] is not None} == saved
    with open(root / "grades.csv") as fh:
        assert sum(1 for line in fh if ",graded," in line or ",needs manual grading," in line) == len(saved)
    wait_until(lambda: not _group(first.pid), 30, "the run's processes to end")
    again = run_grade(root, "--workers", "2", "--no-report")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"grading {len(students) - len(saved)} submission(s)" in again.stdout
    assert f"{len(saved)} submission(s) already graded and unchanged: skipped" in again.stdout
    assert Path(root / "feedback").is_dir()
