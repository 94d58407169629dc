"""Plan: what ``make grade`` will do, before anything is graded. The course is read once
(``open_course``); ``submitted/`` is scanned (``intake``); each selected submission that is not
graded already from the same files and lesson (content hashes, never file times) is recorded as
an attempt (``hidden.attempts``: which hidden cases it gets) and becomes one self-contained
``jobs.GradingJob``, beside what the store will need of it once graded: its standing before and
the digests of its written answers then (``Planned``). Jobs are made as the pool asks for them
(``Plan.jobs``, a generator): only the jobs on workers hold a submission's files, whatever the
size of the class.
"""
import difflib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..course import lesson_ids, load_config
from ..errors import GradebookError, SelectionError
from ..hidden.attempts import AttemptLedger, LedgerError, handed_in_digest
from ..hidden.cases import course_secret
from ..kernels.sandbox import support
from ..store import gradebook as books
from ..store import lessons as lesson_store
from ..store import standing as standings
from .intake import IntakeLimits, content_hash, submission_files
from .jobs import GradingJob


@dataclass
class Course:
    """The course a run works on, read once: its folder, nbgrader configuration and gradebook."""
    root: Path
    config: object
    db_url: str
    course_id: str
    lessons: list                  # every lesson, in course order
    intake: IntakeLimits           # what a learner's files may be, read from the configuration

    def autograded(self, student, lesson):
        return self.root / "autograded" / student / lesson


def select_lessons(all_lessons, lessons):
    if not lessons:
        return all_lessons
    unknown = [l for l in lessons if l not in all_lessons]
    if unknown:
        raise SelectionError(f"unknown lesson(s): {', '.join(unknown)} (lessons: {', '.join(all_lessons)})")
    return [l for l in all_lessons if l in lessons]


def check_students(students, known):
    """Every ``--student`` is a learner of the course; else ``SelectionError`` naming the nearest."""
    unknown = [s for s in students or [] if s not in known]
    if not unknown:
        return
    hints = []
    for name in unknown:
        near = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
        hints.append(f"{name} (did you mean {' or '.join(near)}?)" if near else f"{name} (no learner of a similar name)")
    raise SelectionError(f"unknown student(s): {'; '.join(hints)}. Nothing was done. The learners are those "
                         f"with a folder in submitted/ or in the gradebook ({len(known)}).")


def open_course(root, db_url, unsandboxed, log):
    """The ``Course`` at ``root``, and whether its kernels will be sandboxed."""
    from ..paths import COURSE_ROOT

    root = Path(root or COURSE_ROOT).resolve()
    config = load_config(root)           # the course's nbgrader_config.py, read once for the whole run
    config.CourseDirectory.root = str(root)
    db_url = db_url or config.CourseDirectory.db_url
    config.CourseDirectory.db_url = db_url
    sandboxed = support.require(allow_unsandboxed=unsandboxed, warn=log)
    if not sandboxed:
        config.GuardedExecute.sandbox = False
    if not config.GuardedExecute.get("case_secret"):      # jobs grade in scratch courses of their own
        config.GuardedExecute.case_secret = course_secret(root)
    return Course(root, config, db_url, config.CourseDirectory.course_id, lesson_ids(root),
                  IntakeLimits(config=config)), sandboxed


@dataclass
class Planned:
    """What the store needs of a submission whose job is out, once it is graded."""
    prior: object = None           # store.standing.Standing in the course gradebook before, or None
    answered: dict = field(default_factory=dict)    # {grade_id: digest} of written answers graded before
    attempt: object = None         # hidden.attempts.Attempt: its number in the ledger (store.history keeps it)


