"""``make grade --scheduler``: a class graded on a real Dask cluster on loopback.

A ``dask scheduler`` and three ``dask worker`` processes (tests/dask_cluster.py) that have the
course environment but nothing of this repository, each with its role's certificate of the course
(made by ``make cluster-certs``'s command; mutual TLS): two can sandbox, the third pretends it
cannot (``ATTENTION_SANDBOX_PRETEND_MISSING``) and must get no job. The class: lesson 01's shared class
(conftest.lesson01_class: correct, blank, buggy, crashing, grader-killing, broken and misnamed
submissions, graded on this machine) and three learners of lesson 02 (the solution, the
release, one catalogued mistake), graded on this machine here too. During the cluster's run one
of the two able workers is killed (its whole process group) while it grades, then the other's
grading process. Then a second run,
pointed at the cluster through ``ATTENTION_DASK_SCHEDULER``, loses its scheduler half-way.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import catalogue
from conftest import ROOT, copy_course
from dask_cluster import LoopbackCluster, wait_until
from grading_helpers import env_for, grade_table, tree_hash
from notebook_tools import lean, solved, with_answer

pytestmark = [pytest.mark.nbgrader, pytest.mark.cluster]

LESSON_01 = "01_context_vectors"
MORE_LESSONS = ("02_queries_keys_values",)
STUDENTS = ("alice", "bob", "carol")


def _write_more_lessons(root):
    """alice: the solution; bob: the release; carol: the solution with one catalogued mistake."""
    for lesson in MORE_LESSONS:
        release = ROOT / "notebooks" / lesson / f"{lesson}.ipynb"
        answer = solved(release, ROOT / "solutions" / lesson / f"{lesson}.ipynb")
        function, variants = next(iter(catalogue.entries(lesson, "WRONG").items()))
        notebooks = {"alice": answer, "bob": nbformat.read(release, as_version=4),
                     "carol": with_answer(lean(answer), function, next(iter(variants.values())))}
        for student, nb in notebooks.items():
            folder = root / "submitted" / student / lesson
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / f"{lesson}.ipynb")


def _grade_in_background(root, *args, env=None):
    """``make grade`` in the background, its output in files; (process, stdout path, stderr path)."""
    out, err = root / "grade.stdout", root / "grade.stderr"
    command = [sys.executable, "-m", "attention_grading.cli.grade", "--root", str(root), *args]
    with open(out, "w") as stdout, open(err, "w") as stderr:      # the child keeps its own copies
        process = subprocess.Popen(command, cwd=root, env=env_for(root, **(env or {})), stdout=stdout,
                                   stderr=stderr)
    return process, out, err


def _worker_address(client, name):
    for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
        if info.get("name") == name:
            return address
    return None


def _busy(client, address):
    return bool(client.processing(workers=[address]).get(address))


def _parent(pid):
    """The parent of process ``pid`` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _under(pid, ancestor):
    """Is process ``pid`` a descendant of process ``ancestor``?"""
    while pid > 1 and pid != ancestor:
        pid = _parent(pid)
    return pid == ancestor


def _kernel_running(worker):
    """Is a sandboxed kernel running under ``worker`` (a ``dask worker`` command's process)? A
    process in a PID namespace of its own there is one: its grading process is mid-job."""
    ours = os.readlink("/proc/self/ns/pid")
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "ns" / "pid") != ours and _under(int(proc.name), worker.pid):
                return True
        except OSError:
            continue
    return False


