"""What is in ``submitted/``: the submissions to grade and what is wrong with the rest.

Layout (nbgrader's): ``submitted/<student>/<lesson>/<lesson>.ipynb``. ``scan`` only reads; every
file it cannot grade is named, with its student and why, as a ``Problem``. Only regular files of a
submission are read (``attention_course.regular_files``): a symbolic or hard link, a named pipe or
a device in ``submitted/`` is never followed, read or handed to a kernel, and is named. Every
learner file is read within the ``IntakeLimits`` (size, count, and nesting depth for a notebook's
JSON): whatever a submission holds, reading it is that submission's own problem and never stops
the others.
"""
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from attention_course.regular_files import TooLarge, irregular, read_regular, walk
from traitlets import Integer
from traitlets.config import Configurable

from ..course import NBGRADER_FILES, lesson_ids
from ..kernels.output_caps import TooDeep, json_size

IGNORED_NAMES = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}


@dataclass
class Unit:
    student: str
    lesson: str
    notebook: Path


@dataclass
class Problem:
    """Something wrong with what a learner handed in. ``fatal``: that unit was not graded."""
    student: str
    lesson: str
    path: str
    message: str
    fatal: bool = True

    def __str__(self):
        kind = "NOT GRADED" if self.fatal else "note"
        where = f"{self.student} / {self.lesson}" if self.lesson else (self.student or "submitted/")
        return f"[{kind}] {where}: {self.path}: {self.message}"


class IntakeLimits(Configurable):
    """How much of a learner's files the grader reads (``make grade``'s intake)."""

    max_notebook_bytes = Integer(20 << 20, help="Largest notebook read from submitted/; a larger one is "
                                 "not graded, with the reason.").tag(config=True)
    max_nesting = Integer(64, help="Deepest nesting of lists and objects in a notebook's JSON (a lesson "
                          "notebook needs about 8); a deeper one is not graded, with the "
                          "reason.").tag(config=True)
    max_file_bytes = Integer(16 << 20, help="Largest file handed in beside a notebook that a grading job "
                             "carries into the kernel's folder; larger ones are left out, with a "
                             "note.").tag(config=True)
    max_files = Integer(200, help="Most files handed in beside a notebook that a grading job carries; the "
                        "rest are left out, with a note.").tag(config=True)


def check_notebook(path, limits=None):
    """Why ``path`` is not a readable notebook, or None."""
    import nbformat

    limits = limits or IntakeLimits()
    try:
        raw = read_regular(path, limits.max_notebook_bytes)
    except TooLarge:
        return f"is larger than the {limits.max_notebook_bytes:,} bytes the grader reads"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not raw.strip():
        return "is an empty file, not a notebook (was the upload interrupted?)"
    try:
        data = json.loads(raw.decode("utf-8"))
        json_size(data, limits.max_nesting)
    except UnicodeDecodeError:
        return "is not a notebook: it is not UTF-8 text"
    except json.JSONDecodeError as exc:
        return f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); it is not a readable notebook"
    except (RecursionError, TooDeep):
        return (f"nests lists or objects more than {limits.max_nesting} levels deep; it is not a notebook "
                "the grader reads")
    if not isinstance(data, dict) or "cells" not in data:
        return "is JSON but not a Jupyter notebook (no 'cells')"
    try:
        nb = nbformat.from_dict(data)
        nb = nbformat.convert(nb, 4) if nb.get("nbformat") != 4 else nb
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several kinds
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"is not a valid notebook ({first[:200]})"
    return None


