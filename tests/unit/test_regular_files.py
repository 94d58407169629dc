"""Reading a learner's folder (``attention_course.regular_files``), the course's collect
(``attention_course.exchange.OwnedCollect.do_copy``) and intake (``attention_grading.run.intake``):
regular files of the submission only; links, pipes and hard links named and never followed.

In-process, each well under a second. The hostile folder is built here (``hostile_folder``); the
same attacks by real accounts through nbgrader's exchange are in tests/test_exchange.py.
"""
import datetime
import os
import time

import pytest

from attention_course.regular_files import irregular, read_regular, recorded_time, walk

LESSON = "01_context_vectors"


def hostile_folder(base):
    """A submission folder holding its notebook and every kind of entry that is not a regular
    file of its own, pointing at an instructor file outside it: {name: why expected}."""
    secret = base / "instructor" / "reference.py"
    secret.parent.mkdir(parents=True)
    secret.write_text("SECRET = 'the reference'\n")
    elsewhere = base / "elsewhere.txt"
    elsewhere.write_text("lives outside\n")
    folder = base / "submission"
    (folder / "sub").mkdir(parents=True)
    (folder / f"{LESSON}.ipynb").write_text('{"cells": []}')
    (folder / "sub" / "notes.txt").write_text("mine")
    (folder / "reference.py").symlink_to(secret)
    (folder / "instructor").symlink_to(secret.parent, target_is_directory=True)
    (folder / "sub" / "up").symlink_to("../../instructor/reference.py")
    os.link(elsewhere, folder / "hard.txt")
    os.mkfifo(folder / "pipe")
    return folder, {"reference.py": "a symbolic link", "instructor": "a symbolic link",
                    "sub/up": "a symbolic link", "hard.txt": "a hard link", "pipe": "a named pipe"}


def test_only_the_submissions_own_regular_files_are_read(tmp_path):
    """The notebook and a file in a subfolder are read; every link, the hard link and the pipe are
    named with why and not read (the pipe does not block); the instructor file is never read."""
    folder, expected = hostile_folder(tmp_path)
    files, skipped = walk(folder)
    assert files == {f"{LESSON}.ipynb": b'{"cells": []}', "sub/notes.txt": b"mine"}
    assert {path: why.split(" (")[0] for path, why in skipped} == expected
    assert irregular(folder) == skipped
    assert not any(b"the reference" in data for data in files.values())


def test_a_folder_that_is_a_link_is_not_walked(tmp_path):
    """The submission folder itself replaced by a link to the instructor's files: refused."""
    folder, _ = hostile_folder(tmp_path)
    link = tmp_path / "linked-submission"
    link.symlink_to(tmp_path / "instructor", target_is_directory=True)
    with pytest.raises(OSError):
        walk(link)
    with pytest.raises(OSError, match="hard link"):
        read_regular(folder / "hard.txt")
    with pytest.raises(OSError):
        read_regular(folder / "reference.py")


