"""The Dask cluster answers only the instructor, and nothing a worker sends runs in make grade.

A real cluster on loopback (tests/dask_cluster.py) started as the instructor's guide
(docs/instructor-guide.md) says, with the course's certificates made by ``make cluster-certs``'s
command (mutual TLS). Around it:

- clients that are not the instructor's: none, another authority's certificate, plain tcp://;
- workers that are not the instructor's: another authority's certificate, none at all, plain
  tcp://: the scheduler refuses each (its nanny gives up), so none is there to get a job;
- make grade pointed at tcp:// without ``--insecure-cluster``: refused before any work;
- the one worker that takes jobs is the instructor's, compromised (tests/hostile_worker.py): it
  answers every learner named ``v-...`` with a hostile reply (pickles that would run a command in
  make grade, errors that would, another learner's outcome, a file outside the submission, an
  outcome past the size limit, garbage) and lies in Dask's own messages about every job, while it
  grades ``alice`` (the solution) honestly. alice keeps full marks; each hostile reply fails
  its job with the reason; nothing ran in make grade; nothing was written outside autograded/.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dask_cluster import LoopbackCluster, wait_until
from grading_helpers import LESSON, copy_course, env_for, grade_table, lesson_points, notebook, run_grade, submit, tree_hash

pytestmark = [pytest.mark.nbgrader, pytest.mark.cluster]

HOSTILE_WORKER = Path(__file__).with_name("hostile_worker.py")
MAX_OUTCOME_BYTES = 8 * 2**20      # the course copy's DaskCluster.max_outcome_bytes; the worker pads past it

#: learner -> what make grade must say about their job (the hostile worker's reply for them).
VARIANTS = {
    "v-pickled-result": "the cluster could not run this job: TypeError: Data serialized with error",
    "v-pickled-data": "the cluster could not run this job: TypeError: Data serialized with pickle",
    "v-raised-error": "(its details are a pickle, which the grader does not unpickle)",
    "v-not-a-reply": "not a grading reply",
    "v-garbage": "could not be read as a grading outcome: not a grading record",
    "v-someone-else": "a worker answered for 'alice'",
    "v-escape": "names files outside the submission: '../../../hostile-mark-escaped'",
    "v-oversized": "more than the 8,388,608 allowed",
}
#: Refused, then fetched through the scheduler, which Dask lets unpickle what workers send (the
#: payload runs there, not in make grade): graded for what it is, a blank notebook.
GAINS_NOTHING = ("v-pickled-part",)
#: The course copy's DaskCluster.fetch_timeout. A refused answer can also leave Dask's fetch
#: waiting instead of raising (seen once, in a full-tier run), and so can the 9 MB answer (seen
#: once, in a full tier beside a benchmark writing tens of GB; three runs under
#: with-cpu-load 2 had the size refused): make grade then fails that job after this long, which
#: these variants may say instead. The size limit itself: tests/unit/test_job_wire.py.
FETCH_TIMEOUT = 20
NOT_HANDED_OVER = "its worker did not hand its answer over within"
REFUSED_OR_STALLED = ("v-pickled-result", "v-pickled-data", "v-oversized", *GAINS_NOTHING)


def _cluster_certificates(root):
    """``make cluster-certs``'s command, for the course copy at ``root``: its certificates' folder."""
    done = subprocess.run([sys.executable, "-m", "attention_grading.cli.certs", "--root", str(root)],
                          cwd=root, env=env_for(root), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "instructor" / "cluster-tls", done.stdout


# A client in a process of its own (as an intruder's would be): "got in", or why it was refused.
CLIENT = """
import sys
from distributed import Client
from attention_grading.run.cluster_tls import security
address, certificates = sys.argv[1], sys.argv[2]
try:
    client = Client(address, timeout=15, set_as_default=False,
                    security=security(certificates) if certificates else None)
except Exception as exc:
    print(f"refused: {type(exc).__name__}: {exc}"[:300])
else:
    client.close()
    print("got in")
