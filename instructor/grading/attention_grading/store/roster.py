"""The roster decides who is in the class: the gradebook's students (nbgrader's roster, imported
with ``nbgrader db student import`` or added with ``nbgrader db student add``). A submission from
an account not on it is named and kept apart, never silently added (``Roster.off_roster``).

A course that never imported a roster has one the grader took from the submissions: each account
that submits is put on it, with a warning, and recorded in ``history/roster-from-submissions.json``.
As long as every student of the gradebook is one the grader put there, the roster is still the
submissions' (a learner who submits for the first time in week 5, or to the grading service after
others, joins with a warning); once the gradebook holds a student the grader did not add (the
instructor imported or added one), the roster is the instructor's and decides."""
import json
from dataclasses import dataclass
from pathlib import Path

from traitlets import Enum
from traitlets.config import Configurable

from ..paths import write_atomically

FROM_SUBMISSIONS = Path("history") / "roster-from-submissions.json"


class Roster(Configurable):
    """Who is in the class (``c.Roster.<name>``)."""

    off_roster = Enum(["refuse", "add"], "refuse",
                      help="What make grade and nbgrader export do with a submission from an account that "
                           "is not on the roster (the gradebook's students) while the roster is not empty. "
                           "'refuse' (the default): name it and keep it apart: not graded, in no output "
                           "(submitted/ is left as it is); add the learner with `nbgrader db student add` "
                           "to grade it. 'add': grade it and add the learner to the gradebook, with a "
                           "warning. With an empty roster (none imported yet) every account that "
                           "submitted is added to it, with a warning (ungradable ones too: they "
                           "join the class, and so does every account that submits later, until the "
                           "instructor imports or adds a student).").tag(config=True)


def enrolled(gb):
    """The ids of the gradebook's students."""
    return {s.id for s in gb.students}


def from_submissions(root):
    """The accounts the grader put on the roster itself (no roster was imported), as a set."""
    try:
        return set(json.loads((Path(root) / FROM_SUBMISSIONS).read_text())["students"])
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def instructors(on_roster, taken):
    """Whether the roster ``on_roster`` is the instructor's: it holds a student the grader did not
    put there (``taken``, ``from_submissions``). An empty roster is nobody's yet."""
    return bool(set(on_roster) - set(taken))


def kept_apart(config, on_roster, submitted, taken=frozenset()):
    """The accounts among ``submitted`` that are kept apart: not on the roster ``on_roster`` (a
    set of ids), unless the roster is not the instructor's (empty, or every student on it put
    there from the submissions, ``taken``) or the course adds them (``Roster.off_roster``)."""
    if not instructors(on_roster, taken) or Roster(config=config).off_roster == "add":
        return set()
    return {student for student in submitted if student and student not in on_roster}


def added(config, on_roster, submitted):
    """The accounts among ``submitted`` a run adds to the class (with a warning)."""
    return {student for student in submitted if student and student not in on_roster}


def enroll(root, db_url, course_id, students):
    """Put ``students`` on a roster taken from the submissions (the gradebook's students, and
    ``FROM_SUBMISSIONS``), as a run does while no roster was imported: a learner whose first
    submission could not be graded stays in the class."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gb:
        for student in sorted(students):
            gb.update_or_create_student(student)
    path = Path(root) / FROM_SUBMISSIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps({"format": 1, "students": sorted(from_submissions(root) | set(students))},
                                      indent=1) + "\n")


@dataclass
class Decision:
    """Who a run grades: ``apart`` (kept apart, graded nowhere), ``added`` (put on the roster by
    this run), whether the roster is the instructor's (``imported``), and the class (``roster``)."""
    apart: set
    added: list
    imported: bool
    roster: list

    def warnings(self, off_roster):
        """What the run says about the roster (``off_roster``: the (student, lesson) kept apart)."""
        lines = [f"[not on the roster] {student}: {', '.join(l or '(no lesson)' for s, l in off_roster if s == student)}"
                 f" kept apart: no grade, in no output (the roster is the gradebook's students: add them with "
                 f"`nbgrader db student add {student}`, or c.Roster.off_roster = 'add')" for student in sorted(self.apart)]
        if self.added and not self.imported:
            lines.append(f"[warning] no roster imported (import one with `nbgrader db student import`): the roster "
                         f"is taken from the submissions; put on it: {', '.join(self.added)}")
        lines += [f"[warning] {student} is not on the roster: added to the class as their submission is graded"
                  for student in (self.added if self.imported else [])]
        return lines


def decide(config, root, on_roster, submitted):
    """The ``Decision`` for the accounts ``submitted`` of the course at ``root``, whose gradebook
    holds the students ``on_roster``."""
    taken = from_submissions(root)
    apart = kept_apart(config, on_roster, submitted, taken)
    return Decision(apart, sorted(added(config, on_roster, submitted) - apart), instructors(on_roster, taken),
                    sorted((set(submitted) - apart) | set(on_roster)))
