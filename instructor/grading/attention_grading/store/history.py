"""Every attempt kept: the history of each learner's lesson, and each run's change log.

Beside the attempts ledger (``hidden.attempts``: ``history/<student>/<lesson>/attempts.json``,
which numbers the attempts and decides their hidden cases), ``make grade`` keeps each attempt it
graded, or failed to grade, in a folder of its own, never overwritten by a later attempt::

    history/<student>/<lesson>/<n>/attempt.json    # the record below
    history/<student>/<lesson>/<n>/<lesson>.ipynb  # the autograded notebook (graded attempts)
    history/<student>/<lesson>/<n>/<lesson>.html   # its latest feedback page, once rendered
    history/<student>/<lesson>/refused.json        # the newest attempt that could not be graded
                                                   # while an earlier grade stands (gone once one is)
    history/changes-<YYYYmmdd-HHMMSS>.txt          # one run's change log (when it changed anything)
    history/changes.log                            # every run's change log, appended
    history/scores.json                            # the final scores as the last run left them

``attempt.json`` (``FORMAT`` 1): ``attempt`` (the ledger's number), ``handed_in_digest`` (the
ledger's digest of every file handed in), ``notebook_sha256`` (of the submitted notebook),
``submission_sha256`` (what decides "already graded"), ``timestamp`` (the submission's, as
nbgrader reads it), ``graded_at`` (UTC), ``status`` (graded, needs manual grading, ungradable),
``raw_score``, ``late_submission_penalty``, ``score`` (raw less penalty, never below 0),
``max_score``, ``verdicts`` (one per graded cell: ``grade_id``, ``status``, ``points``,
``max_points``, ``diagnosis``), ``failure`` (why it could not be graded, or null). A regrade of
the same attempt (``--force``, a new lesson source) writes its folder again. Read with
``attempts(root, student, lesson)``; the grading service reads the same files.
"""
import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

from ..hidden.attempts import HISTORY, LedgerError, _component
from ..paths import write_atomically

FORMAT = 1
RECORD = "attempt.json"
REFUSED = "refused.json"
CUMULATIVE = "changes.log"
SCORES = "scores.json"             # the final scores the last run left: the next change log's "old"


def lesson_folder(root, student, lesson):
    try:
        return Path(root) / HISTORY / _component(student, "the student") / _component(lesson, "the lesson")
    except LedgerError as exc:
        raise ValueError(str(exc)) from None


def attempt_folder(root, student, lesson, number):
    return lesson_folder(root, student, lesson) / str(int(number))


def _write_atomic(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)


def _now():
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def record_of(result, attempt, notebook=None, penalty=None):
    """The ``attempt.json`` of ``result`` (a ``GradingResult``), attempt ``attempt``
    (``hidden.attempts.Attempt``, or None when the ledger has none)."""
    penalty = penalty or 0.0
    return {
        "format": FORMAT, "student": result.student, "lesson": result.lesson,
        "attempt": attempt.number if attempt else None,
        "handed_in_digest": attempt.digest if attempt else None,
        "notebook_sha256": hashlib.sha256(notebook).hexdigest() if notebook is not None else None,
        "submission_sha256": result.submission_sha256, "timestamp": result.timestamp, "graded_at": _now(),
        "status": result.status, "raw_score": result.score, "late_submission_penalty": penalty,
        "score": max(0.0, result.score - penalty), "max_score": result.max_score,
        "verdicts": [{"grade_id": c.grade_id, "status": c.status, "points": c.points, "max_points": c.max_points,
                      "diagnosis": c.diagnosis} for c in result.checks],
        "failure": result.failure,
    }


def keep_graded(root, result, attempt, notebook, autograded, penalty=None):
    """Keep a graded attempt: its record and autograded notebook (bytes, ``autograded``);
    ``notebook``: the submitted notebook's bytes. A refused attempt before it no longer stands."""
    folder = attempt_folder(root, result.student, result.lesson, attempt.number)
    _write_atomic(folder / RECORD, json.dumps(record_of(result, attempt, notebook, penalty), indent=1).encode())
    if autograded is not None:
        _write_atomic(folder / f"{result.lesson}.ipynb", autograded)
    (folder.parent / REFUSED).unlink(missing_ok=True)
    return folder


