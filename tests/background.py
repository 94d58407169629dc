"""Expensive session fixtures started in background threads as soon as the tests are collected.

Grading every lesson takes minutes of CPU on two cores, much of it while other tests would
only be waiting (on a browser, a server, a timed-out cell). ``conftest.py`` starts such runs
when collection ends and moves the tests that read them to the end of the session; the
fixture then only waits for the result. A run may wait for another (``after``), so that two
heavy runs do not fight over the same two cores. A run that was not started (its tests were
selected some other way) runs in the foreground when first asked for.

The runs live on the pytest session (``session.stash``), not in module globals.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

JOBS = pytest.StashKey[dict]()
#: ``{name: function}`` of the fixtures that wait for a background run (``@waits``, ``@fixture``):
#: a declaration made when the test modules are imported, like a marker's, not state of a run.
_WAITING_FIXTURES = {}
#: ``{fixture name: (function, after, the fixture's function)}`` of the fixtures declared with
#: ``@fixture``: declarations too.
_DECLARED = {}


def waits(fixture_function):
    """Declare a fixture as waiting for a background run (put it under ``@pytest.fixture``): the
    tests that use it, directly or through other fixtures, are moved to the end of the session, so
    that the foreground does not stand idle while the run finishes."""
    _WAITING_FIXTURES[fixture_function.__name__] = fixture_function
    return fixture_function


def fixture(after=None):
    """``@background.fixture(after=...)`` above ``def name(folder, session)``: a session fixture
    ``name`` whose value is what the function returns, computed in a background run of that name
    that starts when the tests are collected (``start_declared``), if a selected test uses it,
    once the run ``after`` is done. Its tests go last, like those of every fixture that ``waits``.
    For fixtures that cost minutes of subprocesses (``make grade``, pip, a child Python): the
    foreground goes on with other tests meanwhile. The function runs in a thread beside them, so it
    must do its work in subprocesses: it must not change the process (its directory,
    ``sys.stdout``, the environment), and library code run in this process (nbclient, nbgrader's
    gradebook, a Dask client) would meet the warning filters of whatever test runs meanwhile,
    which are process-wide: a ``filterwarnings("error")`` test turned a gradebook warning into an
    error in the term class's run (b7f7ff0)."""
    def declare(function):
        name = function.__name__
        if name in _DECLARED:
            raise ValueError(f"two background fixtures are named {name!r}: a run is known by its name")

        def waiting_fixture(request):
            return result(request.session, name, function, request.session, after=after)

        waiting_fixture.__doc__ = function.__doc__
        _DECLARED[name] = (function, after, waiting_fixture)
        _WAITING_FIXTURES[name] = waiting_fixture
        return pytest.fixture(scope="session", name=name)(waiting_fixture)
    return declare


def _resolves_to(item, name, fixture_function):
    """Does ``item``'s fixture ``name`` resolve to ``fixture_function`` (not to another module's
    fixture of the same name)?"""
    definitions = item._fixtureinfo.name2fixturedefs.get(name) if hasattr(item, "_fixtureinfo") else None
    return bool(definitions) and definitions[-1].func is fixture_function


def start_declared(session):
    """Start the declared runs (``@fixture``) that selected tests use, ``LANES`` at a time, in the
    order of the first test that reads each."""
    first_reader = {}
    for index, item in enumerate(session.items):
        for name, (_, _, fixture_function) in _DECLARED.items():
            if name not in first_reader and _resolves_to(item, name, fixture_function):
                first_reader[name] = index
    lanes = Lanes(LANES)
    for name in sorted(first_reader, key=first_reader.get):
        function, after, _ = _DECLARED[name]
        start(session, name, function, session, after=after, lanes=lanes)


def waiting(item):
    """Does this test use, directly or through other fixtures, one that waits for a background run
    (and not merely another fixture of the same name)?"""
    return any(_resolves_to(item, name, function) for name, function in _WAITING_FIXTURES.items())


class Lanes:
    """At most ``width`` of the declared runs (``@fixture``) at once, in the order they became ready
    to start (their ``after`` done): the tests read them in about that order. All at once, they
    would leave the one-test-at-a-time foreground a sliver of the two cores."""

    def __init__(self, width):
        self._width, self._running, self._queue = width, 0, []
        self._changed = threading.Condition()

    def enter(self, name):
        with self._changed:
            self._queue.append(name)
            self._changed.wait_for(lambda: self._running < self._width and self._queue[0] == name)
            self._queue.pop(0)
            self._running += 1
            self._changed.notify_all()

    def leave(self):
        with self._changed:
            self._running -= 1
            self._changed.notify_all()


