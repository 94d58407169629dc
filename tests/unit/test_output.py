"""output and export: grades.csv's rows from the gradebook's final scores, the LMS file over the
open lessons only, the table's marks, the lessons a learning-management system gets."""
import datetime

from traitlets.config import Config

from attention_grading.store import grades_table as output
from attention_grading.cli.export import CourseGradesExport
from attention_grading.store.gradebook import FinalScore

DUE = datetime.datetime(2026, 1, 5, 12, 0)


def record():
    """alice: 7.5 raw, late, 7.5 taken off; bob: 6 of 8, awaiting manual grading; carol could not
    be graded; zoe (roster only) submitted nothing. Two lessons: 01 due, 02 without a due date."""
    return output.ClassRecord(
        lessons=["01", "02"],
        students={"alice": {"first_name": "Alice", "last_name": "Ng", "email": "a@x"}, "bob": {},
                  "carol": {}, "zoe": {"first_name": "Zoe"}},
        scores={("alice", "01"): FinalScore(7.5, 7.5, 8.0, False, "2026-01-10 12:00:00"),
                ("bob", "01"): FinalScore(6.0, 0.0, 8.0, True), ("bob", "02"): FinalScore(2.0, 0.0, 4.0, False)},
        lessons_info={"01": (8.0, DUE), "02": (4.0, None)},
        failed={("carol", "01"): "malformed notebook"}, notes={("bob", "01"): "graded on a second attempt"})


def test_rows_hold_the_final_scores_names_and_penalties():
    """One row per learner × lesson: names, due date, raw score, penalty, final score, status,
    totals of final scores; failures and other notes said."""
    rows = {(r["student"], r["lesson"]): r for r in output.class_rows(record())}
    alice = rows["alice", "01"]
    assert (alice["first_name"], alice["email"], alice["duedate"]) == ("Alice", "a@x", "2026-01-05 12:00:00")
    assert (alice["raw_score"], alice["late_submission_penalty"], alice["score"]) == (7.5, 7.5, 0.0)
    assert alice["status"] == "graded" and alice["student_total"] == 0.0 and alice["student_max_total"] == 12.0
    assert rows["bob", "01"]["status"] == "needs manual grading" and rows["bob", "01"]["student_total"] == 8.0
    assert rows["bob", "01"]["note"] == "graded on a second attempt"
    assert rows["carol", "01"]["status"] == "ungradable" and rows["carol", "01"]["note"] == "malformed notebook"
    assert rows["zoe", "02"]["status"] == "not submitted" and rows["zoe", "02"]["first_name"] == "Zoe"
    assert set(alice) == set(output.FIELDS)


def test_the_lms_file_has_only_the_lessons_given_and_totals_over_them():
    """Columns and totals over the lessons a learning-management system gets; an ungradable
    lesson's cells empty, its note saying why."""
    rows = output.class_rows(record())
    learners = {r["student"]: r for r in output.learner_rows(rows, ["01"])}
    assert output.learner_fields(["01"]) == ["student", "first_name", "last_name", "email", "01 points",
                                             "01 percent", "total points", "total max points",
                                             "total percent", "note"]
    assert learners["bob"]["total points"] == 6.0 and learners["bob"]["total max points"] == 8.0
    assert learners["bob"]["01 percent"] == 75.0
    assert learners["carol"]["01 points"] == "" and "01 could not be graded" in learners["carol"]["note"]


def test_the_table_marks_late_and_awaiting():
    """'L' where a late penalty was taken off, '*' where written answers await grading."""
    table = output.format_table(output.class_rows(record()), ["01", "02"])
    lines = {line.split()[0]: line.split() for line in table.splitlines()[2:-1]}
    assert lines["alice"][1] == "0/8L" and lines["bob"][1] == "6/8*" and lines["carol"][1] == "!!"
    assert lines["zoe"][1:3] == ["--", "--"]


def test_open_lessons(tmp_path):
    """A lesson goes to the LMS when its due date has passed, never before, and never without a
    due date (lms_counts 'due', the default: releasing a lesson lowers no percentage); with
    'released', also without one when it was released through the exchange or someone submitted
    it; never when it is due later."""
    config = Config()
    config.Exchange.root = str(tmp_path)
    config.CourseDirectory.course_id = "attention"
    exporter = CourseGradesExport(config=config)
    info = {"due": (1.0, DUE), "later": (1.0, datetime.datetime(2099, 1, 1)), "released": (1.0, None),
            "submitted": (1.0, None), "nothing": (1.0, None)}
    (tmp_path / "attention" / "outbound" / "released").mkdir(parents=True)
    rec = output.ClassRecord(list(info), {"a": {}}, {}, info)
    rows = [{"lesson": lesson, "status": "graded" if lesson in ("submitted", "later") else "not submitted"}
            for lesson in info]
    now = datetime.datetime(2026, 6, 1)
    assert exporter.open_lessons(rec, rows, now) == ["due"]
    assert exporter.open_lessons(rec, rows, datetime.datetime(2020, 1, 1)) == []
    config.CourseGradesExport.lms_counts = "released"
    exporter = CourseGradesExport(config=config)
    assert exporter.open_lessons(rec, rows, now) == ["due", "released", "submitted"]


def test_the_summary_names_the_submissions_that_took_longest(tmp_path):
    """make grade's summary ends its first lines with the three longest jobs, longest first."""
    from attention_grading.cli.grade import RunRecord

    run = RunRecord(root=tmp_path, lessons=["01"], students=["a", "b", "c", "d"])
    run.job_seconds = {("a", "01"): 4.2, ("b", "01"): 95.4, ("c", "01"): 12.0, ("d", "01"): 30.6}
    said = []
    output.print_summary(run, said.append)
    assert "longest to grade: b / 01 95 s, d / 01 31 s, c / 01 12 s" in said, said
    run.job_seconds = {("a", "01"): 4.2}
    said.clear()
    output.print_summary(run, said.append)
    assert not any("longest" in line for line in said), said
