"""A submission's standing in a gradebook, as plain data: its grades (the autograder's, the
instructor's and extra credit), comments, late penalties, timestamp and extension.

A feedback page is rendered from it (``page_grades``: what the page shows, carried by the
feedback job), so from the grades the course gradebook holds (manual grades from the formgrader
included) without the course gradebook leaving this machine; the store keeps a submission's
standing from before it is graded again (``grades.apply``: the manual grades of unchanged
answers). Its ``digest`` is what a feedback page was made from: when the gradebook's
standing of a submission no longer has that digest, the page is stale.
"""
import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Optional


@dataclass
class Standing:
    """What a gradebook holds about one submission (every value JSON-friendly)."""
    student: str
    lesson: str
    names: dict = field(default_factory=dict)          # first_name, last_name, email, lms_user_id
    timestamp: Optional[str] = None                    # UTC, ISO format
    extension_seconds: Optional[float] = None
    grades: dict = field(default_factory=dict)         # {notebook: {grade_id: [auto, manual, extra, needs_manual]}}
    comments: dict = field(default_factory=dict)       # {notebook: {cell: [auto, manual]}}
    penalties: dict = field(default_factory=dict)      # {notebook: late penalty or None}

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)

    def digest(self):
        """Of what a feedback page shows: grades, comments and penalties (not names or times)."""
        shown = {"grades": self.grades, "comments": self.comments, "penalties": self.penalties}
        return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()

    def manual(self, notebook, grade_id):
        """(manual score, extra credit, needs manual grading) of a grade, or None."""
        grade = self.grades.get(notebook, {}).get(grade_id)
        return None if grade is None else (grade[1], grade[2], grade[3])


def read(gb, lesson, student):
    """The ``Standing`` of ``student``'s submission of ``lesson`` in ``gb``, or None."""
    from nbgrader.api import MissingEntry

    try:
        submission = gb.find_submission(lesson, student)
    except MissingEntry:
        return None
    person = submission.student
    standing = Standing(student, lesson, names={k: getattr(person, k) for k in
                                                ("first_name", "last_name", "email", "lms_user_id")})
    standing.timestamp = submission.timestamp.isoformat() if submission.timestamp else None
    standing.extension_seconds = submission.extension.total_seconds() if submission.extension else None
    for nb in submission.notebooks:
        standing.grades[nb.name] = {g.name: [g.auto_score, g.manual_score, g.extra_credit, bool(g.needs_manual_grade)]
                                    for g in nb.grades}
        standing.comments[nb.name] = {c.name: [c.auto_comment, c.manual_comment] for c in nb.comments}
        standing.penalties[nb.name] = nb.late_submission_penalty
    return standing


def seed(gb, standing):
    """Give ``gb`` (a job's scratch gradebook, holding the lesson) the submission ``standing``
    describes: the student with their names, the submission with its timestamp and extension,
    every grade, comment and penalty."""
    gb.update_or_create_student(standing.student, **{k: v for k, v in standing.names.items() if v is not None})
    kwargs = {"timestamp": standing.timestamp} if standing.timestamp else {}
    submission = gb.update_or_create_submission(standing.lesson, standing.student, **kwargs)
    submission.extension = (timedelta(seconds=standing.extension_seconds)
                            if standing.extension_seconds is not None else None)
    for nb in submission.notebooks:
        for grade in nb.grades:
            values = standing.grades.get(nb.name, {}).get(grade.name)
            if values is not None:
                grade.auto_score, grade.manual_score, grade.extra_credit, grade.needs_manual_grade = values
        for comment in nb.comments:
            values = standing.comments.get(nb.name, {}).get(comment.name)
            if values is not None:
                comment.auto_comment, comment.manual_comment = values
        if nb.name in standing.penalties:
            nb.late_submission_penalty = standing.penalties[nb.name]
    try:
        gb.db.commit()
    except Exception:
        gb.db.rollback()
        raise
    return submission


def answer_digests(nb):
    """{grade_id: sha256 of its text} of the written answers (graded by hand) of notebook ``nb``."""
    from ..cells import grade_id, is_written_answer

    return {grade_id(c): hashlib.sha256(c.source.encode()).hexdigest() for c in nb.cells if is_written_answer(c)}