@dataclass
class Plan:
    """What a run will grade. ``todo`` names the submissions (no file is held); ``jobs(gb)``
    makes their jobs one at a time, as the pool asks for them, so a class of any size is graded
    with only the jobs on workers in memory; ``waiting`` holds what the store needs of each
    job out (``Planned``) until ``stored`` forgets it."""
    course: object
    todo: list = field(default_factory=list)         # (intake.Unit, content hash), heaviest lessons first
    skipped: int = 0                                 # graded already from the same files
    unrecorded: dict = field(default_factory=dict)   # (student, lesson): why its attempt could not be recorded
    waiting: dict = field(default_factory=dict)      # (student, lesson): Planned, of the jobs out
    lessons: dict = field(default_factory=dict)      # {lesson: (source bytes, its sha256, its other files)}

    @property
    def keys(self):
        return [(u.student, u.lesson) for u, _ in self.todo]

    def jobs(self, gb):
        """The ``GradingJob`` of each submission of ``todo``, made when asked for: its attempt
        recorded (``hidden.attempts``: which hidden cases it gets), its files read, its standing
        in the open gradebook ``gb`` and its answers' digests kept in ``waiting``."""
        import nbformat

        course, ledger = self.course, AttemptLedger(self.course.root)
        cells = {l: lesson_store.LessonCells.read(gb, l) for l in self.lessons}
        for u, digest in self.todo:
            try:            # which attempt it is decides its hidden cases (hidden.attempts)
                attempt = ledger.record(u.student, u.lesson, handed_in_digest(u.notebook.parent))
            except (LedgerError, OSError) as exc:
                self.unrecorded[u.student, u.lesson] = str(exc)
                continue
            files = submission_files(u.notebook.parent, course.intake)
            source, lesson_hash, extra = self.lessons[u.lesson]
            graded_before = course.autograded(u.student, u.lesson) / f"{u.lesson}.ipynb"
            answered = (standings.answer_digests(nbformat.read(graded_before, as_version=4))
                        if graded_before.is_file() else {})
            self.waiting[u.student, u.lesson] = Planned(standings.read(gb, u.lesson, u.student), answered, attempt)
            yield GradingJob(u.student, u.lesson, files, cells[u.lesson], course.config, content_hash(files),
                             lesson_hash, lesson_source=source, lesson_files=extra,
                             case_key=attempt.key(u.student, u.lesson))

    def stored(self, key):
        """Forget what the store needed of a submission (graded, or failed for good)."""
        self.waiting.pop(key, None)


def lesson_files(course, lesson):
    """{path: bytes} of the lesson's own files in source/ besides its notebook (nbgrader's
    ``Autograde`` copies them into every graded folder)."""
    from nbgrader.utils import find_all_files

    folder = course.root / "source" / lesson
    ignore = list(course.config.CourseDirectory.get("ignore", [".ipynb_checkpoints", "*.pyc", "__pycache__",
                                                                "feedback"]))
    return {str(Path(path).relative_to(folder)): Path(path).read_bytes()
            for path in sorted(find_all_files(str(folder), ignore + ["*.ipynb"]))}


def plan(course, lessons, chosen, force, scratch, log):
    """The ``Plan`` for the submissions ``chosen`` (``intake.Unit``) of ``lessons`` (see the module
    docstring); ``scratch``: a folder for the lessons nbgrader adds to the gradebook. Each
    submission's files are read once here for their content hash and let go: its job reads
    them again when it is made (``Plan.jobs``)."""
    from nbgrader.api import Gradebook

    lesson_store.ensure_assignments(course.root, course.config, course.db_url, lessons, scratch, log)
    stale = lesson_store.stored_test_mismatches(course.root, course.db_url, course.course_id, lessons)
    if stale:
        raise GradebookError("the gradebook's copy of these hidden tests differs from source/: " + "; ".join(
            f"{lesson}: {', '.join(cells)}" for lesson, cells in stale.items())
            + ". Nothing was graded. Store source/ again with `nbgrader generate_assignment <lesson> "
            "--force` (or `make release`), then grade.")
    found = Plan(course)
    for l in lessons:
        source = (course.root / "source" / l / f"{l}.ipynb").read_bytes()
        found.lessons[l] = source, hashlib.sha256(source).hexdigest(), lesson_files(course, l)
    with Gradebook(course.db_url, course.course_id) as gb:
        for u in chosen:
            digest = content_hash(submission_files(u.notebook.parent, course.intake))
            if not force and books.already_graded(course.root, gb, u.student, u.lesson, digest,
                                                  found.lessons[u.lesson][1]):
                found.skipped += 1
                continue
            found.todo.append((u, digest))
    weight = {l: lesson_weight(source) for l, (source, _, _) in found.lessons.items()}
    found.todo.sort(key=lambda item: -weight[item[0].lesson])     # stable: learners in order within a lesson
    return found


def lesson_weight(source):
    """How much code a lesson's notebook runs (characters of its code cells): the heaviest lessons
    are graded first, so that a run ends on light notebooks rather than one worker finishing a
    long one while the other waits (longest first)."""
    import nbformat

    try:
        nb = nbformat.reads(source.decode("utf-8"), as_version=4)
    except Exception:
        return 0
    return sum(len(cell.source) for cell in nb.cells if cell.cell_type == "code")
