"""The grading service (``make serve-grading --scheduler``) grading on a real Dask cluster, and
its live table while a submission is being graded.

A served course of lesson 01 on an exchange in a temporary folder (tests/service_course.py), the
course's cluster certificates (``make cluster-certs``'s command), and a ``dask scheduler`` with one
``dask worker`` of one thread, each with its role's certificate (mutual TLS, tests/dask_cluster.py).

The ordering that proves the live table: before the service starts, the test occupies the
worker's only thread with a task that waits on a Dask ``Event`` (the gate). alice submits the
solution and the service starts: her grading job reaches the cluster and cannot finish while the
gate is shut. Only once the status file shows her in flight does bob submit (the release); the
status file then shows bob queued with his wait while alice is still in flight, which no status
written between two runs can show (alice leaves the flight only when her answer is written). The
gate opens; the service answers both and stops (``--exit-when-idle``).

What the service reads: the class also has 60 other learners' folders in ``submitted/``, and the
service's process records every folder it lists and every file it opens under ``submitted/``
(Python's audit events, installed by a ``sitecustomize`` on its import path: the service's code
is unchanged). What it read up to the moment alice's job is held on the cluster (her scan and plan
done) is her run's, set against what it read by the time it stopped (the class-wide files,
written once the queue emptied).
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT
from dask_cluster import LoopbackCluster
from grading_helpers import LESSON, env_for, lesson_points
from service_course import Learner, journal, served_course, start_service, status, stop_service, wait_until

pytestmark = [pytest.mark.nbgrader, pytest.mark.cluster, pytest.mark.full]

SETTINGS = """
c.AttemptLimits.max_attempts = 3
c.GradingService.poll_seconds = 1
c.GradingService.settle_seconds = 0.2
"""
GATE, HELD = "service-test-gate", "service-test-held"
OTHERS = 60
READS_HOOK = r"""
import os, sys
_log = os.environ.get("ATTENTION_TEST_READS_LOG")
if _log:
    _fd = os.open(_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _note(event, args):
        if event not in ("open", "os.listdir", "os.scandir") or not args or args[0] is None:
            return
        path = os.fsdecode(args[0]) if isinstance(args[0], (str, bytes)) else ""
        if "submitted" in path:
            os.write(_fd, f"{event}\t{os.path.abspath(path)}\n".encode())

    sys.addaudithook(_note)
"""


def _hold_the_worker():
    """A task for the worker's only thread: say it runs, then wait until the gate opens."""
    def hold():
        from distributed import Event

        Event(HELD).set()
        Event(GATE).wait()
        return "released"
    return hold


def _settled(exchange):
    """alice's submission in the inbound folder is complete and settled as the service judges."""
    import datetime

    from attention_grading.run.service_watch import _complete

    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    inbound = exchange / "attention" / "inbound"
    return any(_complete(str(p), 0.2, now) for p in inbound.glob(f"alice+{LESSON}+*"))


def _job_on_cluster(client, student):
    """A grading job of ``student`` is on the cluster (given to the worker, or waiting for it)."""
    keys = [k for keys in client.processing().values() for k in keys]
    return any(str(k).startswith(f"attention-grade-{student}-") for k in keys)


def _reads(log, course):
    """[(event, path relative to the course)] the service recorded so far."""
    if not log.exists():
        return []
    rows = [line.split("\t", 1) for line in log.read_text().splitlines() if "\t" in line]
    return [(event, os.path.relpath(path, course)) for event, path in rows]


@pytest.fixture(scope="module")
def on_cluster():
    import signal

    from distributed import Event

    base = Path(tempfile.mkdtemp(prefix="attention-service-dask-"))
    processes = []
    try:
        course, exchange = served_course(base, [LESSON], SETTINGS)
        subprocess.run([sys.executable, "-m", "attention_grading.cli.certs", "--root", str(course)],
                       cwd=course, env=env_for(course), capture_output=True, text=True, check=True)
        learners = {name: Learner(base, name, exchange) for name in ("alice", "bob")}
        out = {"course": course, "learners": learners}
        release = (ROOT / "notebooks" / LESSON / f"{LESSON}.ipynb").read_bytes()
        for n in range(OTHERS):
            folder = course / "submitted" / f"other{n:02d}" / LESSON
            folder.mkdir(parents=True)
            (folder / f"{LESSON}.ipynb").write_bytes(release)
        hook = base / "reads-hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(READS_HOOK)
        reads = base / "reads.log"
        service_env = {"PYTHONPATH": os.pathsep.join([str(hook), str(course / "instructor" / "grading")]),
                       "ATTENTION_TEST_READS_LOG": str(reads)}
        with LoopbackCluster(base / "cluster", tls=course / "instructor" / "cluster-tls") as cluster:
            cluster.add_worker("w1")
            cluster.wait_for_workers(1)
            with cluster.client() as client:
                held = client.submit(_hold_the_worker(), pure=False, key="service-test-hold")
                assert Event(HELD, client=client).wait(timeout=300), "the gate task never ran"

                learners["alice"].submit(LESSON, "correct")
                # Settled before the service looks: its first look takes alice (an empty queue
                # first would write the class-wide files before her run).
                wait_until(lambda: _settled(exchange), "alice's submission settled")
                service = start_service(course, "--scheduler", cluster.address, "--workers", "1", "--exit-when-idle",
                                        env=service_env)
                processes.append(service)
                alice = f"alice/{LESSON}"
                wait_until(lambda: status(course).get("in_flight") == [alice], "alice's grading began", service)
                wait_until(lambda: _job_on_cluster(client, "alice"), "alice's job reached the cluster", service)
                out["reads_during_alice"] = _reads(reads, course)
                learners["bob"].submit(LESSON, "blank")
                wait_until(lambda: "bob" in status(course).get("waits", {}), "bob shown queued", service)
                out["while_grading"] = status(course)
                out["gate_shut_then"] = not held.done()       # alice's job could not have finished
                Event(GATE, client=client).set()
                out["exit"] = service.wait(timeout=900)
                out["printed"] = service.log_path.read_text()
                w1 = next(iter(client.scheduler_info(n_workers=-1)["workers"]))
                out["executed"] = client.run(lambda dask_worker: dask_worker.state.executed_count, workers=[w1])[w1]
        out["reads_in_all"] = _reads(reads, course)
        out["feedback"] = {name: learner.fetch_feedback(LESSON) for name, learner in learners.items()}
        out["grades_csv"] = (course / "grades.csv").read_text() if (course / "grades.csv").exists() else ""
        yield out
    finally:
        for process in processes:
            if process.poll() is None:
                stop_service(process, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


def test_the_service_grades_on_the_dask_cluster_and_the_learner_fetches_their_score(on_cluster):
    """With --scheduler (the course's certificates, mutual TLS), the service's grading ran on the
    cluster's worker; alice fetches her page with her score, bob his with none."""
    auto, total, _ = lesson_points(on_cluster["course"])
    assert on_cluster["exit"] == 0, on_cluster["printed"]
    assert "on the Dask cluster at tls://127.0.0.1:" in on_cluster["printed"]
    # The gate, then alice's and bob's grading jobs and their feedback jobs: all on the worker.
    assert on_cluster["executed"] >= 5, on_cluster["executed"]
    alice = on_cluster["feedback"]["alice"]
    assert len(alice) == 1
    page = next(iter(alice.values()))
    assert f"Attempt 1 of 3: graded, {auto:g} / {total:g} points." in page
    assert f"(Score: {auto:.1f} / {auto:.1f};" in page
    bob = next(iter(on_cluster["feedback"]["bob"].values()))
    assert f"Attempt 1 of 3: graded, 0 / {total:g} points." in bob
    assert [e["state"] for e in journal(on_cluster["course"], "bob", LESSON)] == ["graded"]


def test_a_submission_arriving_while_one_is_graded_is_queued_and_shown_at_once(on_cluster):
    """The status written while alice's job was held on the cluster counts bob's submission,
    which arrived after her grading began, with his wait so far."""
    shown = on_cluster["while_grading"]
    assert on_cluster["gate_shut_then"]
    assert shown["state"] == "grading"
    assert shown["in_flight"] == [f"alice/{LESSON}"]
    assert shown["queue"] == 1 and set(shown["waits"]) == {"bob"} and shown["waits"]["bob"] >= 0


def test_the_class_files_are_written_once_the_queue_empties(on_cluster):
    """grades.csv (written once the queue emptied, not per submission) has both learners' rows."""
    auto, _, _ = lesson_points(on_cluster["course"])
    rows = on_cluster["grades_csv"].splitlines()
    alice = [r for r in rows if "alice" in r]
    assert len(alice) == 1 and (f"{auto:g}" in alice[0] or f"{auto:.1f}" in alice[0]), rows
    assert len([r for r in rows if "bob" in r]) == 1, rows


def test_a_submissions_run_reads_only_that_learners_folder_whatever_the_class(on_cluster):
    """Up to the moment alice's job was on the cluster, the service had listed and opened nothing
    under submitted/ but alice's own folder (not submitted/ itself, none of the 60 others); by the
    time it stopped it had read the whole class once, for the class-wide files."""
    during = on_cluster["reads_during_alice"]
    assert during, "the service's reads were not recorded"
    assert {path.split(os.sep)[:2][-1] for _, path in during} == {"alice"}, during
    assert ("os.listdir", "submitted") not in during and ("os.scandir", "submitted") not in during
    everything = on_cluster["reads_in_all"]
    assert any(event in ("os.listdir", "os.scandir") and path == "submitted" for event, path in everything)
    assert len({path.split(os.sep)[1] for _, path in everything if path.count(os.sep) >= 1}) == OTHERS + 2
