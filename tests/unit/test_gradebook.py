"""gradebook and standing: a submission's standing as data (read, carried, seeded), manual grades
kept across a regrade, late penalties as nbgrader's AssignLatePenalties sets them, final scores as
nbgrader's export computes them."""
import datetime
import os
import shutil

import pytest
from traitlets.config import Config

from attention_grading.store import gradebook as books
from attention_grading.store import grades
from attention_grading.store import standing

from . import factories
from .conftest import COURSE_ID, resources, store_lesson

LESSON = "01_context_vectors"


def _submission(db_url, student="alice", timestamp="2026-01-10 12:00:00 UTC", due="2026-01-05 12:00:00 UTC"):
    from nbgrader.api import Gradebook

    with Gradebook(db_url, COURSE_ID) as gb:
        gb.update_or_create_assignment(LESSON, duedate=due)
        gb.update_or_create_student(student, first_name="Alice", email="a@uni.example")
        gb.update_or_create_submission(LESSON, student, timestamp=timestamp)


def _graded(db_url, nb, student="alice"):
    """nb's grades saved as nbgrader autograde saves them (SaveAutoGrades)."""
    from nbgrader.preprocessors import SaveAutoGrades

    SaveAutoGrades().preprocess(nb, resources(db_url, student=student))


def _by_hand(db_url, grade_id, points, comment=None, student="alice"):
    from nbgrader.api import Gradebook

    with Gradebook(db_url, COURSE_ID) as gb:
        grade = gb.find_grade(grade_id, LESSON, LESSON, student)
        grade.manual_score, grade.needs_manual_grade = points, False
        if comment:
            gb.find_comment(grade_id, LESSON, LESSON, student).manual_comment = comment
        gb.db.commit()


def _read(db_url, student="alice"):
    from nbgrader.api import Gradebook

    with Gradebook(db_url, COURSE_ID) as gb:
        return standing.read(gb, LESSON, student)


@pytest.fixture
def hand_graded(stored_lesson):
    """(db_url, the learner's notebook): alice's late submission, autograded, her written answer
    graded 0.5 by hand with a comment, and an extension of one day."""
    from nbgrader.api import Gradebook

    db_url, nb, _ = stored_lesson
    _submission(db_url)
    learner = factories.lesson(written=("self_weight_answer",))
    learner.cells[-1].source = "My own answer."
    _graded(db_url, learner)
    _by_hand(db_url, "self_weight_answer", 0.5, "Half: see lesson 03.")
    with Gradebook(db_url, COURSE_ID) as gb:
        gb.grant_extension(LESSON, "alice", days=1)
    return db_url, learner


def test_a_standing_travels_as_data_and_seeds_the_same_submission(hand_graded, tmp_path, _empty_gradebook):
    """What a job carries (JSON-friendly) seeds a scratch gradebook holding the lesson with the
    same standing: grades, manual grades, comments, timestamp, extension."""
    import json

    db_url, _ = hand_graded
    before = _read(db_url)
    carried = standing.Standing.from_dict(json.loads(json.dumps(before.as_dict())))
    scratch = tmp_path / "scratch.db"
    shutil.copyfile(_empty_gradebook, scratch)
    store_lesson(f"sqlite:///{scratch}", factories.lesson())
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{scratch}", COURSE_ID) as gb:
        standing.seed(gb, carried)
    assert _read(f"sqlite:///{scratch}") == before
    assert before.extension_seconds == 86400.0 and before.names["first_name"] == "Alice"
    assert before.grades[LESSON]["self_weight_answer"] == [None, 0.5, None, False]
    assert before.comments[LESSON]["self_weight_answer"] == [None, "Half: see lesson 03."]


def test_the_digest_follows_what_a_page_shows(hand_graded):
    """A manual grade or a comment changes the digest; a learner's name does not."""
    from nbgrader.api import Gradebook

    db_url, _ = hand_graded
    first = _read(db_url).digest()
    with Gradebook(db_url, COURSE_ID) as gb:
        gb.update_or_create_student("alice", last_name="Ng")
    assert _read(db_url).digest() == first
    _by_hand(db_url, "self_weight_answer", 1.0)
    assert _read(db_url).digest() != first


