"""The gradebook on a real PostgreSQL server: parallel grading gives sequential SQLite's scores.

Starts Debian's PostgreSQL as the ``postgres`` user (it refuses to run as root) with its data
and socket in a temporary folder, listening on that socket only (no TCP port, which another
process could hold or take); stops it afterwards.
"""
import glob
import os
import shutil
import subprocess
import tempfile
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
    port = 5432          # names the socket file (.s.PGSQL.5432) in our own folder: no TCP port
    done = _as_postgres(bindir / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                        timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    options = f"-c listen_addresses='' -p {port} -k {sockets} -c fsync=off"
    done = _as_postgres(bindir / "pg_ctl", "-D", data, "-o", options, "-l", folder / "server.log",
                        "-w", "-t", "60", "start", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr + (folder / "server.log").read_text()
    try:
        done = _as_postgres(bindir / "createdb", "-h", sockets, "-p", port, "-U", "postgres",
                            "gradebook", timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        yield f"postgresql+psycopg2://postgres@/gradebook?host={sockets}&port={port}"
    finally:
        _as_postgres(bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop", timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


STUDENTS = {"alice": "correct", "bob": "blank", "carol": "buggy"}


def test_grading_on_postgres_gives_the_sqlite_scores(postgres_url, tmp_path, lesson01_class):
    """The same submissions, graded in parallel into PostgreSQL, get exactly the scores (and the
    grades.csv rows) they got in SQLite (conftest.lesson01_class)."""
    pg_course = copy_course(tmp_path / "pg")
    for student, kind in STUDENTS.items():
        submit(pg_course, student, notebook(kind))
    done = run_grade(pg_course, "--workers", "2", "--no-report", ATTENTION_GRADEBOOK_URL=postgres_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (pg_course / "gradebook.db").exists(), "graded into SQLite, not PostgreSQL"
    assert (pg_course / "feedback" / "carol" / LESSON / f"{LESSON}.html").is_file()

    sqlite_root = lesson01_class[0]
    on_postgres = grade_table(postgres_url)
    on_sqlite = {k: v for k, v in grade_table(f"sqlite:///{sqlite_root / 'gradebook.db'}").items() if k[0] in STUDENTS}
    assert len(on_postgres) == len(STUDENTS) * lesson_points(pg_course)[2] and on_postgres == on_sqlite

    def rows_of(root):
        import csv

        with open(root / "grades.csv", newline="") as fh:
            return [{k: r[k] for k in ("student", "lesson", "raw_score", "score", "max_score", "status")}
                    for r in csv.DictReader(fh) if r["student"] in STUDENTS]
    assert rows_of(pg_course) and rows_of(pg_course) == rows_of(sqlite_root)


def test_the_gradebook_indexes_on_postgres(postgres_url):
    """store.indexes on PostgreSQL: an unindexed gradebook gets every index (CREATE INDEX IF NOT
    EXISTS is PostgreSQL's too), a second time nothing is done, and a grade stays as it was."""
    from nbgrader.api import Gradebook
    from sqlalchemy import text

    from attention_grading.course import environment_tools_on_path
    from attention_grading.store import indexes

    environment_tools_on_path()          # a new gradebook is stamped by nbgrader's `alembic`
    with Gradebook(postgres_url, "attention") as gb:
        for table, column in indexes.INDEXED:
            gb.db.execute(text(f"DROP INDEX IF EXISTS {indexes.index_name(table, column)}"))
        gb.add_assignment("indexed")
        gb.add_student("ida")
        gb.add_submission("indexed", "ida")
        gb.db.commit()
        assert indexes.ensure(gb) == list(indexes.INDEXED)
        names = {n for (n,) in gb.db.execute(text("SELECT indexname FROM pg_indexes"))}
        assert {indexes.index_name(*pair) for pair in indexes.INDEXED} <= names
        assert indexes.ensure(gb) == [] and indexes.missing(gb.engine) == []
        assert gb.find_submission("indexed", "ida").student.id == "ida"
