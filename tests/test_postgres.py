"""The gradebook on a real PostgreSQL server: parallel grading gives sequential SQLite's scores.

Starts Debian's PostgreSQL as the ``postgres`` user (it refuses to run as root) with its data
and socket in a temporary folder, on 127.0.0.1 and a free port; stops it afterwards.
"""
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from grading_helpers import LESSON, copy_course, grade_table, lesson_points, notebook, run_grade, submit

pytestmark = [pytest.mark.postgres, pytest.mark.nbgrader]


def _bin_dir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run("apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
                       "apt-get install -y -qq postgresql", shell=True, capture_output=True, timeout=900)
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        pytest.fail("PostgreSQL is not installed and could not be installed: run "
                    "`.ci/install-system-packages` (apt-get install postgresql) as root.")
    return Path(found[-1]).parent


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(*command, **kwargs):
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *map(str, command)], capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def postgres_url():
    bindir = _bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="attention-pg-"))
    data, sockets = folder / "data", folder / "socket"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        shutil.chown(sockets, "postgres", "postgres")
    port = _free_port()
    done = _as_postgres(bindir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                        timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    options = f"-h 127.0.0.1 -p {port} -k {sockets} -c fsync=off"
    done = _as_postgres(bindir / "pg_ctl", "-D", data, "-o", options, "-l", folder / "server.log",
                        "-w", "-t", "60", "start", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr + (folder / "server.log").read_text()
    try:
        done = _as_postgres(bindir / "createdb", "-h", "127.0.0.1", "-p", port, "-U", "postgres",
                            "gradebook", timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/gradebook"
    finally:
        _as_postgres(bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop", timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def _class(root):
    for student, kind in (("alice", "correct"), ("bob", "blank"), ("carol", "buggy"), ("dan", "correct")):
        submit(root, student, notebook(kind))


def test_parallel_grading_on_postgres_matches_sequential_sqlite(postgres_url, tmp_path):
    pg_course = copy_course(tmp_path / "pg")
    _class(pg_course)
    started = time.time()
    done = run_grade(pg_course, "--workers", "2", "--no-report", ATTENTION_GRADEBOOK_URL=postgres_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (pg_course / "gradebook.db").exists(), "graded into SQLite, not PostgreSQL"
    assert (pg_course / "feedback" / "carol" / LESSON / f"{LESSON}.html").is_file()

    sqlite_course = copy_course(tmp_path / "sqlite")
    _class(sqlite_course)
    done = run_grade(sqlite_course, "--workers", "1", "--no-report", "--no-feedback")
    assert done.returncode == 0, done.stdout + done.stderr

    on_postgres = grade_table(postgres_url)
    on_sqlite = grade_table(f"sqlite:///{sqlite_course / 'gradebook.db'}")
    assert len(on_postgres) == 4 * lesson_points(pg_course)[2] and on_postgres == on_sqlite
    assert (pg_course / "grades.csv").read_text() == (sqlite_course / "grades.csv").read_text()
    assert time.time() - started < 600