def test_a_regrade_keeps_the_manual_grade_of_an_unchanged_answer(hand_graded):
    """nbgrader's SaveAutoGrades flags a manually graded answer for review again; the course puts
    it back as the instructor left it when the text is the one graded, and leaves it flagged (its
    score kept) when the learner changed it."""
    from nbgrader.api import Gradebook

    db_url, learner = hand_graded
    prior, answered = _read(db_url), standing.answer_digests(learner)
    _graded(db_url, learner)                                   # the regrade
    assert _read(db_url).grades[LESSON]["self_weight_answer"][3] is True
    with Gradebook(db_url, COURSE_ID) as gb:
        kept, changed = grades.keep_confirmed_answers(gb, learner, LESSON, "alice", prior, answered)
    assert (kept, changed) == (["self_weight_answer"], [])
    assert _read(db_url).grades[LESSON]["self_weight_answer"] == [None, 0.5, None, False]

    learner.cells[-1].source = "A new answer."
    _graded(db_url, learner)
    with Gradebook(db_url, COURSE_ID) as gb:
        kept, changed = grades.keep_confirmed_answers(gb, learner, LESSON, "alice", prior, answered)
    assert (kept, changed) == ([], ["self_weight_answer"])
    assert _read(db_url).grades[LESSON]["self_weight_answer"] == [None, 0.5, None, True]


def test_late_penalties_are_nbgraders(hand_graded, tmp_path):
    """With penalty_method "zero", the course's reassessment sets exactly the penalty stock
    AssignLatePenalties (built with the same configuration) sets, before and after the extension
    runs out; without the configuration nbgrader would set none."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties

    db_url, learner = hand_graded
    config = Config()
    config.LateSubmissionPlugin.penalty_method = "zero"
    copy = tmp_path / "copy.db"
    shutil.copyfile(db_url[len("sqlite:///"):], copy)
    for extension in (1, 0):                     # one day: still late (5 days); none: late too
        for url in (db_url, f"sqlite:///{copy}"):
            with Gradebook(url, COURSE_ID) as gb:
                gb.grant_extension(LESSON, "alice", days=extension)
        with Gradebook(db_url, COURSE_ID) as gb:
            grades.late_penalty(gb, config, LESSON, "alice")
        AssignLatePenalties(config=config).preprocess(learner, resources(f"sqlite:///{copy}"))
        ours, stock = _read(db_url), _read(f"sqlite:///{copy}")
        assert ours.penalties == stock.penalties and ours.penalties[LESSON] > 0
    with Gradebook(db_url, COURSE_ID) as gb:
        gb.grant_extension(LESSON, "alice", days=10)
        grades.late_penalty(gb, config, LESSON, "alice")
    assert _read(db_url).penalties[LESSON] is None
    unconfigured = AssignLatePenalties()
    unconfigured.preprocess(learner, resources(f"sqlite:///{copy}"))
    assert _read(f"sqlite:///{copy}").penalties[LESSON] is None


def test_a_run_again_reassesses_only_the_penalties_that_can_change(hand_graded):
    """One query picks the submissions whose penalty nbgrader's step could change: late ones
    (extension counted) and ones already penalised; on every other one the step writes nothing."""
    from nbgrader.api import Gradebook

    db_url, _ = hand_graded                                     # alice: 5 days late, 1 day's extension
    config = Config()
    config.LateSubmissionPlugin.penalty_method = "zero"
    _submission(db_url, "bob", timestamp="2026-01-04 12:00:00 UTC")           # on time
    _submission(db_url, "carol", timestamp="2026-01-06 12:00:00 UTC")         # a day late, then an extension
    _submission(db_url, "dave", timestamp="2026-01-06 12:00:00 UTC")          # a day late, extension first
    with Gradebook(db_url, COURSE_ID) as gb:
        for learner in ("alice", "bob", "carol"):
            grades.late_penalty(gb, config, LESSON, learner)
        gb.grant_extension(LESSON, "carol", days=2)             # her penalty is now stale
        gb.grant_extension(LESSON, "dave", days=2)
        chosen = grades.penalties_to_reassess(gb, {LESSON, "02_not_in_the_gradebook"})
    assert chosen == {("alice", LESSON): True, ("bob", LESSON): False, ("carol", LESSON): True,
                      ("dave", LESSON): False}
    before = {learner: _read(db_url, learner).digest() for learner in ("bob", "dave")}
    with Gradebook(db_url, COURSE_ID) as gb:
        for learner in ("bob", "dave"):
            grades.late_penalty(gb, config, LESSON, learner)
        grades.late_penalty(gb, config, LESSON, "carol")
    assert {learner: _read(db_url, learner).digest() for learner in ("bob", "dave")} == before
    assert _read(db_url, "carol").penalties[LESSON] is None


def test_final_scores_are_nbgrader_exports(hand_graded):
    """The final score is the gradebook's score less the penalty, never below 0 (nbgrader's
    CsvExportPlugin)."""
    from nbgrader.api import Gradebook

    db_url, _ = hand_graded
    config = Config()
    config.LateSubmissionPlugin.penalty_method = "zero"
    with Gradebook(db_url, COURSE_ID) as gb:
        gb.grant_extension(LESSON, "alice")
        grades.late_penalty(gb, config, LESSON, "alice")
        (score,) = books.final_scores(gb, [LESSON], ["alice", "nobody"]).values()
        gb.find_submission_notebook(LESSON, LESSON, "alice").late_submission_penalty = 100.0
        gb.db.commit()
        (clamped,) = books.final_scores(gb, [LESSON], ["alice"]).values()
    assert score.raw == score.penalty > 0 and score.score == 0.0
    assert clamped.score == 0.0 and clamped.penalty == 100.0
    assert score.timestamp == "2026-01-10 12:00:00"


def test_final_scores_with_the_course_config_follow_an_extension_given_since(hand_graded):
    """nbgrader export's penalty (final_scores with the course's configuration) is the one
    late_penalty would set now: an extension granted after grading takes the stale penalty off
    at once, without touching the gradebook's stored one (nbgrader export writes no grade)."""
    from nbgrader.api import Gradebook

    db_url, _ = hand_graded
    config = Config()
    config.LateSubmissionPlugin.penalty_method = "zero"
    with Gradebook(db_url, COURSE_ID) as gb:
        grades.late_penalty(gb, config, LESSON, "alice")
        (before,) = books.final_scores(gb, [LESSON], ["alice"], config).values()
        gb.grant_extension(LESSON, "alice", days=30)
        (stored,) = books.final_scores(gb, [LESSON], ["alice"]).values()
        (now,) = books.final_scores(gb, [LESSON], ["alice"], config).values()
    assert before.penalty == before.raw > 0 and before.score == 0.0
    assert stored.penalty == before.penalty                   # the gradebook still holds the old one
    assert now.penalty == 0.0 and now.score == now.raw > 0


