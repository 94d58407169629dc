"""What the grading service did with each submission that reached the exchange's inbound folder.

One journal per learner and lesson, beside the attempts ledger (``hidden.attempts``):
``history/<student>/<lesson>/service.json`` holds ``{"format": 1, "arrivals": [...]}``, one
entry per inbound folder (its name is unique: learner, lesson, time and a random string), in the
order they were taken up: ``{"inbound": name, "arrived": <UTC time the kernel recorded>,
"state": "grading" | "graded" | "refused" | "failed", "attempt": n, "score": x, "max_score": y,
"reason": text, "next_possible": <UTC time>, "finished": <UTC time>}``.

An entry is written ``grading`` before its submission is collected and finished after its
feedback is released, so a service killed in between finds it ``grading`` on restart and takes it
up again (the store skips what it had already saved: the plan's content hashes); a finished entry
is never taken up again: each submission is answered exactly once. Written atomically (a
temporary file renamed over it) under an ``fcntl`` lock. This is the service's thin hook on the
course's history: a shared history of attempts can take its place behind the same methods.
"""
import datetime
import fcntl
import json
from pathlib import Path

from ..hidden.attempts import HISTORY
from ..paths import write_atomically

JOURNAL = "service.json"
FORMAT = 1
FINISHED = ("graded", "refused", "failed")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(moment):
    """ISO 8601 in UTC; a naive time is UTC already (``regular_files.recorded_time``)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")


class ServiceHistory:
    """The journals of the course at ``root`` (see the module docstring)."""

    def __init__(self, root):
        self.root = Path(root)

    def path(self, student, lesson):
        for name in (student, lesson):
            if not name or name in (".", "..") or "/" in name or "\0" in name:
                raise ValueError(f"{name!r} cannot name a folder of the history")
        return self.root / HISTORY / student / lesson / JOURNAL

    def entries(self, student, lesson):
        try:
            data = json.loads(self.path(student, lesson).read_text())
        except FileNotFoundError:
            return []
        return list(data.get("arrivals", []))

    def entry(self, student, lesson, inbound):
        return next((e for e in self.entries(student, lesson) if e["inbound"] == inbound), None)

    def finished_inbound(self):
        """The names of every inbound folder answered already (any learner, any lesson)."""
        done = set()
        for journal in (self.root / HISTORY).glob(f"*/*/{JOURNAL}"):
            try:
                arrivals = json.loads(journal.read_text()).get("arrivals", [])
            except (OSError, ValueError):
                continue
            done |= {e["inbound"] for e in arrivals if e.get("state") in FINISHED}
        return done

    def graded(self, student, lesson):
        """The entries of attempts that were graded (or taken up for grading), oldest first."""
        return [e for e in self.entries(student, lesson) if e.get("state") in ("graded", "grading", "failed")]

    def begin(self, student, lesson, inbound, arrived):
        """Record that ``inbound`` is taken up (once: an entry already there is returned as it is)."""
        def change(entries):
            if not any(e["inbound"] == inbound for e in entries):
                entries.append({"inbound": inbound, "arrived": iso(arrived), "state": "grading"})
            return entries
        return next(e for e in self._update(student, lesson, change) if e["inbound"] == inbound)

    def finish(self, student, lesson, inbound, state, **facts):
        assert state in FINISHED, state

        def change(entries):
            for e in entries:
                if e["inbound"] == inbound:
                    e.update(facts, state=state, finished=iso(utc_now()))
            return entries
        self._update(student, lesson, change)

    def _update(self, student, lesson, change):
        path = self.path(student, lesson)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(".service.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = change(self.entries(student, lesson))
            write_atomically(path, json.dumps({"format": FORMAT, "arrivals": entries}, indent=1), durable=True)
        return entries