def _size(path):
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan(root, lessons, students=None, limits=None, only_theirs=False):
    """Units to grade and problems found, from ``<root>/submitted``; never writes there.
    ``only_theirs``: look at the folders of ``students`` alone, never listing ``submitted/``
    (the grading service's scan of one learner, whatever the class's size)."""
    root = Path(root)
    limits = limits or IntakeLimits()
    submitted = root / "submitted"
    all_lessons = set(lesson_ids(root))
    units, problems = [], []
    if not submitted.is_dir():
        return units, problems
    if only_theirs:
        entries = [submitted / s for s in sorted(students or []) if os.path.lexists(submitted / s)]
    else:
        entries = sorted(submitted.iterdir())
    for entry in entries:
        rel = entry.relative_to(root)
        if entry.name in IGNORED_NAMES:
            continue
        if entry.is_symlink():
            problems.append(Problem(entry.name, "", str(rel), "a symbolic link, not a student's folder: not followed",
                                    fatal=False))
            continue
        if not entry.is_dir():
            problems.append(Problem("", "", str(rel),
                                    "extra file ignored: submissions go in submitted/<student>/<lesson>/<lesson>.ipynb",
                                    fatal=False))
            continue
        student = entry.name
        if students and student not in students:
            continue
        for item in sorted(entry.iterdir()):
            rel = item.relative_to(root)
            if item.name in IGNORED_NAMES:
                continue
            if item.is_symlink():
                problems.append(Problem(student, item.name, str(rel), "a symbolic link, not a submission: not followed",
                                        fatal=item.name in lessons))
                continue
            if not item.is_dir():
                message = "extra file ignored: a submission is a folder named after its lesson"
                if item.suffix == ".ipynb":
                    message = (f"notebook outside a lesson folder ignored: it should be "
                               f"submitted/{student}/<lesson>/<lesson>.ipynb")
                problems.append(Problem(student, "", str(rel), message, fatal=False))
                continue
            lesson = item.name
            if lesson not in all_lessons:
                problems.append(Problem(student, lesson, str(rel),
                                        f"not a lesson of this course (lessons: {', '.join(sorted(all_lessons))}); ignored",
                                        fatal=False))
                continue
            if lesson not in lessons:
                continue
            expected = item / f"{lesson}.ipynb"
            left_out = dict(irregular(item))
            for path, why in left_out.items():
                problems.append(Problem(student, lesson, str(rel / path), f"{why}: not read, not graded",
                                        fatal=path == expected.name))
            if expected.name in left_out:
                continue
            others = [p for p in sorted(item.iterdir())
                      if p != expected and p.name not in IGNORED_NAMES and p.name not in NBGRADER_FILES
                      and p.name not in left_out]
            other_notebooks = [p for p in others if p.suffix == ".ipynb"]
            for extra in others:
                if extra in other_notebooks:
                    if expected.exists():
                        message = f"extra notebook ignored: only {lesson}.ipynb is graded"
                    else:
                        continue
                elif _size(extra) > limits.max_file_bytes:
                    message = (f"extra file larger than {limits.max_file_bytes:,} bytes: not handed to the "
                               "kernel, not graded")
                else:
                    message = "extra file, not graded (the notebook may read it while it runs; it is not kept in autograded/)"
                problems.append(Problem(student, lesson, str(extra.relative_to(root)), message, fatal=False))
            if not expected.is_file():
                if other_notebooks:
                    names = ", ".join(p.name for p in other_notebooks)
                    problems.append(Problem(
                        student, lesson, str(other_notebooks[0].relative_to(root)),
                        f"notebook under the wrong name ({names}): nbgrader grades only "
                        f"{lesson}.ipynb; rename it and grade again"))
                else:
                    problems.append(Problem(student, lesson, str(rel),
                                            f"no notebook: expected {lesson}.ipynb in this folder"))
                continue
            why = check_notebook(expected, limits)
            if why:
                problems.append(Problem(student, lesson, str(expected.relative_to(root)),
                                        f"malformed notebook: it {why}"))
                continue
            units.append(Unit(student, lesson, expected))
    return units, problems


def submission_files(folder, limits=None):
    """{relative path: bytes} of every regular file handed in (what a grading job carries), within
    the ``IntakeLimits``: links, pipes and devices, a file larger than ``max_file_bytes`` (other than
    the notebook, checked by ``scan``) and files past ``max_files`` are left out (``scan`` names
    them)."""
    limits = limits or IntakeLimits()
    files, _ = walk(folder, max_files=limits.max_files + 1,
                    max_bytes=lambda path: limits.max_notebook_bytes if path.endswith(".ipynb")
                    else limits.max_file_bytes)
    return {path: data for path, data in files.items() if not (set(path.split("/")) & IGNORED_NAMES)}


def content_hash(files):
    """One sha256 of a set of files (names and bytes): what decides whether grading is needed."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()
