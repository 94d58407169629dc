"""The grading service's runs of ``make grade``, shaped for a stream of submissions.

- ``KeptPools``: ``make grade``'s workers (this machine's, or the Dask cluster's), kept warm from
  one submission to the next.
- Each submission is graded by a *narrow* run (``cli.grade._run(..., narrow=True)``): only that
  learner's folder of that lesson is read, nothing class-wide is written, so a submission costs
  the same in a class of ten or of a thousand.
- ``ClassFiles``: the class-wide files a run of ``make grade`` ends with (``grades.csv``,
  ``grades-by-learner.csv``, the change log in ``history/``) are written once the queue empties
  (and when the service stops), for everything graded since the last time; the gradebook is
  copied once before the first submission of such a burst changes it.
- ``LooksWhileGrading``: while a run grades, the inbound folder is still watched; what arrives is
  queued and the live table refreshed at once, with each queued learner's wait so far.
"""
import threading

from ..run.backups import GradebookBackup
from ..run.intake import scan
from ..store import roster as rosters
from . import publish_history
from .grade import RunRecord
from .publish import publish


class KeptPools:
    """``make grade``'s workers, kept warm from one submission to the next (a run closes its pools
    when it ends; the service's live as long as it does)."""

    def __init__(self, pools):
        self.pools, self.args = pools, pools.args

    def get(self):
        return self.pools.get()

    def close(self, at_once=False):
        if at_once:
            self.pools.close(at_once=True)


class ClassFiles:
    """What the narrow runs did since the class-wide files were last written, and writing them."""

    def __init__(self, course, log):
        self.course, self.log = course, log
        # A RunRecord gathering the narrow runs' doings. At the start, one already: a service
        # killed before it wrote them has them written at the first empty queue (the gradebook
        # was copied as the service started).
        self.pending = RunRecord(course.root, [], [])
        self.students = set()

    def before_grading(self):
        """A submission is about to change the gradebook: the first of a burst copies it, as every
        run of make grade does before it changes anything."""
        if self.pending is None:
            self.pending = RunRecord(self.course.root, [], [])
            self.pending.backup = GradebookBackup(config=self.course.config).make(self.course.db_url)
            self.students = set()

    def add(self, run):
        """Gather what the narrow run ``run`` did."""
        pending = self.pending
        if pending is None:
            return
        pending.lessons = sorted(set(pending.lessons) | set(run.lessons))
        self.students.update(s for s, _ in [*run.graded, *run.failed])
        pending.attempts.update(run.attempts)
        pending.second_attempts.update(run.second_attempts)
        pending.off_roster = sorted(set(pending.off_roster) | set(run.off_roster))
        for key in run.graded:
            pending.failed.pop(key, None)
        pending.failed.update(run.failed)

    def write(self):
        """grades.csv, grades-by-learner.csv and the change log, as make grade writes them; nothing
        when nothing was graded since the last time. The only class-wide work of the service."""
        from nbgrader.api import Gradebook

        pending, self.pending = self.pending, None
        if pending is None:
            return False
        course = self.course
        units, problems = scan(course.root, course.lessons, limits=course.intake)
        with Gradebook(course.db_url, course.course_id) as gb:
            enrolled = rosters.enrolled(gb)
        submitted = {u.student for u in units} | {p.student for p in problems if p.student and p.lesson and p.fatal}
        apart = rosters.kept_apart(course.config, enrolled, submitted, rosters.from_submissions(course.root))
        pending.problems = [p for p in problems if p.student not in apart]
        pending.failed = {**{(p.student, p.lesson): p.message for p in pending.problems if p.fatal}, **pending.failed}
        pending.before = publish_history.scores_before(course)      # as the last write left them
        publish(pending, course, False, sorted(self.students), self.log)
        publish_history.log_changes(pending, course, self.log)
        return True


class LooksWhileGrading:
    """``with LooksWhileGrading(service):`` a thread that, while the body grades, looks at the
    inbound folder at each change (or every ``poll_seconds``), queues what arrived and refreshes
    the live table. The service's state is touched under ``service.lock`` only."""

    def __init__(self, service):
        self.service = service
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._look, name="service-looks", daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.service.watcher.changed.set()          # wake its wait now
        self.thread.join()

    def _look(self):
        service = self.service
        while not self.stopping.is_set():
            service.watcher.wait(service.settings.poll_seconds)
            if self.stopping.is_set():
                return
            with service.lock:
                try:
                    service.look()
                    service.show()
                except Exception as exc:       # never the grading's concern: said in the table
                    service.failures.append(f"looking at the inbound folder failed: {type(exc).__name__}: {exc}")
