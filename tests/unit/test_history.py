"""store.history (every attempt kept, the change log) and store.roster (who is in the class), in
process; tests/test_term.py walks both on a graded class."""
import json

from traitlets.config import Config

from attention_grading.hidden.attempts import Attempt
from attention_grading.results import GRADED, UNGRADABLE, CheckResult, GradingResult
from attention_grading.store import history, roster


def _result(score, status=GRADED, failure=None):
    check = CheckResult(grade_id="softmax_hidden", exercise="softmax", kind="hidden", max_points=2.0,
                        points=score, status="passed" if score else "failed", message="", diagnosis=None)
    return GradingResult("bob", "01", status, score=score, max_score=2.0, checks=[check], failure=failure,
                         timestamp="2026-01-10 12:00:00", submission_sha256="abc")


def test_each_attempt_has_a_folder_of_its_own_and_a_refusal_stands_until_one_is_graded(tmp_path):
    """Two attempts, two folders; a failed third writes refused.json (the last good grade stands)
    without touching the others; a fourth graded one takes it away."""
    history.keep_graded(tmp_path, _result(0.0), Attempt(1, "d1", "t"), b"one", b"{}", penalty=None)
    history.keep_graded(tmp_path, _result(2.0), Attempt(2, "d2", "t"), b"two", b"{}", penalty=0.5)
    history.keep_failed(tmp_path, _result(0.0, UNGRADABLE, "not JSON"), Attempt(3, "d3", "t"), b"x",
                        earlier_grade_stands=True)
    records = history.attempts(tmp_path, "bob", "01")
    assert [r["attempt"] for r in records] == [1, 2, 3]
    assert records[1]["score"] == 1.5 and records[1]["verdicts"][0]["status"] == "passed"
    assert records[2]["status"] == UNGRADABLE and records[2]["failure"] == "not JSON"
    assert history.refused(tmp_path) == {("bob", "01"): "not JSON"}
    history.keep_page(tmp_path, "bob", "01", b"<html>page</html>")
    assert (tmp_path / "history" / "bob" / "01" / "2" / "01.html").read_bytes() == b"<html>page</html>"
    history.keep_graded(tmp_path, _result(2.0), Attempt(4, "d4", "t"), b"four", b"{}")
    assert history.refused(tmp_path) == {}
    assert json.loads((tmp_path / "history" / "bob" / "01" / "1" / "attempt.json").read_text())["score"] == 0.0


def test_the_change_log_says_old_to_new_resubmissions_refusals_and_the_roster(tmp_path):
    """old → new for every changed score, the attempt of a resubmission, a refused resubmission
    with the grade that stands, an account kept apart; saved per run and appended."""
    lines = history.change_lines({("bob", "01"): 4.5, ("amy", "01"): 3.0},
                                 {("bob", "01"): 7.5, ("amy", "01"): 3.0, ("cy", "01"): 2.0},
                                 {("bob", "01"): 2, ("cy", "01"): 1}, {("amy", "01"): "not JSON"}, [("root", "01")])
    assert lines == ["bob 01: 4.5 → 7.5 (attempt 2)", "cy 01: – → 2 (attempt 1)",
                     "amy 01: resubmission NOT GRADED (not JSON); the last good grade 3 stands",
                     "root 01: not on the roster, kept apart (no grade)"]
    first = history.write_changes(tmp_path, lines)
    assert first.read_text().splitlines() == lines
    assert history.write_changes(tmp_path, []) is None
    assert (tmp_path / "history" / "changes.log").read_text().count("bob 01: 4.5 → 7.5") == 1
    assert history.last_scores(tmp_path) is None                   # before the first run
    history.save_scores(tmp_path, {("bob", "01"): 7.5, ("amy", "01"): 3.0})
    assert history.last_scores(tmp_path) == {("bob", "01"): 7.5, ("amy", "01"): 3.0}


def test_the_roster_keeps_apart_accounts_not_on_it():
    """Not on a non-empty roster: kept apart ('refuse', the default), or added ('add'); an empty
    roster keeps no one apart."""
    assert roster.kept_apart(Config(), {"alice"}, {"alice", "root"}) == {"root"}
    assert roster.kept_apart(Config(), set(), {"alice", "root"}) == set()
    config = Config()
    config.Roster.off_roster = "add"
    assert roster.kept_apart(config, {"alice"}, {"alice", "root"}) == set()
    assert roster.added(config, {"alice"}, {"alice", "root"}) == {"root"}


def test_a_roster_taken_from_the_submissions_takes_new_accounts_until_the_instructor_adds_one(tmp_path, db_url):
    """No roster imported: each run puts new accounts on it (recorded), so a learner who submits
    later joins; a student the grader did not add makes the roster the instructor's, which decides."""
    from nbgrader.api import Gradebook

    roster.enroll(tmp_path, db_url, "course", {"alice"})
    with Gradebook(db_url, "course") as gb:
        on_roster = roster.enrolled(gb)
    taken = roster.from_submissions(tmp_path)
    assert on_roster == taken == {"alice"} and not roster.instructors(on_roster, taken)
    assert roster.kept_apart(Config(), on_roster, {"alice", "dave"}, taken) == set()
    roster.enroll(tmp_path, db_url, "course", {"dave"})
    assert roster.from_submissions(tmp_path) == {"alice", "dave"}
    with Gradebook(db_url, "course") as gb:
        gb.add_student("bob")                       # the instructor adds a learner
        on_roster = roster.enrolled(gb)
    taken = roster.from_submissions(tmp_path)
    assert roster.instructors(on_roster, taken)
    assert roster.kept_apart(Config(), on_roster, {"alice", "root"}, taken) == {"root"}


def test_a_runs_roster_decision_names_whom_it_keeps_apart_and_whom_it_adds(tmp_path):
    """``roster.decide``: with an imported roster, an unknown account is kept apart and named; with
    none, everyone who submitted is the class and the run says it takes the roster from them."""
    decision = roster.decide(Config(), tmp_path, {"alice"}, {"alice", "root"})
    assert decision.apart == {"root"} and decision.roster == ["alice"] and decision.imported
    (line,) = decision.warnings([("root", "01")])
    assert line.startswith("[not on the roster] root: 01 kept apart: no grade")
    decision = roster.decide(Config(), tmp_path, set(), {"alice", "root"})
    assert decision.apart == set() and decision.added == ["alice", "root"] and not decision.imported
    assert decision.warnings([]) == ["[warning] no roster imported (import one with `nbgrader db student import`): "
                                     "the roster is taken from the submissions; put on it: alice, root"]


def test_the_change_log_reads_the_resubmissions_once_whatever_the_class():
    """A class of 90,000 submissions: the resubmissions are read once, not once per submission
    (that was quadratic, hours at 90,000)."""
    class Counted(list):
        reads = 0

        def __iter__(self):
            Counted.reads += 1
            return super().__iter__()

    before = {(f"s{i:04d}", "01"): 1.0 for i in range(1000)}
    after = {key: 2.0 for key in before}
    resubmitted = Counted([(key, 2) for key in list(before)[:10]])
    lines = history.change_lines(before, after, resubmitted)
    assert len(lines) == 1000 and lines[0].endswith("(attempt 2)")
    assert Counted.reads <= 2
