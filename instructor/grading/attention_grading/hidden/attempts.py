"""Which attempt a submission is, and the key its hidden-test cases are drawn from.

A learner may hand in a lesson many times. Each distinct set of files handed in is an attempt,
numbered in a ledger the course keeps outside ``submitted/``:
``history/<student>/<lesson>/attempts.json`` holds ``{"format": 1, "attempts": [{"attempt": n,
"digest": <handed_in_digest>, "seen": <UTC time>}, ...]}``. A submission is the last entry's
attempt when its digest is that entry's (the same files graded again), else a new entry ``n + 1``
(so A, then B, then A again are three attempts). The ledger is written atomically (a temporary
file renamed over it) under an ``fcntl`` lock, so two graders never give two submissions one
number; later work can keep each attempt's grade and feedback in the same entries.

``cases.case_key`` turns (student, lesson, attempt, digest) into the key ``cases.case_generator`` draws
a submission's hidden cases from (under the course's secret): two submissions share cases only
when they are the same attempt graded again, so whatever a learner learns about one attempt's
cases (and files handed in beside a notebook to answer them) is no use in the next.
``make grade`` records the attempt in its own process and hands each job its key
(``GuardedExecute.case_key``); plain ``nbgrader autograde`` records it where it grades.
"""
import datetime
import fcntl
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from attention_course.regular_files import visit

from ..paths import write_atomically
from .cases import case_key

HISTORY = "history"
LEDGER = "attempts.json"
FORMAT = 1


class LedgerError(RuntimeError):
    """The attempts ledger cannot be read or written (its message names the file)."""


def handed_in_digest(folder):
    """sha256 (hex) of everything handed in in ``folder``: every regular file by its path
    relative to the folder and its bytes (``timestamp.txt``, editor leftovers and files too large
    to be graded included), every folder by its path, and anything else (a link, a pipe, a file
    with several names: ``collect`` never copies those) by its path, kind, size and modification
    time; nothing is followed or read beyond the folder."""
    entries = {}

    def entry(path, info):
        if not path:
            return
        if stat.S_ISDIR(info.st_mode):
            entries[path] = b"folder"
        else:
            entries[path] = f"{stat.S_IFMT(info.st_mode):o} {info.st_size} {info.st_mtime_ns}".encode()

    def content(path, fd, opened):
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        entries[path] = b"file " + h.hexdigest().encode()

    visit(os.fspath(folder), content, on_entry=entry)
    digest = hashlib.sha256()
    for path in sorted(entries):
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0" + entries[path] + b"\n")
    return digest.hexdigest()


@dataclass
class Attempt:
    number: int
    digest: str
    seen: str               # when this attempt was first seen, UTC, ISO 8601

    def key(self, student, lesson):
        return case_key(student, lesson, self.number, self.digest)


def _component(name, what):
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        raise LedgerError(f"{what} {name!r} cannot name a folder of the attempts ledger")
    return name


class AttemptLedger:
    """The attempts of every learner of the course at ``root`` (see the module docstring)."""

    def __init__(self, root):
        self.root = Path(root)

    def path(self, student, lesson):
        return self.root / HISTORY / _component(student, "the student") / _component(lesson, "the lesson") / LEDGER

    def attempts(self, student, lesson):
        """The recorded attempts, oldest first ([] when there are none)."""
        return [Attempt(e["attempt"], e["digest"], e["seen"]) for e in self._read(self.path(student, lesson))]

    def record(self, student, lesson, digest):
        """The ``Attempt`` of a submission whose files have ``digest``: the last one if it has that
        digest, else a new one, written to the ledger first."""
        path = self.path(student, lesson)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path.with_name(".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                entries = self._read(path)
                if entries and entries[-1]["digest"] == digest:
                    last = entries[-1]
                    return Attempt(last["attempt"], last["digest"], last["seen"])
                now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
                entry = {"attempt": (entries[-1]["attempt"] if entries else 0) + 1, "digest": digest, "seen": now}
                self._write(path, entries + [entry])
                return Attempt(entry["attempt"], digest, now)
        except OSError as exc:
            raise LedgerError(f"the attempts ledger {path} could not be written: {exc}") from None

    @staticmethod
    def _read(path):
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise LedgerError(f"the attempts ledger {path} cannot be read ({exc}); it decides which hidden "
                              "cases each attempt gets, so nothing is graded until it is repaired") from None
        entries = data.get("attempts") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("attempt"), int) and isinstance(e.get("digest"), str)
                and isinstance(e.get("seen"), str) for e in entries):
            raise LedgerError(f"the attempts ledger {path} is not a list of attempts; it decides which hidden "
                              "cases each attempt gets, so nothing is graded until it is repaired")
        return entries

    @staticmethod
    def _write(path, entries):
        write_atomically(path, json.dumps({"format": FORMAT, "attempts": entries}, indent=1), durable=True)