"""


def _client(root, address, certificates=None):
    """What happened to a client of ``address`` with the course client certificate of
    ``certificates`` (a folder), or with none."""
    done = subprocess.run([sys.executable, "-c", CLIENT, address, str(certificates or "")], cwd=root,
                          env=env_for(root), capture_output=True, text=True, timeout=120)
    return (done.stdout.strip().splitlines() or [f"no answer: {done.stderr[-300:]}"])[-1]


@pytest.fixture(scope="module")
def perimeter(tmp_path_factory):
    base = tmp_path_factory.mktemp("perimeter")
    root = copy_course(base / "course")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.DaskCluster.max_outcome_bytes = {MAX_OUTCOME_BYTES}\n"
                     f"c.DaskCluster.fetch_timeout = {FETCH_TIMEOUT}\n")
    certificates, made = _cluster_certificates(root)
    other = copy_course(base / "other-course")          # another course's authority (a learner's own)
    other_certificates, _ = _cluster_certificates(other)
    submit(root, "alice", notebook("correct"))
    for student in (*VARIANTS, *GAINS_NOTHING):
        submit(root, student, notebook("blank"))
    before = tree_hash(root / "submitted")
    mark = base / "hostile-mark-unpickled-in-make-grade"
    out = {"root": root, "made": made, "mark": mark, "certificates": certificates}

    with LoopbackCluster(base / "cluster", tls=certificates) as cluster:
        out["plain_tcp_grade"] = run_grade(root, "--scheduler", f"tcp://127.0.0.1:{cluster.port}", timeout=120)
        cluster.add_worker("hostile", "--preload", str(HOSTILE_WORKER), ATTENTION_HOSTILE_MARK=str(mark),
                           ATTENTION_HOSTILE_PADDING=str(MAX_OUTCOME_BYTES + 2**20))
        cluster.add_worker("other-authority", tls=other_certificates)
        cluster.add_worker("no-certificate", tls=None)
        cluster.add_worker("plain-tcp", tls=None, address=f"tcp://127.0.0.1:{cluster.port}")
        cluster.wait_for_workers(1)
        tls, tcp = cluster.address, f"tcp://127.0.0.1:{cluster.port}"
        out["clients"] = {"no certificate": _client(root, tls), "plain tcp://": _client(root, tcp),
                          "another authority's certificate": _client(root, tls, other_certificates),
                          "the course's certificate": _client(root, tls, certificates)}
        out["grade"] = run_grade(root, "--scheduler", cluster.address, "--no-report", timeout=900)
        with cluster.client() as client:
            out["workers"] = {info.get("name") for info in client.scheduler_info(n_workers=-1)["workers"].values()}
        out["logs"] = {name: cluster.log(name) for name in cluster.workers}
    out["unchanged"] = before == tree_hash(root / "submitted")
    out["table"] = grade_table(f"sqlite:///{root / 'gradebook.db'}")
    return out


def test_make_cluster_certs_makes_an_authority_and_one_certificate_per_role(perimeter):
    """ca, scheduler, worker and client certificates, keys readable by their owner only, and the
    commands that start the cluster with them."""
    folder = perimeter["certificates"]
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(f"{role}{part}.pem" for role in ("ca", "scheduler", "worker", "client")
                           for part in ("", "-key")), names
    assert all((folder / n).stat().st_mode & 0o077 == 0 for n in names if n.endswith("-key.pem"))
    assert folder.stat().st_mode & 0o077 == 0
    assert "dask scheduler --tls-ca-file ca.pem --tls-cert scheduler.pem" in perimeter["made"]
    assert "dask worker tls://HOST:8786 --tls-ca-file ca.pem --tls-cert worker.pem" in perimeter["made"]


def test_a_client_without_the_course_certificates_is_refused(perimeter):
    """No certificate, another authority's, plain tcp://: each refused; the course's client gets in."""
    clients = dict(perimeter["clients"])
    assert clients.pop("the course's certificate") == "got in"
    assert all(why.startswith("refused: ") for why in clients.values()), clients
    assert "TLS certificate does not match" in clients["another authority's certificate"], clients


def test_a_worker_without_the_course_certificates_never_joins(perimeter):
    """Workers with another authority's certificate, with none, or on plain tcp:// never joined
    (so none was there to get a job while the class was graded), and their logs say why."""
    assert perimeter["workers"] == {"hostile"}, perimeter["workers"]
    for name in ("other-authority", "no-certificate", "plain-tcp"):
        log = perimeter["logs"][name]
        assert re.search(r"certificate|SSL|TLS|Timed out|closed", log, re.I), (name, log[-2000:])
        assert "Starting Worker plugin" not in log, name


def test_a_tcp_scheduler_is_refused_without_the_insecure_flag(perimeter):
    """make grade --scheduler tcp://... stops at once with the way out; nothing is graded."""
    done = perimeter["plain_tcp_grade"]
    assert done.returncode == 1, done.stdout + done.stderr
    assert "refused to grade on tcp://127.0.0.1:" in done.stderr, done.stderr
    assert "make cluster-certs" in done.stderr and "--insecure-cluster" in done.stderr
    assert "grading" not in done.stdout, done.stdout


def test_nothing_a_compromised_worker_sends_runs_in_make_grade(perimeter):
    """Pickles in results, errors, result types, warnings and message parts: none was unpickled
    in make grade's process (the mark the payloads would leave there is absent), and make grade
    saw and refused them (so the payloads did reach it)."""
    done = perimeter["grade"]
    assert not perimeter["mark"].exists()
    assert "refused to unpickle posix.system from the cluster" in done.stderr, done.stderr[-3000:]
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]


def test_each_hostile_reply_fails_its_own_job_with_the_reason(perimeter):
    """Every v-... learner is listed as not graded, with the reason for their reply; nothing of
    theirs reached the gradebook; nothing was written outside autograded/<learner>/."""
    stdout = perimeter["grade"].stdout
    failed = dict(re.findall(r"^  (\S+) / 01_context_vectors: (.*)$", stdout.split("could NOT be graded:")[-1], re.M))
    for student, why in VARIANTS.items():
        told = failed.get(student, "")
        assert why in told or (student in REFUSED_OR_STALLED and NOT_HANDED_OVER in told), \
            (student, told, stdout[-4000:])
    assert not any(key[0] in VARIANTS for key in perimeter["table"])
    for student in GAINS_NOTHING:    # graded as the blank notebook it is, or not graded at all
        scores = [score for key, (score, _) in perimeter["table"].items() if key[0] == student]
        assert (scores and not any(scores)) or NOT_HANDED_OVER in failed.get(student, ""), \
            (student, scores, failed.get(student))
    root = perimeter["root"]
    assert not list(root.parent.rglob("hostile-mark-escaped")) and not list(root.rglob("hostile-mark-escaped"))
    assert perimeter["unchanged"]


def test_the_correct_learner_graded_beside_them_keeps_full_marks(perimeter):
    """alice, graded by the same worker, has every autograded point."""
    auto, _, _ = lesson_points(perimeter["root"])
    alice = {k: v for k, v in perimeter["table"].items() if k[0] == "alice"}
    assert alice and sum(score or 0 for score, _ in alice.values()) == auto, alice
