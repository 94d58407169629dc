"""The course's grade export, as an nbgrader export plugin (``c.ExportApp.plugin_class`` in
``nbgrader_config.py``): ``nbgrader export`` and ``make grade`` write the same ``grades.csv`` and
``grades-by-learner.csv`` (``store.grades_table`` says what they hold).

Scores come from the gradebook (``store.gradebook.final_scores``: penalties and manual grades
included); learners from the gradebook (a roster imported with ``nbgrader db student import``
gives them names and e-mails) and from ``submitted/``; why a submission could not be graded from
what ``intake`` finds in ``submitted/`` and what the grader recorded in ``autograded/``.
"""
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.plugins import ExportPlugin
from traitlets import Enum, List, Unicode

from ..store import grades_table as output
from ..results import NOT_SUBMITTED, UNGRADABLE


class CourseGradesExport(ExportPlugin):
    """grades.csv (one row per learner × lesson) and grades-by-learner.csv (for a learning-
    management system) from the gradebook and the course folder."""

    learner_file = Unicode("grades-by-learner.csv",
                           help="The file for a learning-management system's import, one row per "
                                "learner; relative to the folder of grades.csv (ExportPlugin.to).").tag(config=True)
    lms_lessons = List(Unicode(), help="Lessons to put in grades-by-learner.csv whatever their state. Empty "
                                       "(the default): the lessons that count now (CourseGradesExport."
                                       "lms_counts).").tag(config=True)
    lms_counts = Enum(["due", "released"], "due",
                      help="Which lessons grades-by-learner.csv counts when lms_lessons is empty. 'due' (the "
                           "default): a lesson whose due date has passed, and no other (a lesson without a due "
                           "date counts once it has one and it has passed), so releasing a lesson never lowers "
                           "a learner's percentage before anything is due. 'released': also a lesson without a "
                           "due date that was released through the exchange or submitted by "
                           "someone.").tag(config=True)

    def export(self, gradebook):
        """``nbgrader export``: the course folder is the one nbgrader runs in."""
        coursedir = getattr(self.parent, "coursedir", None)
        root = coursedir.root if coursedir is not None else self.config.CourseDirectory.get("root", ".")
        self.write(gradebook, root)

    def write(self, gradebook, root, problems=None, results=None, notes=None, now=None):
        """Write both files for the class; return (rows of grades.csv, lessons of the LMS file).

        ``problems`` (``intake.Problem``) and ``results`` ({(student, lesson): GradingResult}) are
        read from the course folder when not given; ``notes``: more to say per submission."""
        from ..store import gradebook as books
        from ..store import history
        from ..store import roster
        from ..course import lesson_ids
        from ..run.intake import IntakeLimits, scan

        root = Path(root)
        lessons = lesson_ids(root)
        if problems is None:
            _, problems = scan(root, lessons, limits=IntakeLimits(parent=self))
        if results is None:
            results = books.load_results(root)
        students = {s.id: {k: getattr(s, k) for k in output.NAMES} for s in gradebook.students}
        apart = roster.kept_apart(self.config, set(students), {p.student for p in problems if p.lesson and p.fatal},
                                 roster.from_submissions(root))
        problems = [p for p in problems if p.student not in apart]      # not on the roster: in no output
        for student in sorted({p.student for p in problems if p.student} | {s for s, _ in results}):
            students.setdefault(student, {})
        students = dict(sorted(students.items()))
        failed = {(p.student, p.lesson): p.message for p in problems if p.fatal and p.lesson}
        for key, result in results.items():
            if result.status == UNGRADABLE:
                failed.setdefault(key, result.failure or "could not be graded")
        notes = dict(notes or {})
        for key, result in results.items():
            if result.first_failure and key not in failed:
                notes.setdefault(key, f"graded on a second attempt; the first failed: {result.first_failure}")
        scores = books.final_scores(gradebook, lessons, students, self.config)
        refused = {**history.refused(root), **failed}
        for key, why in refused.items():        # a resubmission not graded: the last good grade stands
            if key in scores and key in results and results[key].status != UNGRADABLE:
                failed.pop(key, None)
                notes[key] = f"a resubmission could not be graded ({why}); the last good grade stands"
        record = output.ClassRecord(lessons, students, scores, books.lesson_maxima(gradebook, lessons), failed, notes)
        rows = output.class_rows(record)
        chosen = [r for r in rows if (not self.student or r["student"] in map(str, self.student))
                  and (not self.assignment or r["lesson"] in map(str, self.assignment))]
        grades = Path(self.to) if self.to else root / "grades.csv"
        self.log.info("Exporting grades to %s", grades)
        output.write_csv(grades, output.FIELDS, chosen)
        lms = self.lms_lessons or self.open_lessons(record, rows, now)
        lms = [lesson for lesson in lessons if lesson in lms and
               (not self.assignment or lesson in map(str, self.assignment))]
        output.write_csv(grades.parent / self.learner_file, output.learner_fields(lms),
                         output.learner_rows(chosen, lms))
        return rows, lms

    def open_lessons(self, record, rows, now=None):
        """The lessons a learning-management system should get (``lms_counts``): due (the due
        date has passed), or with 'released', also without a due date and released through the
        exchange or submitted by someone."""
        now = now or datetime.now(timezone.utc).replace(tzinfo=None)      # nbgrader's due dates: naive UTC
        exchange = Path(self.config.Exchange.get("root", "/srv/nbgrader/exchange"))
        course = self.config.CourseDirectory.get("course_id", "")
        submitted = {r["lesson"] for r in rows if r["status"] != NOT_SUBMITTED}
        chosen = []
        for lesson in record.lessons:
            due = record.lessons_info[lesson][1]
            if due is not None:
                if due <= now:
                    chosen.append(lesson)
            elif self.lms_counts == "released" and ((exchange / course / "outbound" / lesson).is_dir()
                                                     or lesson in submitted):
                chosen.append(lesson)
        return chosen
