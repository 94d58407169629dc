"""What ``make grade`` and ``nbgrader export`` write for people: ``grades.csv`` and
``grades-by-learner.csv`` (the whole class; ``cli.export.CourseGradesExport`` writes them), and the
table ``make grade`` prints.

Every score is the gradebook's final one, as nbgrader's own export computes it: the autograder's
and the instructor's points (and extra credit) less the late penalty, never below 0
(``gradebook.FinalScore``).

``grades.csv`` has one row per student × lesson: the learner's names and e-mail (from the roster
imported with ``nbgrader db student import``), the lesson's due date and the submission's time,
the score before the penalty, the penalty, the score, the maximum, the status (graded, needs
manual grading, ungradable, not submitted), the student's totals, and a note saying why a
submission could not be graded (or what else happened).

``grades-by-learner.csv`` is the same grades shaped for a learning-management system's import:
one row per student, a points and a percent column per lesson that is open (released and due,
``export.CourseGradesExport.lms_lessons``), the totals over those lessons, and a note. A lesson
that could not be graded has empty cells (no grade to import, rather than a 0 the learner may not
deserve) and the note says why; the totals count it as 0, as grades.csv does.
"""
import csv
from dataclasses import dataclass, field

from ..results import GRADED, NEEDS_MANUAL, NOT_SUBMITTED, UNGRADABLE

LONGEST_JOBS_SHOWN = 3      # make grade's summary names the submissions that took longest
NAMES = ["first_name", "last_name", "email"]
FIELDS = ["student", *NAMES, "lesson", "duedate", "timestamp", "raw_score", "late_submission_penalty",
          "score", "max_score", "status", "student_total", "student_max_total", "note"]


@dataclass
class ClassRecord:
    """Everything the class files are made from, read once."""
    lessons: list                                     # every lesson, in course order
    students: dict                                    # {student: {first_name, last_name, email}}, in order
    scores: dict                                      # {(student, lesson): gradebook.FinalScore}
    lessons_info: dict                                # {lesson: (max score, due date or None)}
    failed: dict = field(default_factory=dict)        # {(student, lesson): why it could not be graded}
    notes: dict = field(default_factory=dict)         # {(student, lesson): anything else to say}


def _number(value):
    return round(float(value), 4)


def class_rows(record):
    """The rows of grades.csv, one per student × lesson of ``record``."""
    notes = {**record.notes, **record.failed}
    rows = []
    for student, names in record.students.items():
        student_rows = []
        for lesson in record.lessons:
            top, due = record.lessons_info[lesson]
            score = record.scores.get((student, lesson))
            row = {"student": student, **{k: names.get(k) or "" for k in NAMES}, "lesson": lesson,
                   "duedate": due.isoformat(sep=" ") if due else "", "timestamp": "",
                   "raw_score": 0.0, "late_submission_penalty": 0.0, "score": 0.0, "max_score": _number(top),
                   "note": notes.get((student, lesson), "")}
            if (student, lesson) in record.failed:
                row["status"] = UNGRADABLE
            elif score is not None:
                row.update(status=NEEDS_MANUAL if score.needs_manual else GRADED, timestamp=score.timestamp or "",
                           raw_score=_number(score.raw), late_submission_penalty=_number(score.penalty),
                           score=_number(score.score), max_score=_number(score.max_score))
            else:
                row["status"] = NOT_SUBMITTED
            student_rows.append(row)
        total = sum(r["score"] for r in student_rows)
        top_total = sum(r["max_score"] for r in student_rows)
        for row in student_rows:
            row["student_total"], row["student_max_total"] = _number(total), _number(top_total)
        rows.extend(student_rows)
    return rows


def write_csv(path, fields, rows):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def learner_fields(lessons):
    return ["student", *NAMES, *(f"{lesson} {kind}" for lesson in lessons for kind in ("points", "percent")),
            "total points", "total max points", "total percent", "note"]


def _percent(score, top):
    return round(100 * score / top, 2) if top else ""


def learner_rows(rows, lessons):
    """The rows of grades-by-learner.csv, made from grades.csv's ``rows``, with the ``lessons``
    that go to the learning-management system (totals over those lessons only)."""
    by, firsts = {(r["student"], r["lesson"]): r for r in rows}, {}
    for r in rows:
        firsts.setdefault(r["student"], r)
    out = []
    for student, first in firsts.items():
        line, notes = {"student": student, **{k: first[k] for k in NAMES}}, []
        total = top_total = 0.0
        for lesson in lessons:
            r = by[student, lesson]
            total, top_total = total + r["score"], top_total + r["max_score"]
            if r["status"] == UNGRADABLE:
                line[f"{lesson} points"] = line[f"{lesson} percent"] = ""
                notes.append(f"{lesson} could not be graded (counted as 0 in the totals): {r['note']}")
            else:
                line[f"{lesson} points"] = r["score"]
                line[f"{lesson} percent"] = _percent(r["score"], r["max_score"])
        line["total points"], line["total max points"] = _number(total), _number(top_total)
        line["total percent"] = _percent(total, top_total)
        line["note"] = "; ".join(notes)
        out.append(line)
    return out


