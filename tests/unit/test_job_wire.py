"""The wire form of a grading job's outcome (``attention_grading.run.wire``) and how the grader reads a
Dask worker's reply (``attention_grading.run.cluster``): data it parses, never a pickle it runs.

In-process, each well under a second. The records are built here (``outcome``, ``job``).
"""
import dataclasses
import json
import os
import pickle

import pytest

from attention_grading.run.cluster import (RefusedPickle, _error_of, check_address, data_only_loads,
                                           parse_reply, pickled_names)
from attention_grading.errors import ClusterError
from attention_grading.run.jobs import GradingJob, JobOutcome
from attention_grading.results import CheckResult, Flag, GradingResult
from attention_grading.run.wire import MAGIC, WireError, decode, encode

LIMIT, HEADER_LIMIT = 1 << 20, 1 << 16


def outcome(student="alice", lesson="01_context_vectors"):
    """A graded outcome with checks, flags, notes and two files (one binary)."""
    result = GradingResult(student, lesson, status="graded", score=3.0, max_score=4.0,
                           checks=[CheckResult("softmax_hidden", "softmax", "hidden", 2.0, 2.0, "passed"),
                                   CheckResult("answer", None, "written", 1.0, None, "awaiting manual grading")],
                           flags=[Flag("restored a deleted test cell", cell=3, grade_id="t1")],
                           timestamp="2026-12-01 10:00:00", notes={"kernel_restarts": 1, "verdicts": {}},
                           submission_sha256="from-the-worker", lesson_sha256="from-the-worker")
    return JobOutcome(result, True, {f"{lesson}.ipynb": b'{"cells": []}', "grading-notes.json": b"\x00\xff{}"})


def job(student="alice", lesson="01_context_vectors"):
    return GradingJob(student, lesson, {}, b"", None, submission_sha256="s" * 64, lesson_sha256="l" * 64)


def test_an_outcome_round_trips():
    """encode then decode gives back the same outcome: nested records, None, floats, files' bytes."""
    original = outcome()
    again = decode(JobOutcome, encode(original), LIMIT, HEADER_LIMIT)
    assert again == original
    assert isinstance(again.result.checks[0], CheckResult) and isinstance(again.result.flags[0], Flag)


def test_a_new_typed_field_travels_with_no_change_to_the_wire():
    """A field added to the outcome later (files, or JSON) crosses as the others do."""
    @dataclasses.dataclass
    class Extended(JobOutcome):
        feedback: dict[str, bytes] = dataclasses.field(default_factory=dict)
        feedback_seconds: float = 0.0

    base = outcome()
    extended = Extended(base.result, True, base.autograded, feedback={"page.html": b"<p>hi</p>"},
                        feedback_seconds=1.5)
    assert decode(Extended, encode(extended), LIMIT, HEADER_LIMIT) == extended


def _with_header(header, blobs=b""):
    data = json.dumps(header).encode()
    return MAGIC + len(data).to_bytes(8, "big") + data + blobs


def _fields(**changes):
    data = encode(outcome())
    length = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "big")
    fields = json.loads(data[len(MAGIC) + 8:len(MAGIC) + 8 + length])["fields"]
    fields["result"].update(changes)
    return fields


@pytest.mark.parametrize("data, why", [
    (pickle.dumps(outcome()), "unknown format"),
    (b"", "unknown format"),
    ("a string", "expected bytes"),
    (MAGIC + (10 ** 9).to_bytes(8, "big"), "header of"),
    (MAGIC + (5).to_bytes(8, "big") + b"{nope", "not JSON"),
    (MAGIC + (20002).to_bytes(8, "big") + b"[" * 10001 + b"]" * 10001, "not JSON"),
    (_with_header({"fields": [], "files": []}), "no fields and files"),
    (_with_header({"fields": _fields(score="3"), "files": []}), "result.score: expected float"),
    (_with_header({"fields": _fields(score=True), "files": []}), "result.score: expected float"),
    (_with_header({"fields": _fields(checks=[{"grade_id": 1}]), "files": []}), "result.checks[0].grade_id"),
    (_with_header({"fields": _fields(pwned=1), "files": []}), "unknown field 'pwned'"),
    (_with_header({"fields": {"ok": True}, "files": []}), "missing result"),
    (_with_header({"fields": _fields(), "files": [["autograded", "x", 10]]}, b"abc"), "does not fit"),
    (_with_header({"fields": _fields(), "files": [["log", "x", 1]]}, b"a"), "does not fit"),
    (_with_header({"fields": _fields(), "files": []}, b"extra"), "beyond its files"),
])
def test_what_is_not_an_outcome_is_refused_with_the_reason(data, why):
    """Pickles, truncated or oversized headers, JSON too deep, wrong types, unknown or missing
    fields, file entries that do not fit: each a WireError that says what is wrong."""
    with pytest.raises(WireError, match=why.replace("[", r"\[").replace("]", r"\]")):
        decode(JobOutcome, data, LIMIT, HEADER_LIMIT)


def test_an_outcome_larger_than_the_limit_is_refused():
    """The size limit applies before anything is parsed."""
    data = encode(outcome())
    with pytest.raises(WireError, match="more than the"):
        decode(JobOutcome, data, len(data) - 1, HEADER_LIMIT)


