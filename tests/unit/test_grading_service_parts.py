"""The grading service's parts that decide nothing about a score: its fair queue, the attempt
rules, the journal that answers each submission once, the page of an attempt not graded."""
import datetime

from attention_grading.run.service import AttemptLimits, attempt_banner, decide, notice_page, with_banner
from attention_grading.run.service_queue import Arrival, FairQueue
from attention_grading.store.service_history import ServiceHistory

UTC = datetime.timezone.utc
T0 = datetime.datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def arrival(student, n, lesson="01_context_vectors"):
    return Arrival(student, lesson, f"{student}+{lesson}+t{n}+x", T0 + datetime.timedelta(seconds=n))


def drain(queue, width=1):
    """The order ``queue`` hands its submissions out in, ``width`` at a time."""
    order = []
    while len(queue):
        batch = queue.take(width)
        assert batch, "nothing handed out while submissions wait"
        order += [a.inbound for a in batch]
        for a in batch:
            queue.done(a)
    return order


def test_a_flood_from_one_learner_does_not_delay_the_others():
    """Fifty submissions of one learner, then one each of two others: each of those is answered
    within the first three, not after the fifty."""
    queue = FairQueue()
    for n in range(50):
        queue.put(arrival("flood", n))
    queue.put(arrival("ann", 100))
    queue.put(arrival("ben", 101))
    order = drain(queue)
    assert order.index("ann+01_context_vectors+t100+x") <= 2
    assert order.index("ben+01_context_vectors+t101+x") <= 2
    flood = [name for name in order if name.startswith("flood")]
    assert flood == [arrival("flood", n).inbound for n in range(50)]      # each learner's own order kept


def test_one_submission_in_flight_per_learner():
    """Two at once hands out two learners' submissions, never two of one learner; the second of a
    learner comes once the first is done."""
    queue = FairQueue()
    for n in range(3):
        queue.put(arrival("ann", n))
    queue.put(arrival("ben", 10))
    first = queue.take(2)
    assert sorted(a.student for a in first) == ["ann", "ben"]
    assert queue.take(2) == []                 # ann's next waits for ann's first
    queue.done(first[0])
    assert [a.student for a in queue.take(2)] == ["ann"]


def test_a_submission_is_queued_once_and_given_back_first():
    """The same inbound folder seen twice is queued once; one given back (the service stops) is
    its learner's next."""
    queue = FairQueue()
    assert queue.put(arrival("ann", 1)) and not queue.put(arrival("ann", 1))
    queue.put(arrival("ann", 2))
    taken = queue.take(1)[0]
    queue.put_back(taken)
    assert [a.inbound for a in queue.take(1)] == [taken.inbound]
    assert set(queue.waits()) == {"ann"}       # ann's second waits behind the one in flight
    assert len(queue) == 1


def test_the_attempt_limit_and_cool_down():
    """The limit counts graded attempts of the lesson; the cool-down runs from the previous
    graded attempt's hand-in, and the refusal says when the next one can be graded."""
    limits = AttemptLimits(max_attempts=5, max_attempts_by_lesson={"02_x": 2}, cooldown_seconds=600)
    graded = [{"arrived": (T0 + datetime.timedelta(minutes=m)).isoformat()} for m in (0, 20)]
    over = decide(limits, "02_x", T0 + datetime.timedelta(hours=2), graded)
    assert not over.grade and over.attempt == 3 and over.limit == 2 and "limit of 2" in over.reason
    soon = decide(limits, "01_context_vectors", T0 + datetime.timedelta(minutes=25), graded)
    assert not soon.grade and soon.next_possible == T0 + datetime.timedelta(minutes=30)
    assert "2026-11-02 09:30:00 UTC" in attempt_banner(soon)
    later = decide(limits, "01_context_vectors", T0 + datetime.timedelta(minutes=30), graded)
    assert later.grade and later.attempt == 3 and later.limit == 5
    assert "Attempt 3 of 5: graded, 4 / 8 points." in attempt_banner(later, 4.0, 8.0)
    assert decide(AttemptLimits(), "01_context_vectors", T0, graded * 40).grade      # no limit by default


def test_the_page_of_an_attempt_not_graded_escapes_what_it_shows():
    """The notice page and the banner put into a feedback page carry text, never markup."""
    page = notice_page("<b>01</b>", attempt_banner(decide(AttemptLimits(max_attempts=1), "l", T0, [{"arrived": T0.isoformat()}])),
                       "<script>alert(1)</script>")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>01</b>" not in page
    assert "not graded" in page and "Content-Security-Policy" in page
    assert with_banner("<html><body class='x'><h1>x</h1></body></html>", "<p>B</p>") == \
        "<html><body class='x'>\n<p>B</p><h1>x</h1></body></html>"


def test_the_journal_answers_each_submission_once(tmp_path):
    """An entry begun twice (a restart) is one entry; once finished it is answered, and the
    graded ones count for the limit, the refused ones not."""
    history = ServiceHistory(tmp_path)
    history.begin("ann", "01", "a1", T0)
    history.begin("ann", "01", "a1", T0)
    assert [e["state"] for e in history.entries("ann", "01")] == ["grading"]
    assert history.finished_inbound() == set()
    history.finish("ann", "01", "a1", "graded", attempt=1, score=3.0)
    history.begin("ann", "01", "a2", T0)
    history.finish("ann", "01", "a2", "refused", reason="limit")
    assert history.finished_inbound() == {"a1", "a2"}
    assert [e["inbound"] for e in history.graded("ann", "01")] == ["a1"]
    assert history.entry("ann", "01", "a1")["score"] == 3.0
