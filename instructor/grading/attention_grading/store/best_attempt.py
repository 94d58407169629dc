"""The best attempt kept in the gradebook (``AttemptLimits.keep = "best"``).

Before the grading service grades a new attempt, ``snapshot`` keeps what the course holds of the
learner's lesson now (the best attempt so far): its standing in the gradebook (grades, manual
grades, comments, penalty: ``standing.Standing``) and its folders in ``submitted/``,
``autograded/`` and ``feedback/``. When the new attempt scores less, ``restore`` puts all of it
back as it was, so that the gradebook, ``autograded/``, the feedback page and ``submitted/`` keep
agreeing with each other (``make grade`` then finds the kept attempt graded already, from the
same files); the new attempt's grade and page stay in the service's history.
"""
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import standing as standings

FOLDERS = ("submitted", "autograded", "feedback")


@dataclass
class Snapshot:
    student: str
    lesson: str
    score: float
    standing: object          # standing.Standing
    folder: Path              # a copy of each of FOLDERS' <student>/<lesson>, by name


def snapshot(root, db_url, course_id, student, lesson, folder):
    """What the course holds of ``student``'s ``lesson`` now, copied into ``folder``; None when
    nothing is graded yet. A snapshot already complete in ``folder`` (made before a service was
    killed, when ``submitted/`` may already hold the new attempt) is the one returned."""
    import json

    from nbgrader.api import Gradebook

    folder = Path(folder)
    marker = folder / "standing.json"
    if marker.is_file():
        data = json.loads(marker.read_text())
        return Snapshot(student, lesson, data["score"], standings.Standing.from_dict(data["standing"]), folder)
    with Gradebook(db_url, course_id) as gb:
        now = standings.read(gb, lesson, student)
        if now is None or not (Path(root) / "autograded" / student / lesson).is_dir():
            return None
        score = float(gb.find_submission(lesson, student).score)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in FOLDERS:
        source = Path(root) / name / student / lesson
        if source.is_dir():
            shutil.copytree(source, folder / name, symlinks=True)
    fd, temporary = tempfile.mkstemp(dir=folder)
    with os.fdopen(fd, "w") as fh:          # written last: the snapshot is whole once it is there
        json.dump({"score": score, "standing": now.as_dict()}, fh)
    os.replace(temporary, marker)
    return Snapshot(student, lesson, score, now, folder)


def restore(root, db_url, course_id, kept):
    """Put the attempt ``kept`` (a ``Snapshot``) back: its folders, then its standing."""
    from nbgrader.api import Gradebook

    for name in FOLDERS:
        target = Path(root) / name / kept.student / kept.lesson
        copy = kept.folder / name
        if not copy.is_dir():
            continue
        staged = target.with_name(f".{kept.lesson}.restoring")
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(copy, staged, symlinks=True)
        old = target.with_name(f".{kept.lesson}.replaced")
        if target.exists():
            os.replace(target, old)
        os.replace(staged, target)
        shutil.rmtree(old, ignore_errors=True)
    with Gradebook(db_url, course_id) as gb:
        standings.seed(gb, kept.standing)


def discard(kept):
    if kept is not None:
        shutil.rmtree(kept.folder, ignore_errors=True)