#: How many declared runs go at once, beside the catalogue's ``make grade`` and validation.
LANES = 2


class Job:
    """``function(folder, *args)`` in a daemon thread, in a scratch folder removed at the end;
    after the job ``after``, and in one of ``lanes`` (``Lanes``) when given."""

    def __init__(self, name, function, args, after=None, lanes=None):
        self.name, self.folder = name, Path(tempfile.mkdtemp(prefix=f"attention-{name}-"))
        self._outcome = None
        self._after, self._lanes = after, lanes
        self.created, self.started, self.finished = time.monotonic(), None, None
        self._thread = threading.Thread(target=self._run, args=(function, args),
                                        name=f"background-{name}", daemon=True)
        self._thread.start()

    def _run(self, function, args):
        if self._after is not None:
            self._after.wait()
        if self._lanes is not None:
            self._lanes.enter(self.name)
        self.started = time.monotonic()
        try:
            self._outcome = (True, function(self.folder, *args))
        except BaseException as exc:  # re-raised in the test that asks for the result
            self._outcome = (False, exc)
        finally:
            if self._lanes is not None:
                self._lanes.leave()
        self.finished = time.monotonic()

    def wait(self):
        self._thread.join()

    def result(self):
        self.wait()
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def breakdown(self):
        """The lines a finished run's result offers about its own time (``"_breakdown"``)."""
        ok, value = self._outcome or (False, None)
        return list(value.get("_breakdown", [])) if ok and isinstance(value, dict) else []

    def cleanup(self):
        """Remove the scratch folder; a run still going (the session stopped early) keeps it."""
        if not self._thread.is_alive():
            shutil.rmtree(self.folder, ignore_errors=True)


def _jobs(session):
    if JOBS not in session.stash:
        session.stash[JOBS] = {}
    return session.stash[JOBS]


def start(session, name, function, *args, after=None, lanes=None):
    """Start ``name`` (after the run named ``after``, if that one was started; in ``lanes``)."""
    jobs = _jobs(session)
    if name not in jobs:
        jobs[name] = Job(name, function, args, after=jobs.get(after), lanes=lanes)


def result(session, name, function, *args, after=None):
    """The background run's result (started now, in the foreground's stead, if it was not)."""
    start(session, name, function, *args, after=after)
    return _jobs(session)[name].result()


def timings(session):
    """One line per run: when it started and how long it ran (where a slow session's time went)."""
    lines = []
    for job in _jobs(session).values():
        if job.started is None:
            lines.append(f"{job.name}: not started")
            continue
        ran = f"ran {job.finished - job.started:.0f} s" if job.finished else "still running"
        lines.append(f"{job.name}: started {job.started - job.created:.0f} s after collection, {ran}")
        lines += job.breakdown()
    return lines


def cleanup(session):
    jobs = _jobs(session)
    while jobs:
        jobs.popitem()[1].cleanup()


def in_a_child(folder, module, function, *args):
    """``module.function(*args)`` in a fresh Python with tests/ on its import path; arguments and
    result go through JSON files in ``folder``. For a background fixture whose work runs Python code
    of its own: in a thread of this process it would meet the tests' process-wide state (output
    redirected, environment, warning filters)."""
    arguments, result = os.path.join(folder, f"{function}.in.json"), os.path.join(folder, f"{function}.out.json")
    with open(arguments, "w") as fh:
        json.dump(args, fh)
    code = ("import importlib, json, sys; sys.path.insert(0, sys.argv[1]); "
            "function = getattr(importlib.import_module(sys.argv[2]), sys.argv[3]); "
            "json.dump(function(*json.load(open(sys.argv[4]))), open(sys.argv[5], 'w'))")
    done = subprocess.run([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)), module, function,
                           arguments, result], capture_output=True, text=True)
    assert done.returncode == 0, f"{module}.{function} failed in a child Python:\n{done.stderr[-5000:]}"
    with open(result) as fh:
        return json.load(fh)