def test_backups_keep_the_newest_copies(db_url, tmp_path):
    """A consistent copy of the SQLite gradebook per call, the newest ``keep`` kept; none for a
    database that is not SQLite."""
    from attention_grading.run.backups import GradebookBackup

    backup = GradebookBackup(keep=2, folder=str(tmp_path / "copies"))
    made = [backup.make(db_url) for _ in range(3)]
    assert sorted((tmp_path / "copies").iterdir()) == made[1:]
    assert made[-1].read_bytes()[:16] == b"SQLite format 3\x00"
    assert GradebookBackup().make("postgresql+psycopg2://grader@db/attention") is None


def test_the_course_lock_is_held_once_and_dies_with_its_holder(tmp_path):
    """A second holder is refused while the first lives (CourseBusy names it); when the holder
    process ends, even killed, the lock is free."""
    import signal

    from attention_grading.errors import CourseBusy
    from attention_grading.run.lock import course_lock

    pid = os.fork()
    if pid == 0:                                   # the first holder: holds, then is killed
        with course_lock(tmp_path):
            os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    os.waitpid(pid, os.WUNTRACED)
    with pytest.raises(CourseBusy, match=f"pid {pid}"):
        with course_lock(tmp_path):
            pass
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    with course_lock(tmp_path) as path:
        assert path.read_text().startswith(f"pid {os.getpid()}")


