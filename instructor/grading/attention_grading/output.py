"""What ``make grade`` writes for people: ``grades.csv`` and ``grades-by-learner.csv`` (the whole
class, every run) and the table.

``grades.csv`` has one row per student × lesson: score, maximum, status (graded, needs manual
grading, ungradable, not submitted), the student's totals, and a note saying why a submission
could not be graded (or what else happened). A run limited to some students or lessons still
writes every row of the class, from the gradebook.

``grades-by-learner.csv`` is the same grades shaped for a learning-management system's import:
one row per student, a points and a percent column per lesson, the totals, and a note. A lesson
that could not be graded has empty cells (no grade to import, rather than a 0 the learner may not
deserve) and the note says why; the totals count it as 0, as grades.csv does.
"""
import csv

from .results import GRADED, NEEDS_MANUAL, NOT_SUBMITTED, UNGRADABLE

FIELDS = ["student", "lesson", "score", "max_score", "status", "student_total", "student_max_total", "note"]


def class_rows(lessons, students, scores, maxima, failed, notes=None):
    """The rows of grades.csv: ``scores`` {(student, lesson): (score, max, needs_manual)} from the
    gradebook, ``failed`` {(student, lesson): why}, ``notes`` anything else to say."""
    notes = {**(notes or {}), **failed}
    rows = []
    for student in students:
        student_rows = []
        for lesson in lessons:
            if (student, lesson) in failed:
                status, score, top = UNGRADABLE, 0.0, maxima[lesson]
            elif (student, lesson) in scores:
                score, top, manual = scores[student, lesson]
                status = NEEDS_MANUAL if manual else GRADED
            else:
                status, score, top = NOT_SUBMITTED, 0.0, maxima[lesson]
            student_rows.append({"student": student, "lesson": lesson, "score": round(score, 4),
                                 "max_score": round(top, 4), "status": status,
                                 "note": notes.get((student, lesson), "")})
        total = sum(r["score"] for r in student_rows)
        top_total = sum(r["max_score"] for r in student_rows)
        for row in student_rows:
            row["student_total"] = round(total, 4)
            row["student_max_total"] = round(top_total, 4)
        rows.extend(student_rows)
    return rows


def write_grades(path, rows):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def learner_fields(lessons):
    return ["student", *(f"{lesson} {kind}" for lesson in lessons for kind in ("points", "percent")),
            "total points", "total max points", "total percent", "note"]


def _percent(score, top):
    return round(100 * score / top, 2) if top else ""


def learner_rows(rows, lessons):
    """The rows of grades-by-learner.csv, made from grades.csv's ``rows``."""
    by = {(r["student"], r["lesson"]): r for r in rows}
    out = []
    for student in dict.fromkeys(r["student"] for r in rows):
        line, notes = {"student": student}, []
        for lesson in lessons:
            r = by[student, lesson]
            if r["status"] == UNGRADABLE:
                line[f"{lesson} points"] = line[f"{lesson} percent"] = ""
                notes.append(f"{lesson} could not be graded (counted as 0 in the totals): {r['note']}")
            else:
                line[f"{lesson} points"] = r["score"]
                line[f"{lesson} percent"] = _percent(r["score"], r["max_score"])
        first = by[student, lessons[0]]
        line["total points"] = first["student_total"]
        line["total max points"] = first["student_max_total"]
        line["total percent"] = _percent(first["student_total"], first["student_max_total"])
        line["note"] = "; ".join(notes)
        out.append(line)
    return out


def write_grades_by_learner(path, rows, lessons):
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=learner_fields(lessons))
        writer.writeheader()
        writer.writerows(learner_rows(rows, lessons))


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
                mark = "*" if r["status"] == NEEDS_MANUAL else ""
                line.append(f"{r['score']:g}/{r['max_score']:g}{mark}")
        first = by[student, lessons[0]]
        line.append(f"{first['student_total']:g}/{first['student_max_total']:g}")
        table.append(line)
    widths = [max(len(str(x)) for x in column) for column in zip(header, *table)]
    out = ["  ".join(str(x).ljust(w) for x, w in zip(header, widths))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in table]
    out.append("(* written answers still need manual grading; -- not submitted; !! could not be graded)")
    return "\n".join(out)


def print_summary(run, log):
    """The end of ``make grade``'s output: counts, then what needs the instructor's attention."""
    failed_now = run.failed_in_selection
    log("")
    log(f"graded {len(run.graded)}, skipped {run.skipped}, could not grade {len(failed_now)} "
        f"in {run.seconds:.1f} s; wrote {run.root / 'grades.csv'} and grades-by-learner.csv")
    if not run.sandboxed:
        log("WARNING: this run graded WITHOUT a sandbox (--unsandboxed).")
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
    if run.feedback_failures:
        log(f"\n{len(run.feedback_failures)} feedback file(s) could not be generated:")
        for student, lesson, message in run.feedback_failures:
            log(f"  {student} / {lesson}: {message}")
