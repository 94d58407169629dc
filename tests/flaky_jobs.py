"""Jobs for the worker pool's tests (``tests/test_grading_pool.py``) that succeed, fail, kill their
worker, hang or stop. The standard library only: a worker imports this module when its first job
arrives, inside that job's time, so it must take milliseconds even on a busy machine."""
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class FlakyOutcome:
    ok: bool
    message: str = ""
    retry: bool = True


@dataclass
class FlakyJob:
    """A job for ``attention_grading.run.pool``: 'ok', 'fails' (every time), 'fails_once' (the first
    time only), 'kills_worker' (its process dies), 'hangs' (sleeps) or 'stops' (SIGSTOP to itself).
    Each run appends one byte to a marker file, so a worker killed mid-job leaves no torn count."""
    marker_folder: str
    name: str
    behaviour: str

    @property
    def key(self):
        return self.name

    def failure(self, message, retry=True):
        return FlakyOutcome(False, message, retry)


def run_flaky(job):
    marker = Path(job.marker_folder) / job.name
    with open(marker, "a") as fh:
        fh.write("x")
    runs = marker.stat().st_size
    if job.behaviour == "kills_worker":
        os._exit(1)
    if job.behaviour == "hangs":
        time.sleep(3600)
    if job.behaviour == "stops":
        os.kill(os.getpid(), signal.SIGSTOP)
    if job.behaviour == "fails" or (job.behaviour == "fails_once" and runs == 1):
        return FlakyOutcome(False, f"{job.name} failed on run {runs}")
    return FlakyOutcome(True, f"run {runs}")
