"""Expensive session fixtures started in background threads as soon as the tests are collected.

Grading every lesson takes minutes of CPU on two cores, much of it while other tests would
only be waiting (on a browser, a server, a timed-out cell). ``conftest.py`` starts such runs
when collection ends and moves the tests that read them to the end of the session; the
fixture then only waits for the result. A run that was not started (its tests were selected
some other way) runs in the foreground when first asked for.
"""
import shutil
import tempfile
import threading
from pathlib import Path

_jobs = {}


class Job:
    """``function(folder, *args)`` in a daemon thread, in a scratch folder removed at the end."""

    def __init__(self, name, function, *args):
        self.folder = Path(tempfile.mkdtemp(prefix=f"attention-{name}-"))
        self._outcome = None
        self._thread = threading.Thread(target=self._run, args=(function, args),
                                        name=f"background-{name}", daemon=True)
        self._thread.start()

    def _run(self, function, args):
        try:
            self._outcome = (True, function(self.folder, *args))
        except BaseException as exc:  # re-raised in the test that asks for the result
            self._outcome = (False, exc)

    def result(self):
        self._thread.join()
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def cleanup(self):
        """Remove the scratch folder; a run still going (the session stopped early) keeps it."""
        if not self._thread.is_alive():
            shutil.rmtree(self.folder, ignore_errors=True)


def start(name, function, *args):
    if name not in _jobs:
        _jobs[name] = Job(name, function, *args)


def result(name, function, *args):
    """The background run's result (started now, in the foreground's stead, if it was not)."""
    start(name, function, *args)
    return _jobs[name].result()


def cleanup():
    while _jobs:
        _jobs.popitem()[1].cleanup()
