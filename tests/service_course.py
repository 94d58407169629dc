"""A course served by the grading service, on an exchange in a temporary folder, and learners who
fetch, submit and fetch feedback through it with real nbgrader commands (the test's own account:
the course's collect keeps the name on a submission written by the instructor's account, as for
root here; the private-submission rules between real accounts are tests/test_exchange.py's).

Used by tests/test_grading_service.py and benchmarks/service_latency.py.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from conftest import ROOT, copy_course, course_env, nbgrader
from notebook_tools import solved


def served_course(base, lessons, settings=""):
    """(course, exchange) under ``base``: a copy of ``lessons`` whose configuration names the
    exchange (and adds ``settings``, lines of nbgrader_config.py), released to it."""
    base = Path(base)
    exchange = base / "exchange"
    exchange.mkdir(parents=True)
    exchange.chmod(0o777)
    course = copy_course(base / "course", lessons=list(lessons))
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(f'\nc.Exchange.root = "{exchange}"\n{settings}\n')
    for lesson in lessons:
        nbgrader(course, "generate_assignment", lesson, "--force")
        nbgrader(course, "release_assignment", lesson, "--force")
    return course, exchange


class Learner:
    """A learner's own folder (their assignments and nbgrader's cache of their submissions)."""

    def __init__(self, base, name, exchange):
        self.name = name
        self.home = Path(base) / "learners" / name
        self.home.mkdir(parents=True)
        (self.home / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            'c.CourseDirectory.course_id = "attention"\n'
            f'c.CourseDirectory.student_id = "{name}"\n'
            f'c.Exchange.root = "{exchange}"\n'
            f'c.Exchange.cache = "{self.home / ".cache"}"\n'
            f'c.Exchange.assignment_dir = "{self.home}"\n'
            'c.ExchangeFactory.submit = "attention_course.exchange.PrivateSubmit"\n')

    def nbgrader(self, *args, check=True):
        env = course_env(self.home)
        env.pop("PYTHONPATH", None)
        done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=self.home, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        if check and done.returncode != 0:
            raise AssertionError(f"nbgrader {' '.join(args)} as {self.name} failed:\n{done.stdout}")
        return done

    def fetch(self, lesson):
        self.nbgrader("fetch_assignment", lesson)
        return self.home / lesson / f"{lesson}.ipynb"

    def submit(self, lesson, kind="correct"):
        """Hand in ``lesson``: ``correct`` (the solution's answers), ``blank`` (the release),
        ``broken`` (not a notebook at all) or ``hostile`` (a wrong answer that patches the checks)."""
        notebook = self.home / lesson / f"{lesson}.ipynb"
        if not notebook.exists():
            self.fetch(lesson)
        if kind == "correct":
            notebook.write_text(nbformat.writes(solved(notebook, ROOT / "solutions" / lesson / f"{lesson}.ipynb")))
        elif kind == "blank":
            notebook.write_text((ROOT / "notebooks" / lesson / f"{lesson}.ipynb").read_text())
        elif kind == "broken":
            notebook.write_text('{"cells": [ this is not json')
        elif kind == "hostile":          # every trick to make the checks pass (tests/hostile.py)
            import hostile

            release = nbformat.read(ROOT / "notebooks" / lesson / f"{lesson}.ipynb", as_version=4)
            notebook.write_text(nbformat.writes(hostile.patched_helpers(release, hostile.graded_functions(release)[0])))
        self.nbgrader("submit", lesson)

    def fetch_feedback(self, lesson):
        """{submission time: page text} of every feedback page fetched for ``lesson``."""
        self.nbgrader("fetch_feedback", lesson)
        folder = self.home / lesson / "feedback"
        return {p.parent.name: p.read_text() for p in folder.glob(f"*/{lesson}.html")} if folder.is_dir() else {}


def start_service(course, *args, env=None):
    """``python -m attention_grading.cli.serve`` on ``course``, in its own process group (``env``:
    variables added to the course's environment)."""
    log = open(Path(course) / f"service-{time.monotonic_ns()}.out", "w")
    process = subprocess.Popen([sys.executable, "-m", "attention_grading.cli.serve", "--root", str(course), *args],
                               cwd=course, env={**course_env(course), **(env or {})}, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    process.log_path = Path(log.name)        # what it printed, shown when it stops too early
    return process


def stop_service(process, how=signal.SIGTERM):
    if process.poll() is None:
        os.killpg(process.pid, how)
    return process.wait(timeout=120)


def status(course):
    try:
        return json.loads((Path(course) / "grading-report" / "service-status.json").read_text())
    except (OSError, ValueError):
        return {}


def journal(course, student, lesson):
    path = Path(course) / "history" / student / lesson / "service.json"
    return json.loads(path.read_text())["arrivals"] if path.exists() else []


def attempts(course, student, lesson):
    path = Path(course) / "history" / student / lesson / "attempts.json"
    return json.loads(path.read_text())["attempts"] if path.exists() else []


def wait_until(condition, what, process=None, timeout=900):
    """Poll ``condition`` until it holds (a generous bound against a hang, never a timing
    assertion); fails early when ``process`` ended."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process is not None and process.poll() is not None and not condition():
            printed = getattr(process, "log_path", None)
            tail = printed.read_text()[-3000:] if printed is not None and printed.exists() else ""
            raise AssertionError(f"the service stopped (status {process.returncode}) before {what}:\n{tail}")
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.2)
