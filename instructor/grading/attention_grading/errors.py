"""The errors grading code raises for problems an instructor can fix. Library code raises them;
only the command lines (``grade``, ``release``, ...) turn them into a message and an exit status
(``exit_status``)."""
import sys


class CourseError(Exception):
    """A problem with the course, its gradebook, its cluster or this machine, explained in the
    message; nothing was lost. ``exit_status``: what the command line exits with."""

    exit_status = 1


class SelectionError(CourseError):
    """A lesson or student named on the command line that the course does not have."""

    exit_status = 2


class UnnamedHiddenTest(CourseError):
    """A test cell holds hidden tests but its metadata names none (``metadata.attention_course.spec``)."""


class GradebookError(CourseError):
    """The gradebook cannot be used as it is (stale hidden tests, a lesson that cannot be added)."""


class ClusterError(CourseError):
    """The Dask cluster cannot be reached, or none of its workers can grade."""


class CourseBusy(CourseError):
    """Another ``make grade`` holds the course (its lock); nothing was done."""

    exit_status = 75            # EX_TEMPFAIL: try again later


def exit_status(action, command=""):
    """For a command line: run ``action()``; 0, or a ``CourseError``'s message on stderr (after
    ``command``, if given) and its exit status."""
    try:
        action()
    except CourseError as exc:
        print(f"{command}: {exc}" if command else str(exc), file=sys.stderr)
        return exc.exit_status
    return 0
