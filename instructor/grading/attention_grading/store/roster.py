"""The roster decides who is in the class: the gradebook's students (nbgrader's roster, imported
with ``nbgrader db student import`` or added with ``nbgrader db student add``). A submission from
an account not on it is named and kept apart, never silently added (``Roster.off_roster``)."""
from traitlets import Enum
from traitlets.config import Configurable


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
                           "are the class from then on).").tag(config=True)


def enrolled(gb):
    """The ids of the gradebook's students."""
    return {s.id for s in gb.students}


def kept_apart(config, on_roster, submitted):
    """The accounts among ``submitted`` that are kept apart: not on the roster ``on_roster`` (a
    set of ids), unless the roster is empty or the course adds them (``Roster.off_roster``)."""
    if not on_roster or Roster(config=config).off_roster == "add":
        return set()
    return {student for student in submitted if student and student not in on_roster}


def added(config, on_roster, submitted):
    """The accounts among ``submitted`` a run adds to the class (with a warning)."""
    return {student for student in submitted if student and student not in on_roster}


def enroll(db_url, course_id, students):
    """Put ``students`` on the roster (the gradebook's students), as the first run does when no
    roster was imported: a learner whose first submission could not be graded stays in the class."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, course_id) as gb:
        for student in sorted(students):
            gb.update_or_create_student(student)