def test_a_missing_gradebook_is_refused_where_results_are(db_url, tmp_path):
    """No gradebook file, or one without submissions, while autograded/ holds results: refused,
    naming both; nothing to lose (no results) or --new-gradebook: allowed."""
    from attention_grading.errors import GradebookError
    from attention_grading.run.backups import check_gradebook

    root = tmp_path / "course"
    missing = f"sqlite:///{tmp_path / 'nowhere.db'}"
    check_gradebook(missing, COURSE_ID, root)                         # nothing graded yet
    (root / "autograded" / "alice" / LESSON).mkdir(parents=True)
    (root / "autograded" / "alice" / LESSON / "grading-result.json").write_text("{}")
    with pytest.raises(GradebookError, match="nowhere.db does not exist.*autograded.*--new-gradebook"):
        check_gradebook(missing, COURSE_ID, root)
    with pytest.raises(GradebookError, match="holds no submission"):
        check_gradebook(db_url, COURSE_ID, root)
    check_gradebook(missing, COURSE_ID, root, allow_new=True)
    assert not (tmp_path / "nowhere.db").exists()


def test_duedates_are_naive_utc(db_url):
    """nbgrader stores due dates as naive UTC datetimes; the export compares them with now in UTC."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url, COURSE_ID) as gb:
        gb.update_or_create_assignment(LESSON, duedate="2026-01-05 13:00:00 Europe/Paris")
        assert books.lesson_maxima(gb, [LESSON])[LESSON][1] == datetime.datetime(2026, 1, 5, 12, 0)


def _every_row(db_url):
    """{table: sorted rows} of every table of a SQLite gradebook."""
    import sqlite3

    with sqlite3.connect(db_url[len("sqlite:///"):]) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: sorted(map(repr, db.execute(f"SELECT * FROM {table}"))) for table in tables}


def test_an_existing_gradebook_is_indexed_and_keeps_every_grade(hand_graded):
    """An nbgrader gradebook with autograded and manual grades, a comment and an extension gets
    one index per column the hot lookups filter on; every row of every table is what it was
    (alembic's version too), a second migration does nothing, and nbgrader reads the same scores."""
    from nbgrader.api import Gradebook

    from attention_grading.store import indexes

    db_url, _ = hand_graded
    before, standing_before = _every_row(db_url), _read(db_url)
    assert standing_before.grades[LESSON]["self_weight_answer"][1] == 0.5       # a manual grade to keep
    with Gradebook(db_url, COURSE_ID) as gb:
        assert indexes.missing(gb.engine) == list(indexes.INDEXED)
        assert indexes.ensure(gb) == list(indexes.INDEXED)
        score = gb.find_submission(LESSON, "alice").score
    assert _every_row(db_url) == before and _read(db_url) == standing_before
    with Gradebook(db_url, COURSE_ID) as gb:
        assert indexes.missing(gb.engine) == [] and indexes.ensure(gb) == []
        assert gb.find_submission(LESSON, "alice").score == score > 0
    import sqlite3

    with sqlite3.connect(db_url[len("sqlite:///"):]) as db:
        plans = {table: " ".join(str(step) for step in db.execute(
            f"EXPLAIN QUERY PLAN SELECT * FROM {table} WHERE {column} = 'x'"))
            for table, column in indexes.INDEXED}
    for table, column in indexes.INDEXED:        # the lookups use them, rather than scan the table
        assert indexes.index_name(table, column) in plans[table], plans[table]


def test_a_submission_is_stored_in_one_transaction(hand_graded):
    """Within books.one_transaction, nbgrader's per-cell commits only flush (later reads see the
    new score, as after a commit); the block commits once at its end, and a failure inside it
    leaves the gradebook as it was."""
    from nbgrader.api import Gradebook

    db_url, _ = hand_graded
    before = _read(db_url)
    with Gradebook(db_url, COURSE_ID) as gb:
        with pytest.raises(RuntimeError):
            with books.one_transaction(gb):
                _by_hand_in(gb, 1.0)
                assert gb.find_grade("self_weight_answer", LESSON, LESSON, "alice").score == 1.0
                raise RuntimeError("the store failed half-way")
    assert _read(db_url) == before
    with Gradebook(db_url, COURSE_ID) as gb:
        with books.one_transaction(gb):
            _by_hand_in(gb, 1.0)
    assert _read(db_url).grades[LESSON]["self_weight_answer"][1] == 1.0


def _by_hand_in(gb, points):
    grade = gb.find_grade("self_weight_answer", LESSON, LESSON, "alice")
    grade.manual_score = points
    gb.db.commit()