def _grading_processes():
    """Pids of the grading processes Dask workers started (``pool.serve``)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"from attention_grading.run.pool import serve" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _kill_grading_processes():
    """SIGKILL every grading process a Dask worker started (``pool.serve``); how many."""
    killed = 0
    for pid in _grading_processes():
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    return killed


@pytest.fixture(scope="module")
def cluster_run(lesson01_class, tmp_path_factory):
    here_root, _, _ = lesson01_class
    base = tmp_path_factory.mktemp("dask")
    root = copy_course(base / "course", lessons=[LESSON_01, *MORE_LESSONS])
    shutil.copytree(here_root / "submitted", root / "submitted")
    _write_more_lessons(root)
    here = copy_course(base / "here", lessons=[LESSON_01, *MORE_LESSONS])
    shutil.copytree(root / "submitted", here / "submitted")
    before = tree_hash(root / "submitted")
    out = {"root": root, "here_01": here_root, "here": here}
    out["certificates"] = subprocess.run([sys.executable, "-m", "attention_grading.cli.certs", "--root", str(root)],
                                         cwd=root, env=env_for(root), capture_output=True, text=True, check=True)
    # This machine grades lesson 02 meanwhile (make grade puts the lessons in the gradebooks).
    local, local_out, _ = _grade_in_background(
        here, "--workers", "1", "--no-feedback", "--no-report",
        *(a for lesson in MORE_LESSONS for a in ("--lesson", lesson)))

    with LoopbackCluster(base / "cluster", tls=root / "instructor" / "cluster-tls") as cluster:
        for name in ("w1", "w2"):
            cluster.add_worker(name)
        cluster.add_worker("w3", ATTENTION_SANDBOX_PRETEND_MISSING="landlock")
        cluster.wait_for_workers(3)
        process, stdout, stderr = _grade_in_background(root, "--scheduler", cluster.address)
        with cluster.client() as client:
            w1 = _worker_address(client, "w1")
            wait_until(lambda: _busy(client, w1) or process.poll() is not None, 300, "w1 never got a job")
            out["w1_was_busy"] = _busy(client, w1)
            # Inside the job: a kernel is running under w1.
            wait_until(lambda: _kernel_running(cluster.workers["w1"]) or process.poll() is not None, 300,
                       "w1 never started a kernel")
            cluster.kill(cluster.workers["w1"])
            out["w1_killed_mid_job"] = process.poll() is None
            # Then w2's grading process, mid-job: w2 carries on, the job gets its second attempt.
            w2 = _worker_address(client, "w2")
            wait_until(lambda: _busy(client, w2) or process.poll() is not None, 300, "w2 never got a job")
            wait_until(lambda: _kernel_running(cluster.workers["w2"]) or process.poll() is not None, 300,
                       "w2 never started a kernel")
            out["grading_processes_killed"] = _kill_grading_processes() if process.poll() is None else 0
            process.wait(600)
            local.wait(600)
            out["local"] = local_out.read_text()
            w3 = _worker_address(client, "w3")
            out["w3_executed"] = client.run(lambda dask_worker: dask_worker.state.executed_count,
                                            workers=[w3])[w3]
        out["run"] = (process.returncode, stdout.read_text(), stderr.read_text())
        out["w3_log"] = cluster.log("w3")
        out["unchanged"] = before == tree_hash(root / "submitted")
        out["tables"] = {lesson: grade_table(f"sqlite:///{root / 'gradebook.db'}", lesson)
                         for lesson in (LESSON_01, *MORE_LESSONS)}

        # Again, nothing changed: everything is skipped.
        process, stdout, _ = _grade_in_background(root, "--scheduler", cluster.address, "--no-report")
        process.wait(300)
        out["again"] = (process.returncode, stdout.read_text())

        # A run through the environment variable; the scheduler dies after its first result.
        process, stdout, stderr = _grade_in_background(
            root, "--force", "--lesson", LESSON_01, "--no-feedback", "--no-report",
            env={"ATTENTION_DASK_SCHEDULER": cluster.address})
        wait_until(lambda: re.search(r"\|\s*[1-9]\d*/\d+ ", stderr.read_text()) or process.poll() is not None,
                   300, "the second run graded nothing")
        cluster.kill(cluster.scheduler)
        process.wait(120)          # it stops by itself within seconds; the limit only turns a hang into a failure
        out["lost"] = (process.returncode, stdout.read_text(), stderr.read_text())
        out["tables_after_loss"] = grade_table(f"sqlite:///{root / 'gradebook.db'}", LESSON_01)
    return out


def test_the_cluster_gives_exactly_the_scores_of_this_machine(cluster_run):
    """Every check of every learner in lessons 01 and 02 scores as graded here; the same
    submissions are turned down for the same reasons; submitted/ is untouched."""
    code, stdout, stderr = cluster_run["run"]
    assert "on the Dask cluster at tls://127.0.0.1:" in stdout, stdout
    tables = cluster_run["tables"]
    here_01 = grade_table(f"sqlite:///{cluster_run['here_01'] / 'gradebook.db'}", LESSON_01)
    assert tables[LESSON_01] and tables[LESSON_01] == here_01
    for lesson in MORE_LESSONS:
        here = grade_table(f"sqlite:///{cluster_run['here'] / 'gradebook.db'}", lesson)
        assert {k[0] for k in here} == set(STUDENTS), cluster_run["local"][-3000:]
        assert tables[lesson] == here, lesson
    failed = sorted(re.findall(r"^  (\w+) / (\w+): ", stdout.split("could NOT be graded:")[-1], re.M))
    assert failed == [("dave", LESSON_01), ("erin", LESSON_01), ("frank", LESSON_01)], stdout[-3000:]
    assert code == 1, "broken submissions make the exit status 1, as on this machine"
    assert cluster_run["unchanged"]


def test_grading_on_the_cluster_writes_grades_feedback_and_shows_progress(cluster_run):
    """grades.csv has one row per learner and lesson, feedback and the report exist, the bar
    showed an ETA, the table was printed; a second run skips everything graded."""
    root = cluster_run["root"]
    stdout = cluster_run["run"][1]
    assert re.search(r"^student\s+01_context_vectors\s+02_queries_keys_values\s+total$", stdout, re.M), stdout
    assert (root / "grading-report" / "summary.md").is_file()
    _, again = cluster_run["again"]
    assert "8 submission(s) already graded and unchanged: skipped" in again, again[-2000:]
    assert "graded 0, skipped 8, could not grade 3" in again, again[-2000:]
    assert "feedback pages written 0 (8 already up to date)" in again, again[-2000:]
    import csv

    with open(root / "grades.csv", newline="") as fh:
        keys = [(r["student"], r["lesson"]) for r in csv.DictReader(fh)]
    assert len(keys) == len(set(keys)), "a submission appears twice in grades.csv"
    assert (root / "feedback" / "alice" / MORE_LESSONS[0] / f"{MORE_LESSONS[0]}.html").is_file()
    assert "feedback pages written 8 (0 already up to date)" in stdout     # rendered by the workers' jobs
    assert re.search(r"autograde:.*\d+/\d+ \[\d\d:\d\d<\d\d:\d\d", cluster_run["run"][2])


def test_a_worker_killed_mid_job_loses_nothing(cluster_run):
    """w1 was killed while grading; its job ran elsewhere, nobody was graded twice or lost."""
    assert cluster_run["w1_was_busy"] and cluster_run["w1_killed_mid_job"]
    stdout = cluster_run["run"][1]
    assert re.search(r"graded 8, skipped 0, could not grade 3", stdout), stdout[-2000:]


def test_a_grading_process_killed_mid_job_costs_a_second_attempt_not_a_grade(cluster_run):
    """w2's grading process was killed while it graded: the job was graded on its second
    attempt, the first attempt's failure is named, and w2 graded on."""
    assert cluster_run["grading_processes_killed"] >= 1
    stdout = cluster_run["run"][1]
    assert "graded on a second attempt" in stdout, stdout[-3000:]
    assert re.search(r"first attempt: the grading process on worker tls://\S+ died", stdout), stdout[-3000:]


def test_a_worker_that_cannot_sandbox_gets_no_job_and_says_why(cluster_run):
    """w3 is named with its reason, logs that it refuses, and ran nothing."""
    stdout = cluster_run["run"][1]
    assert re.search(r"\[cluster\] worker tls://\S+ gets no jobs: Landlock", stdout), stdout[:2000]
    assert "refuses grading jobs" in cluster_run["w3_log"]
    assert cluster_run["w3_executed"] == 0


def test_the_scheduler_going_away_stops_with_a_clear_message_and_keeps_what_was_graded(cluster_run):
    """Exit status 1, the reason and what to do; the graded part is saved."""
    code, stdout, stderr = cluster_run["lost"]
    assert code == 1, stdout[-2000:] + stderr[-2000:]
    assert "STOPPED: the Dask scheduler at tls://127.0.0.1:" in stdout and "went away" in stdout, stdout[-2000:]
    assert "run make grade again" in stdout
    graded = int(re.search(r"graded (\d+),", stdout).group(1))
    assert 1 <= graded < 8, stdout[-2000:]
    assert cluster_run["tables_after_loss"] == cluster_run["tables"][LESSON_01]
