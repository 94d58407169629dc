"""The result model of grading: typed records that every later step reads, and nothing re-parses.

- ``Verdict``: one hidden test, decided by the grader (``hidden.decide``) from what the kernel
  returned; its ``diagnosis`` is the catalogued mistake as data, never found again in a message.
- ``CheckResult``: one graded cell of a submission (like Otter's ``TestCaseResult``).
- ``NotebookNotes``: what happened while a notebook ran (verdicts, crashes, hangs, restored cells),
  written by the executor and the verdict step into ``grading-notes.json``.
- ``GradingResult``: one submission (student × lesson): scores per check, flags, failure reason,
  timings; made by the grading job (its notes), completed by the store (its checks, read back from
  the gradebook), read by ``grades.csv``, the table, the report and the command line.
"""
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

# Verdict kinds
PASSED = "passed"
WRONG = "wrong"            # an output differs from the reference
RAISED = "raised"          # the function raised
MUTATED = "mutated"        # it changed an input in place
TIMEOUT = "timeout"        # the grader's time for the test ran out
CRASHED = "crashed"        # the kernel died during the test
NOT_RUN = "not_run"        # the test could not start (the visible part of its cell failed, ...)
REFUSED = "refused"        # the kernel broke the grading protocol
RAN = "ran"                # a graded cell without a hidden test ran without an error (the kernel's word)

# Where a notebook's notes travel: nbgrader's resources (``resources[NOTES_KEY]``, a
# ``NotebookNotes`` dict: from ``GuardedExecute`` to the verdict steps) and the notebook's own
# metadata (``nb.metadata[NOTES_KEY]``: what the restoring steps did, for ``GuardedExecute``).
NOTES_KEY = "attention_grading"
# Where a grading job puts the lesson's cells as the gradebook holds them (``store.lessons.LessonBook``),
# so that the restoring steps need no gradebook: ``resources[LESSON_KEY]``.
LESSON_KEY = "attention_grading_lesson"

# Check statuses
CHECK_PASSED, CHECK_FAILED, CHECK_AWAITING = "passed", "failed", "awaiting manual grading"
# Submission statuses
GRADED, NEEDS_MANUAL, UNGRADABLE, NOT_SUBMITTED = ("graded", "needs manual grading", "ungradable",
                                                   "not submitted")


def _from_dict(cls, data):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Verdict:
    check: str                       # the hidden test's name: the graded function ("softmax")
    passed: bool
    message: str
    kind: str = PASSED
    cases: int = 0
    case: Optional[str] = None       # the label of the first case that failed
    diagnosis: Optional[str] = None  # the catalogued mistake the wrong output matched
    seconds: float = 0.0

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return _from_dict(cls, data)


@dataclass
class Flag:
    """Something the grader saw a submission do that an instructor should look at."""
    why: str
    cell: Optional[int] = None
    grade_id: Optional[str] = None

    @classmethod
    def from_dict(cls, data):
        return _from_dict(cls, data)


@dataclass
class NotebookNotes:
    """What happened while one notebook was graded (``grading-notes.json`` beside it)."""
    verdicts: dict = field(default_factory=dict)       # grade_id of a hidden test cell -> Verdict dict
    flags: list = field(default_factory=list)          # Flag dicts
    crashed_cells: list = field(default_factory=list)  # {"cell", "grade_id", "starts_with"}
    hung_cells: list = field(default_factory=list)
    not_run_cells: list = field(default_factory=list)
    skipped_cells: list = field(default_factory=list)
    restored_cells: list = field(default_factory=list)
    restored_metadata: list = field(default_factory=list)   # grade_ids whose nbgrader metadata was changed
    missing_answer_cells: list = field(default_factory=list)
    kernel_restarts: int = 0
    sandbox: Optional[str] = None                      # how kernels were confined, or None
    kernel_log: str = ""                               # the end of the kernels' own start-up log

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return _from_dict(cls, data)


@dataclass
class CheckResult:
    grade_id: str
    exercise: Optional[str]          # the graded function it belongs to (None: a written answer)
    kind: str                        # "hidden" (autograded against the reference), "code", "written"
    max_points: float
    points: Optional[float]          # None while awaiting manual grading
    status: str                      # CHECK_PASSED, CHECK_FAILED or CHECK_AWAITING
    message: str = ""
    diagnosis: Optional[str] = None

    @classmethod
    def from_dict(cls, data):
        return _from_dict(cls, data)


@dataclass
class GradingResult:
    student: str
    lesson: str
    status: str                      # GRADED, NEEDS_MANUAL or UNGRADABLE
    score: float = 0.0               # autograded points (and manual ones, once given)
    max_score: float = 0.0
    checks: list[CheckResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    failure: Optional[str] = None    # why it could not be graded
    first_failure: Optional[str] = None   # why the first attempt failed, when a second one succeeded
    sandboxed: bool = True
    timestamp: Optional[str] = None  # the submission's timestamp.txt, as nbgrader read it
    submission_sha256: str = ""      # of every file handed in (what decides "already graded")
    lesson_sha256: str = ""          # of the lesson's source notebook
    seconds: float = 0.0             # in the grading job
    notes: dict = field(default_factory=dict)       # NotebookNotes of the notebook, as a dict
    kept_manual: list = field(default_factory=list)     # written answers whose manual grade was kept
    changed_manual: list = field(default_factory=list)  # graded by hand, since changed: to confirm

    def as_dict(self):
        return asdict(self)

    def to_json(self):
        return json.dumps(self.as_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, data):
        result = _from_dict(cls, data)
        result.checks = [CheckResult.from_dict(c) if isinstance(c, dict) else c for c in result.checks]
        result.flags = [Flag.from_dict(f) if isinstance(f, dict) else f for f in result.flags]
        return result

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))

    @property
    def awaiting_manual(self):
        return [c for c in self.checks if c.status == CHECK_AWAITING]