def format_table(rows, lessons):
    """Students x lessons, scores as 'score/max', a totals column; '--' not submitted, '!!' ungradable."""
    students = list(dict.fromkeys(r["student"] for r in rows))
    by = {(r["student"], r["lesson"]): r for r in rows}
    header = ["student", *lessons, "total"]
    table = []
    for student in students:
        line = [student]
        for lesson in lessons:
            r = by[student, lesson]
            if r["status"] == UNGRADABLE:
                line.append("!! failed")
            elif r["status"] == NOT_SUBMITTED:
                line.append("--")
            else:
                mark = ("*" if r["status"] == NEEDS_MANUAL else "") + ("L" if r["late_submission_penalty"] else "")
                line.append(f"{r['score']:g}/{r['max_score']:g}{mark}")
        first = by[student, lessons[0]]
        line.append(f"{first['student_total']:g}/{first['student_max_total']:g}")
        table.append(line)
    widths = [max(len(str(x)) for x in column) for column in zip(header, *table)]
    out = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in table]
    out.append("(* written answers still need manual grading; L late: the penalty is taken off; "
               "-- not submitted; !! could not be graded)")
    return "\n".join(out)


def print_summary(run, log):
    """The end of ``make grade``'s output: counts, then what needs the instructor's attention."""
    failed_now = run.failed_in_selection
    log("")
    graded = "" if run.feedback_only else (f"graded {len(run.graded)}, skipped {run.skipped}, could not grade "
                                           f"{len(failed_now)}; ")
    beside = getattr(run, "pages_beside", 0)
    beside = f", {beside} of them begun while submissions were still to be graded," if beside else ""
    log(f"{graded}feedback pages written {run.feedback_written} ({run.feedback_current} already up to date){beside} "
        f"in {run.seconds:.1f} s; wrote {run.root / 'grades.csv'} and grades-by-learner.csv "
        f"({len(run.lms_lessons)} lesson(s) open: {', '.join(run.lms_lessons) or 'none'})")
    if run.backup:
        log(f"the gradebook as it was before this run: {run.backup}")
    if len(run.job_seconds) > 1:     # where the time went: often a loop that ran to its limits
        longest = sorted(run.job_seconds.items(), key=lambda item: -item[1])[:LONGEST_JOBS_SHOWN]
        log("longest to grade: " + ", ".join(f"{student} / {lesson} {seconds:.0f} s"
                                             for (student, lesson), seconds in longest))
    if not run.sandboxed:
        log("WARNING: this run graded WITHOUT a sandbox (--unsandboxed).")
    if run.kept_manual:
        log(f"\nkept the manual grades of {sum(map(len, run.kept_manual.values()))} written answer(s) whose "
            "text did not change:")
        for (student, lesson), cells in sorted(run.kept_manual.items()):
            log(f"  {student} / {lesson}: {', '.join(cells)}")
    if run.changed_manual:
        log(f"\n{sum(map(len, run.changed_manual.values()))} written answer(s) graded by hand have changed "
            "since: their grade is kept but needs confirming in the formgrader:")
        for (student, lesson), cells in sorted(run.changed_manual.items()):
            log(f"  {student} / {lesson}: {', '.join(cells)}")
    if run.second_attempts:
        log(f"\n{len(run.second_attempts)} submission(s) graded on a second attempt "
            f"(the first one's log is in grading-report/logs/):")
        for (student, lesson), message in sorted(run.second_attempts.items()):
            log(f"  {student} / {lesson}: first attempt: {message}")
    if failed_now:
        log(f"\n{len(failed_now)} submission(s) could NOT be graded:")
        for (student, lesson), message in sorted(failed_now.items()):
            log(f"  {student} / {lesson}: {message}")
    if run.cluster_lost:
        log(f"\nSTOPPED: {run.cluster_lost}. What was graded is saved; {len(run.not_graded)} "
            "submission(s) were not graded: run make grade again once the cluster is back (or "
            "without --scheduler) to grade them.")
    if run.interrupted:
        log(f"\nSTOPPED by Ctrl-C: the {len(run.graded)} submission(s) graded before it are saved, "
            f"{len(run.not_graded)} were not graded; grades.csv holds what is saved. Run make grade again "
            "to go on (what is saved is skipped).")
    if run.feedback_failures:
        log(f"\n{len(run.feedback_failures)} feedback file(s) could not be generated:")
        for student, lesson, message in run.feedback_failures:
            log(f"  {student} / {lesson}: {message}")