def keep_failed(root, result, attempt, notebook=None, earlier_grade_stands=False):
    """Keep an attempt that could not be graded (its record, with why); when an earlier grade
    stands, ``refused.json`` says so until an attempt is graded."""
    record = json.dumps(record_of(result, attempt, notebook), indent=1).encode()
    lesson = lesson_folder(root, result.student, result.lesson)
    if attempt is not None:
        _write_atomic(attempt_folder(root, result.student, result.lesson, attempt.number) / RECORD, record)
    if earlier_grade_stands:
        _write_atomic(lesson / REFUSED, record)


def keep_page(root, student, lesson, html):
    """The feedback page just written, into the newest graded attempt's folder."""
    graded = [r for r in attempts(root, student, lesson) if r.get("status") != "ungradable" and r.get("attempt")]
    if graded and html is not None:
        _write_atomic(attempt_folder(root, student, lesson, graded[-1]["attempt"]) / f"{lesson}.html", html)


def attempts(root, student, lesson):
    """The records of a learner's lesson, oldest attempt first ([] when there are none)."""
    try:
        folder = lesson_folder(root, student, lesson)
    except ValueError:
        return []
    out = []
    for path in folder.glob(f"*/{RECORD}"):
        if path.parent.name.isdigit():
            try:
                out.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
    return sorted(out, key=lambda r: r.get("attempt") or 0)


def refused(root):
    """{(student, lesson): why} of every lesson whose newest attempt could not be graded while an
    earlier grade stands."""
    out = {}
    for path in sorted(Path(root, HISTORY).glob(f"*/*/{REFUSED}")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        out[path.parent.parent.name, path.parent.name] = record.get("failure") or "could not be graded"
    return out


def write_changes(root, lines, when=None):
    """Save one run's change log (``history/changes-<time>.txt``, and appended to
    ``history/changes.log``); returns its path, or None when there is nothing to say."""
    if not lines:
        return None
    when = when or datetime.now(timezone.utc)
    folder = Path(root) / HISTORY
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"changes-{when:%Y%m%d-%H%M%S}.txt"
    text = "".join(f"{line}\n" for line in lines)
    path.write_text(text)
    with open(folder / CUMULATIVE, "a") as fh:
        fh.write(f"# {when.isoformat(timespec='seconds')}\n{text}")
    return path


def last_scores(root):
    """{(student, lesson): final score} as the last run left them (so that the change log counts a
    manual grade or an extension given between runs), or None before the first run."""
    try:
        data = json.loads((Path(root) / HISTORY / SCORES).read_text())
        return {tuple(key.split("/", 1)): score for key, score in data["scores"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_scores(root, scores):
    data = {"format": FORMAT, "saved": _now(), "scores": {f"{s}/{l}": v for (s, l), v in sorted(scores.items())}}
    _write_atomic(Path(root) / HISTORY / SCORES, json.dumps(data, indent=1).encode())


def _shown(value):
    return "–" if value is None else f"{value:g}"


def change_lines(before, after, resubmitted=(), refused_now=None, off_roster=()):
    """A run's change log: ``before`` and ``after`` ({(student, lesson): final score or None});
    ``resubmitted``: {(student, lesson): attempt number} graded now as a new attempt;
    ``refused_now``: {(student, lesson): why} whose new attempt could not be graded while an earlier
    grade stands; ``off_roster``: [(student, lesson)] kept apart."""
    lines, resubmitted = [], dict(resubmitted)      # made once: a lookup per key, not a copy per key
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            student, lesson = key
            line = f"{student} {lesson}: {_shown(old)} → {_shown(new)}"
            if key in resubmitted:
                line += f" (attempt {resubmitted[key]})"
            lines.append(line)
    for key, number in sorted(resubmitted.items()):
        if before.get(key) == after.get(key) and number > 1:
            lines.append(f"{key[0]} {key[1]}: resubmitted (attempt {number}), score unchanged {_shown(after.get(key))}")
    for (student, lesson), why in sorted((refused_now or {}).items()):
        lines.append(f"{student} {lesson}: resubmission NOT GRADED ({why}); the last good grade "
                     f"{_shown(after.get((student, lesson)))} stands")
    for student, lesson in sorted(set(off_roster)):
        lines.append(f"{student} {lesson or '(every lesson)'}: not on the roster, kept apart (no grade)")
    return lines