def _wait_for_the_file_clock_to_pass(probe, moment, timeout=60):
    """Touch ``probe`` (a file outside the submission) until the change time the kernel gives it
    is after ``moment`` (naive UTC): a change made next is dated after ``moment``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe.write_text("tick")
        changed = datetime.datetime.fromtimestamp(probe.stat().st_ctime_ns / 1e9, datetime.timezone.utc)
        if changed.replace(tzinfo=None) > moment:
            return
        time.sleep(0.001)
    raise AssertionError(f"the file clock did not pass {moment} in {timeout} s")


def test_the_recorded_time_is_the_last_change_and_utime_cannot_move_it_back(tmp_path):
    """Writing a file moves the submission's time forward; setting old access and modification
    times (all a learner's process can set) does not move it back."""
    folder, _ = hostile_folder(tmp_path)
    first = recorded_time(folder)
    _wait_for_the_file_clock_to_pass(tmp_path / "clock", first)
    (folder / "sub" / "notes.txt").write_text("changed after submitting")
    old = datetime.datetime(2000, 1, 1).timestamp()
    os.utime(folder / "sub" / "notes.txt", (old, old))
    os.utime(folder, (old, old))
    later = recorded_time(folder)
    assert first < later <= datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def test_collect_copies_only_regular_files_and_writes_the_recorded_time(tmp_path):
    """OwnedCollect.do_copy: the notebook and the subfolder's file, nothing else; timestamp.txt
    is the recorded time, not the one the learner wrote."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    from attention_course.exchange import TIMESTAMP_FORMAT, OwnedCollect

    folder, _ = hostile_folder(tmp_path)
    (folder / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    coursedir = CourseDirectory(root=str(tmp_path / "course"))
    collect = OwnedCollect(coursedir=coursedir, authenticator=Authenticator())
    dest = tmp_path / "course" / "submitted" / "alice" / LESSON
    collect.do_copy(str(folder), str(dest))
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if not p.is_dir())
    assert copied == [f"{LESSON}.ipynb", "sub/notes.txt", "timestamp.txt"]
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    stamp = datetime.datetime.strptime((dest / "timestamp.txt").read_text().removesuffix(" UTC"), TIMESTAMP_FORMAT)
    assert stamp == recorded_time(folder)


def test_intake_reads_no_link_and_names_each(tmp_path):
    """scan names every left-out entry of a submission (a symlinked notebook makes the
    submission ungradable, with why); submission_files carries only regular files."""
    from attention_grading.run.intake import scan, submission_files

    root = tmp_path / "course"
    (root / "source" / LESSON).mkdir(parents=True)
    (root / "source" / LESSON / f"{LESSON}.ipynb").write_text("{}")
    folder, expected = hostile_folder(tmp_path / "alice-work")
    lesson_folder = root / "submitted" / "alice" / LESSON
    lesson_folder.parent.mkdir(parents=True)
    os.rename(folder, lesson_folder)
    (lesson_folder / f"{LESSON}.ipynb").write_text(NOTEBOOK)
    bob = root / "submitted" / "bob" / LESSON
    bob.mkdir(parents=True)
    (bob / f"{LESSON}.ipynb").symlink_to(tmp_path / "alice-work" / "instructor" / "reference.py")
    (root / "submitted" / "carol").symlink_to(tmp_path / "alice-work" / "instructor", target_is_directory=True)
    units, problems = scan(root, [LESSON])
    assert [u.student for u in units] == ["alice"]
    named = {p.path.split(f"{LESSON}/", 1)[-1]: p for p in problems if p.student == "alice"}
    assert set(expected) <= set(named) and not any(named[n].fatal for n in expected)
    bob_problem = next(p for p in problems if p.student == "bob")
    assert bob_problem.fatal and "a symbolic link" in bob_problem.message
    assert any(p.student == "carol" and "not followed" in p.message for p in problems)
    assert set(submission_files(lesson_folder)) == {f"{LESSON}.ipynb", "sub/notes.txt"}


NOTEBOOK = '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def _inbound_submission(inbound, learner, stamp, files):
    """A submission folder in nbgrader's inbound layout holding ``files`` ({name: bytes or size})."""
    folder = inbound / f"{learner}+{LESSON}+{stamp} UTC"
    folder.mkdir(parents=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, int):
            with open(path, "wb") as fh:       # sparse: no block of it is written to the disk
                fh.truncate(content)
        else:
            path.write_bytes(content)
    return folder


def test_collect_refuses_an_oversized_submission_by_its_sizes_and_goes_on(tmp_path, caplog, monkeypatch):
    """A submission holding a sparse 2 GiB file, and one holding more files than allowed, are each
    named with the reason and not collected, from lstat alone (this process's peak memory does not
    grow by the file's size); the learners collected after them are."""
    import resource
    import sys

    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    from attention_course.exchange import OwnedCollect

    inbound = tmp_path / "exchange" / "attention" / "inbound"
    notebook = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    _inbound_submission(inbound, "alice", "2026-01-01 10:00:00.000000", {f"{LESSON}.ipynb": notebook,
                                                                        "big.bin": 2 << 30})
    _inbound_submission(inbound, "bob", "2026-01-01 10:00:01.000000",
                        {f"{LESSON}.ipynb": notebook, **{f"many/{i}.txt": b"x" for i in range(60)}})
    _inbound_submission(inbound, "carol", "2026-01-01 10:00:02.000000", {f"{LESSON}.ipynb": notebook})
    (tmp_path / "course").mkdir()
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}")   # nbgrader's alembic
    coursedir = CourseDirectory(root=str(tmp_path / "course"), course_id="attention", assignment_id=LESSON)
    collect = OwnedCollect(coursedir=coursedir, authenticator=Authenticator(), max_files=50)
    collect.root = str(tmp_path / "exchange")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with caplog.at_level("WARNING"):
        collect.start()
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    said = caplog.text
    assert "alice+" in said and "more than 100,000,000 (CourseDirectory.max_dir_size" in said, said
    assert "bob+" in said and "more than 50 files and folders" in said, said
    submitted = tmp_path / "course" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["carol"]
    assert (submitted / "carol" / LESSON / f"{LESSON}.ipynb").read_bytes() == notebook
    assert grew < 200 << 20, f"collect's peak memory grew by {grew / 2**20:.0f} MiB"


def test_walk_stops_at_its_total(tmp_path):
    """walk(max_total=...): a file that would take the bytes read past the total is left out, named."""
    (tmp_path / "a.txt").write_bytes(b"x" * 600)
    (tmp_path / "b.txt").write_bytes(b"y" * 600)
    files, skipped = walk(tmp_path, max_total=1000)
    assert list(files) == ["a.txt"] and skipped == [("b.txt", "past the 1,000 bytes read in all")]
