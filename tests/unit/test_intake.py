"""intake: every learner file is read within bounds; what cannot be read is that submission's own
problem, named, and never stops the others."""
import json

import pytest

from attention_grading.run.intake import IntakeLimits, check_notebook, content_hash, scan, submission_files

from . import factories

LESSON = "01_context_vectors"


def _course(tmp_path, notebooks):
    """A course with lesson 01 in source/ and ``notebooks`` {student: text} in submitted/."""
    (tmp_path / "source" / LESSON).mkdir(parents=True)
    (tmp_path / "source" / LESSON / f"{LESSON}.ipynb").write_text(factories.writes(factories.lesson()))
    for student, text in notebooks.items():
        folder = tmp_path / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        (folder / f"{LESSON}.ipynb").write_text(text)
    return tmp_path


def _nested(depth):
    nb = json.loads(factories.writes(factories.lesson()))
    nb["cells"][0]["metadata"]["deep"] = "@@"
    return json.dumps(nb).replace('"@@"', "[" * depth + "]" * depth)


@pytest.mark.parametrize("depth", [100, 100_000])
def test_a_deeply_nested_notebook_is_named_not_raised(tmp_path, depth):
    """Nested lists (200 KB of them once raised RecursionError and stopped make grade for
    everyone) make a reason, at any depth."""
    path = tmp_path / "deep.ipynb"
    path.write_text(_nested(depth))
    assert "nests lists or objects more than 64 levels deep" in check_notebook(path)


def test_a_notebook_larger_than_the_limit_is_named_without_reading_it_all(tmp_path):
    """A notebook over ``max_notebook_bytes`` is refused with the limit in the message."""
    path = tmp_path / "big.ipynb"
    path.write_text(factories.writes(factories.lesson()))
    assert check_notebook(path, IntakeLimits(max_notebook_bytes=1000)) == \
        "is larger than the 1,000 bytes the grader reads"
    assert check_notebook(path) is None


def test_scan_grades_the_others(tmp_path):
    """One learner's unreadable notebook is a problem of theirs; the others are units to grade."""
    root = _course(tmp_path, {"alice": factories.writes(factories.lesson()), "mallory": _nested(100_000)})
    units, problems = scan(root, [LESSON])
    assert [u.student for u in units] == ["alice"]
    assert [(p.student, p.fatal) for p in problems] == [("mallory", True)]
    assert "nests lists" in problems[0].message


def test_files_beside_the_notebook_are_carried_within_the_limits(tmp_path):
    """A handed-in file over ``max_file_bytes`` is left out of the job and noted; the notebook and
    small files are carried."""
    root = _course(tmp_path, {"alice": factories.writes(factories.lesson())})
    folder = root / "submitted" / "alice" / LESSON
    (folder / "data.txt").write_text("small")
    (folder / "huge.bin").write_bytes(b"x" * 5000)
    limits = IntakeLimits(max_file_bytes=1000)
    files = submission_files(folder, limits)
    assert sorted(files) == [f"{LESSON}.ipynb", "data.txt"]
    _, problems = scan(root, [LESSON], limits=limits)
    notes = {p.path.rsplit("/", 1)[-1]: p.message for p in problems}
    assert "larger than 1,000 bytes" in notes["huge.bin"] and not any(p.fatal for p in problems)
    assert content_hash(files) != content_hash(submission_files(folder))


class _Reads:
    """The folders listed and the files opened under ``root`` while ``recording`` is set (Python's
    audit events ``os.listdir``, ``os.scandir`` and ``open``: what the process really read)."""

    EVENTS = ("os.listdir", "os.scandir", "open")
    hooked = []            # the one recorder the process's hook (it cannot be removed) reports to

    def __init__(self, root):
        self.root, self.seen, self.recording = str(root), [], False
        if not _Reads.hooked:
            import sys

            sys.addaudithook(_Reads._dispatch)
        _Reads.hooked[:] = [self]

    @staticmethod
    def _dispatch(event, args):
        if event in _Reads.EVENTS and _Reads.hooked[0].recording:
            _Reads.hooked[0]._note(event, args)

    def _note(self, event, args):
        if args and args[0] is not None:
            path = str(args[0]) if not isinstance(args[0], int) else ""
            if path.startswith(self.root):
                self.seen.append(path[len(self.root):])

    def __enter__(self):
        self.seen, self.recording = [], True
        return self

    def __exit__(self, *exc):
        self.recording = False


def test_the_services_scan_reads_only_the_learners_own_folder(tmp_path):
    """The grading service's scan (``only_theirs``) of one learner in a class of 300 lists and
    opens nothing but that learner's folder of that lesson, never ``submitted/`` itself; the
    whole-class scan (make grade's) reads every learner's, as the same counter shows."""
    notebook = factories.writes(factories.lesson())
    root = _course(tmp_path, {f"learner{n:03d}": notebook for n in range(300)})
    reads = _Reads(root)
    with reads:
        units, problems = scan(root, [LESSON], ["learner123"], only_theirs=True)
    assert [u.student for u in units] == ["learner123"] and not problems
    others = [p for p in reads.seen if not p.startswith(f"/submitted/learner123/{LESSON}") and
              not p.startswith("/source")]
    assert reads.seen and others == ["/submitted/learner123"], reads.seen
    with reads:
        units, _ = scan(root, [LESSON])
    assert len(units) == 300
    assert len({p.split("/")[2] for p in reads.seen if p.startswith("/submitted/")}) == 300
