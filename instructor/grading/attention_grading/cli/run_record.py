"""What one ``make grade`` run did: the record ``grade`` returns and the command line prints."""
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunRecord:
    """What one ``make grade`` did (returned by ``grade``; the command line prints it)."""
    root: Path
    lessons: list
    students: list
    graded: list = field(default_factory=list)            # (student, lesson) graded now
    skipped: int = 0
    failed: dict = field(default_factory=dict)            # (student, lesson): why, class-wide
    problems: list = field(default_factory=list)          # intake.Problem
    rows: list = field(default_factory=list)              # grades.csv
    lms_lessons: list = field(default_factory=list)       # the lessons of grades-by-learner.csv
    feedback_failures: list = field(default_factory=list)  # (student, lesson, why)
    feedback_written: int = 0                             # pages written now
    feedback_current: int = 0                             # pages already made from today's grades
    pages: set = field(default_factory=set)               # (student, lesson) whose page was written now
    pages_beside: int = 0                                 # of them, begun before the last grading job
    feedback_cpu: float = 0.0                             # this process's CPU seconds on feedback pages
    second_attempts: dict = field(default_factory=dict)   # (student, lesson): why the first failed
    kept_manual: dict = field(default_factory=dict)       # (student, lesson): written answers kept
    changed_manual: dict = field(default_factory=dict)    # (student, lesson): answers to confirm
    sandboxed: bool = True
    seconds: float = 0.0
    job_seconds: dict = field(default_factory=dict)       # (student, lesson): its last attempt's seconds
    only_students: list = field(default_factory=list)     # --student filters (empty: everyone)
    cluster_lost: str = ""                                # why a Dask cluster stopped the run
    not_graded: list = field(default_factory=list)        # (student, lesson) left for the next run
    interrupted: bool = False                             # Ctrl-C
    backup: Path = None                                   # the copy of the gradebook made first
    feedback_only: bool = False
    attempts: dict = field(default_factory=dict)          # (student, lesson): attempt number graded now
    before: dict = field(default_factory=dict)            # (student, lesson): final score before the run
    refused: dict = field(default_factory=dict)           # (student, lesson): why; its last good grade stands
    off_roster: list = field(default_factory=list)        # (student, lesson) kept apart: not on the roster
    changes: list = field(default_factory=list)           # the change log's lines
    change_log: Path = None                               # where they were saved

    def selected(self, key):
        student, lesson = key
        return lesson in self.lessons and (not self.only_students or student in self.only_students)

    @property
    def failed_in_selection(self):
        return {key: why for key, why in self.failed.items() if self.selected(key)}