class Evil:
    """A pickle that runs a command when unpickled (what a compromised worker could send)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(tmp_path):
    """data_only_loads refuses a pickle naming a function (nothing runs); stdlib pickle, the
    control, runs it; plain data still loads."""
    marker = tmp_path / "hostile-mark-unpickled"
    evil = pickle.dumps(Evil(marker))
    with pytest.raises(RefusedPickle, match="posix.system"):
        data_only_loads(evil)
    assert not marker.exists()
    assert "posix.system" in pickled_names(evil)
    pickle.loads(evil)                                     # the control: this payload is live
    assert marker.exists()
    assert data_only_loads(pickle.dumps({"type": "dict", "n": (1, 2.5, b"x")})) == {"type": "dict", "n": (1, 2.5, b"x")}
    assert data_only_loads(pickle.dumps(bytes)) is bytes   # Dask's headers name the bytes types


def test_a_valid_reply_becomes_the_jobs_outcome_with_the_jobs_hashes():
    """The hashes that decide "already graded" are the job's, never the worker's."""
    got = parse_reply(job(), {"kind": "ok", "outcome": encode(outcome())}, LIMIT, HEADER_LIMIT)
    assert got.ok and got.result.score == 3.0
    assert (got.result.submission_sha256, got.result.lesson_sha256) == ("s" * 64, "l" * 64)


@pytest.mark.parametrize("reply, why, retry", [
    (b"raw bytes", "not a grading reply", True),
    ({"kind": "ok", "outcome": b"garbage"}, "could not be read as a grading outcome", True),
    ({"kind": "ok", "outcome": encode(outcome(student="bob"))}, "answered for 'bob'", True),
    ({"kind": "ok", "outcome": encode(dataclasses.replace(outcome(), autograded={"../../gradebook.db": b""}))},
     "outside the submission", True),
    ({"kind": "ok", "outcome": encode(dataclasses.replace(outcome(), autograded={"/etc/x": b""}))},
     "outside the submission", True),
    ({"kind": "died", "message": "the grading process died"}, "the grading process died", True),
    ({"kind": "timeout", "message": "took too long"}, "took too long", False),
    ({"kind": "refused", "message": 3}, "a worker reported 'refused'", True),
])
def test_a_reply_that_cannot_be_used_fails_its_job_with_the_reason(reply, why, retry):
    """Not a reply, not an outcome, another learner's, files outside the folder, or a worker's
    own failure: the job's failure, with the reason (and a second attempt unless it timed out)."""
    got = parse_reply(job(), reply, LIMIT, HEADER_LIMIT)
    assert not got.ok and why in got.message and got.retry is retry
    assert got.result.student == "alice" and got.result.status == "ungradable"


def test_a_scheduler_without_tls_is_refused_unless_the_instructor_insists():
    """tcp:// (or no scheme) is refused with the way out; tls:// passes; --insecure-cluster passes."""
    for address in ("tcp://127.0.0.1:8786", "127.0.0.1:8786", "ws://host:8786"):
        with pytest.raises(ClusterError, match="make cluster-certs.*--insecure-cluster"):
            check_address(address, insecure=False)
        assert check_address(address, insecure=True) != "tls"
    assert check_address("tls://127.0.0.1:8786", insecure=False) == "tls"


def test_an_error_the_cluster_sends_is_named_without_unpickling_it():
    """Dask's KilledWorker, pickled by the scheduler, is recognised from the pickle's opcodes
    (so a job that kills every worker is reported as such); an error whose pickle names no
    class is still reported, and nothing is unpickled either way."""
    from distributed.protocol import pickle as dask_pickle
    from distributed.scheduler import KilledWorker

    raw = dask_pickle.dumps(KilledWorker("attention-grade-alice-01-x", "tls://worker", 3))
    with pytest.raises(RefusedPickle):
        data_only_loads(raw)
    assert _error_of(Exception(raw))[0] == "KilledWorker"
    assert _error_of(Exception(pickle.dumps(Evil("/nonexistent"))))[0] == "an error"
    assert _error_of(ValueError("plain")) == ("ValueError", "plain")


def test_a_feedback_jobs_reply_is_read_as_a_feedback_outcome():
    """A feedback-only job (grades changed after grading) comes back as its page: read as a
    ``FeedbackOutcome``; a page named outside its folder fails the job."""
    from attention_grading.run.feedback_jobs import FeedbackJob, FeedbackOutcome

    feedback_job = FeedbackJob("alice", "01_context_vectors", {}, {}, None)
    page = FeedbackOutcome(True, {"01_context_vectors.html": b"<p>page</p>"}, seconds=0.25)
    got = parse_reply(feedback_job, {"kind": "ok", "outcome": encode(page)}, LIMIT, HEADER_LIMIT)
    assert got == page
    outside = dataclasses.replace(page, feedback={"../gradebook.db": b""})
    got = parse_reply(feedback_job, {"kind": "ok", "outcome": encode(outside)}, LIMIT, HEADER_LIMIT)
    assert not got.ok and "outside the page's folder" in got.message


def test_an_answer_its_worker_never_hands_over_fails_its_job_after_the_fetch_timeout():
    """A finished job whose answer Dask cannot fetch (it waits instead of raising) fails that job
    with the reason, once, and is cancelled on the cluster: the run goes on."""
    from attention_grading.run.cluster import DaskCluster, DaskPool

    class StalledFuture:
        cancelled = False

        def result(self, timeout=None):
            assert timeout == 0.5
            raise TimeoutError(f"timed out after {timeout} s.")

        def cancel(self):
            self.cancelled = True

    pool = DaskPool.__new__(DaskPool)           # no cluster: the fetch is what is tested
    pool.settings = DaskCluster(fetch_timeout=0.5)
    future = StalledFuture()
    got = pool._outcome(job(), future)
    assert not got.ok and not got.retry and future.cancelled
    assert got.message == "its worker did not hand its answer over within 0.5 s"
