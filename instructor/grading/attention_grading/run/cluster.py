"""``DaskPool``: grading jobs on a Dask distributed cluster, with ``LocalPool``'s interface.

``make grade --scheduler tls://HOST:8786`` (or ``c.DaskCluster.scheduler``) hands every
grading job to the cluster's workers instead of this machine's cores. A job is self-contained
(``jobs.GradingJob``: the submission, its lesson's cells, the configuration) and its
outcome comes back whole, so workers share no filesystem with the course and this process stays
the only writer of the gradebook. What a worker runs is ``cluster_worker`` (sent by value), with
this course's grader and reference sent once per worker; see there for the worker's side.

Faults: a worker that dies mid-job loses nothing, the scheduler runs its jobs elsewhere (a job
that keeps killing workers is reported as ungradable, like a grading process that dies locally);
a worker that cannot sandbox never receives a job (its reason is printed); the scheduler going
away raises ``ClusterLost``, after the outcomes already received were handed over (and saved).

Trust: the cluster answers only holders of the course's certificates (``cluster_tls``: mutual TLS,
encryption required); a ``tcp://`` scheduler is refused unless the instructor asks for it
(``DaskCluster.insecure``). What comes back is data: a job's outcome in ``wire`` form (JSON and
file bytes, parsed against ``JobOutcome``'s types, within ``DaskCluster.max_outcome_bytes``), checked against the job it
answers. This process unpickles nothing a worker wrote (``refuse_pickles``): Dask's own messages
may carry pickles (task errors, result types), which are read here only when they need no code.
"""
import hashlib
import io
import pickle
import pickletools
import time
import uuid
from concurrent.futures import CancelledError
from pathlib import PurePosixPath

from traitlets import Bool, Float, Int, Unicode
from traitlets.config import Configurable

from ..errors import ClusterError
from .feedback_jobs import FeedbackJob, FeedbackOutcome
from .jobs import JobOutcome
from .pool import Feed
from ..paths import INSTRUCTOR_DIR
from .wire import WireError, decode

#: (folder under instructor/, package or folder) a worker needs: the grader, the reference package, the lessons'
#: folders (their specs and references).
SHIPPED = (("grading", "attention_grading"), ("reference", "attention_reference"), ("", "lessons"))
#: A lesson folder's files that only the tests read (its catalogue of answers, its prose claims).
TESTS_ONLY = ("catalogue.py", "claims.py")


class DaskCluster(Configurable):
    """Grading on a Dask cluster (``c.DaskCluster.<name>``; ``make grade --scheduler`` overrides
    ``scheduler``, ``--insecure-cluster`` sets ``insecure``)."""

    scheduler = Unicode("", help="Address of the Dask scheduler whose workers grade (tls://HOST:8786); "
                        "empty: grade on this machine. nbgrader_config.py reads ATTENTION_DASK_SCHEDULER.").tag(config=True)
    insecure = Bool(False, help="Accept a scheduler that is not tls:// (neither authenticated nor encrypted: "
                    "whoever reaches it can run code on its workers and forge grades). Refused "
                    "otherwise.").tag(config=True)
    connect_timeout = Float(30.0, help="Seconds to reach the scheduler.").tag(config=True)
    no_worker_patience = Float(120.0, help="Seconds jobs may wait with no worker able to grade them before "
                               "the run stops.").tag(config=True)
    in_flight_per_thread = Int(2, help="Jobs on the cluster at once, per able worker thread (a job holds a "
                               "submission and a gradebook).").tag(config=True)
    in_flight_minimum = Int(8, help="Jobs on the cluster at once, at least.").tag(config=True)
    max_outcome_bytes = Int(512 * 2**20, help="Bytes a worker's answer for one grading job may have (the "
                            "autograded notebook and the notes); a larger answer fails that job.").tag(config=True)
    max_outcome_header_bytes = Int(16 * 2**20, help="Bytes of the JSON part of a worker's answer for one job "
                                   "(scores, checks, notes); a larger one fails that job.").tag(config=True)
    fetch_timeout = Float(120.0, help="Seconds to fetch a finished job's answer from its worker; longer fails "
                          "that job (a worker that answers with what this process refuses to read can "
                          "leave the fetch waiting).").tag(config=True)


class ClusterLost(RuntimeError):
    """The scheduler went away, or no worker able to grade is left."""


class RefusedPickle(pickle.UnpicklingError, TypeError):
    """A pickle from the cluster that would need code to unpickle (``refuse_pickles``)."""


class _DataOnly(pickle.Unpickler):
    """Unpickles plain data only (strings, numbers, bytes, lists, dicts...): no class and no
    function is ever looked up, so no code runs. The bytes types are the one exception: Dask's
    headers name them (``type-serialized``) and building bytes runs nothing."""

    ALLOWED = {("builtins", "bytes"), ("builtins", "bytearray")}

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise RefusedPickle(f"refused to unpickle {module}.{name} from the cluster")


def data_only_loads(data, *, buffers=()):
    return _DataOnly(io.BytesIO(data), buffers=buffers).load()


def refuse_pickles():
    """Make this process's Dask client unpickle nothing but plain data.

    distributed unpickles what the scheduler relays from workers in several places (a result's
    type, a task's error, a warning, ``__Pickled__`` message parts), all through
    ``distributed.protocol.pickle.loads``, except ``distributed.client``'s own names for it.
    Each becomes ``data_only_loads``: a pickle that names a class or a function fails with
    ``RefusedPickle`` (Dask then reports an error, or drops a type it could not read)."""
    import types

    import distributed.client
    import distributed.protocol.pickle

    distributed.protocol.pickle.loads = data_only_loads
    distributed.client.loads = data_only_loads
    distributed.client.pickle = types.SimpleNamespace(loads=data_only_loads, dumps=pickle.dumps)


def pickled_names(data):
    """The ``module.name`` of every class or function a pickle would look up, read without
    unpickling it (``pickletools``); empty when ``data`` is not a pickle."""
    names, strings = [], []
    try:
        for opcode, arg, _ in pickletools.genops(bytes(data)):
            if opcode.name == "GLOBAL":
                names.append(arg.replace(" ", "."))
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(f"{strings[-2]}.{strings[-1]}")
            elif isinstance(arg, str):
                strings.append(arg)
    except Exception:          # not a pickle, or a truncated one: nothing more to read
        pass
    return names


def _error_of(exc):
    """(type name, text) of an error a future raised, without unpickling what the cluster sent."""
    raw = exc.args[0] if type(exc) is Exception and len(exc.args) == 1 else None
    if isinstance(raw, (bytes, bytearray)):          # Dask's clean_exception kept the refused pickle
        kinds = [n.rsplit(".", 1)[-1] for n in pickled_names(raw)      # the class, before tblib's frames
                 if n.rsplit(".", 1)[-1][:1].isupper() and not n.startswith("tblib.")]
        kind = kinds[0] if kinds else "an error"
        return kind, f"{kind} (its details are a pickle, which the grader does not unpickle)"
    return type(exc).__name__, str(exc)


def grader_files():
    """{path under instructor/: bytes} of the grader and the reference, as workers need them."""
    files = {}
    for parent, package in SHIPPED:
        base = INSTRUCTOR_DIR / parent
        for path in sorted((base / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc" \
                    and path.name not in TESTS_ONLY:
                files[str(path.relative_to(INSTRUCTOR_DIR))] = path.read_bytes()
    return files


def _digest(files):
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


class _ByValue:
    """A function that unpickles anywhere as itself, sent by value: Dask pickles a task graph by
    reference (the scheduler, too, unpickles it), and none of the cluster has this grader."""

    def __init__(self, function):
        import cloudpickle

        self.function, self.blob = function, cloudpickle.dumps(function)

    def __call__(self, *args):
        return self.function(*args)

    def __reduce__(self):
        import cloudpickle

        return cloudpickle.loads, (self.blob,)


def scheme_of(address):
    """The protocol of a Dask address (``tcp`` when it names none, as Dask reads it)."""
    return address.split("://", 1)[0].lower() if "://" in address else "tcp"


class DaskPool:
    """Jobs on the Dask cluster at ``address``; ``job_timeout``: seconds a job may take;
    ``settings``: the course's ``DaskCluster``; ``tls_folder``: the course's cluster certificates
    (``cluster_tls``), required for a ``tls://`` scheduler (any other is refused unless
    ``settings.insecure``)."""

    def __init__(self, address, job_timeout=None, sandboxed=True, log=print, settings=None, tls_folder=None):
        import cloudpickle
        from distributed import Client

        from . import cluster_tls, cluster_worker       # import distributed (most of a second): only here

        self.settings = settings or DaskCluster()
        self.address, self.log = address, log
        if check_address(address, self.settings.insecure) == "tls":
            security = cluster_tls.security(tls_folder, "client")
        else:
            security = None
            log(f"[cluster] WARNING: {address} is neither authenticated nor encrypted (--insecure-cluster): "
                "whoever reaches it can drive the workers and see every submission.")
        refuse_pickles()
        try:
            # Results arrive as msgpack only (the workers serialise them so: deserializers are
            # sent along with every request), fetched from the workers that hold them.
            self.client = Client(address, timeout=self.settings.connect_timeout, set_as_default=False, security=security,
                                 serializers=["msgpack"], deserializers=["msgpack"], direct_to_workers=True)
        except (OSError, TimeoutError) as exc:
            hint = (" If the scheduler is up, check that it and make grade use certificates of the same "
                    "authority (make cluster-certs)." if security else "")
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}. Nothing was graded. "
                             "Start one (`dask scheduler`) and workers (`dask worker ADDRESS`), or "
                             f"grade here without --scheduler.{hint}") from None
        files = grader_files()
        self.name = f"attention-grader-{_digest(files)[:16]}"
        cloudpickle.register_pickle_by_value(cluster_worker)     # workers have no copy of it
        self.client.register_plugin(cluster_worker.CourseGrader(self.name, files, job_timeout, sandboxed),
                                    name=self.name)
        self._task = _ByValue(cluster_worker.grade_remotely)
        self.workers = self._able_workers(report=True)
        if not self.workers:
            self.close()
            raise ClusterError(f"no worker of the Dask cluster at {address} can grade (see above). "
                             "Nothing was graded.")

    def _able_workers(self, report=False):
        """Threads of the workers that took this run's grader and can sandbox (they offer its
        resource); with ``report``, prints the others with the reason their plugin recorded
        with the scheduler (plain text, ``cluster_worker.CourseGrader.setup``)."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if report:
            refusals = self.client.get_metadata([self.name, "refusals"], default={})
            refusals = refusals if isinstance(refusals, dict) else {}
            for address in sorted(workers):
                refusal = refusals.get(address, "the course's grader did not install on this worker")
                if refusal:
                    self.log(f"[cluster] worker {address} gets no jobs: {str(refusal)[:500]}")
        return sum(w.get("nthreads", 1) for w in workers.values() if w.get("resources", {}).get(self.name))

    def run(self, function, jobs, progress):
        """Yield ``(job, outcome)`` for every job, as they finish (the interface of LocalPool.run).

        At most ``DaskCluster.in_flight_per_thread`` jobs per able worker thread are on the cluster at a time:
        a job holds a submission and a gradebook, and a class may have tens of thousands."""
        from distributed import as_completed

        waiting, futures = Feed(jobs), {}
        finished = as_completed(loop=self.client.loop)

        def top_up():
            limit = max(self.settings.in_flight_minimum, self.settings.in_flight_per_thread * self.workers)
            while waiting and len(futures) < limit:
                job = waiting.pop()
                key = f"attention-grade-{job.student}-{job.lesson}-{uuid.uuid4().hex[:8]}"
                future = self.client.submit(self._task, self.name, pickle.dumps((function, job)), key=key,
                                            pure=False, resources={self.name: 1})
                futures[future] = job
                finished.add(future)

        top_up()
        quiet_since, idle_since = time.monotonic(), None
        try:
            while futures:
                batch = finished.next_batch(block=False)
                if not batch:
                    time.sleep(0.2)
                    if time.monotonic() - quiet_since > 5:
                        quiet_since, idle_since = time.monotonic(), self._check_cluster(idle_since)
                        top_up()          # workers may have joined
                    continue
                quiet_since, idle_since = time.monotonic(), None
                for future in batch:
                    job = futures.pop(future)
                    outcome = self._outcome(job, future)
                    top_up()
                    progress.update(1)
                    yield job, outcome
        finally:
            for future in futures:
                future.cancel()

    def _outcome(self, job, future):
        try:
            reply = future.result(timeout=self.settings.fetch_timeout)
        except TimeoutError:        # distributed's is the builtin; checked before Exception below
            future.cancel()
            return job.failure(f"its worker did not hand its answer over within {self.settings.fetch_timeout:g} s",
                               retry=False)
        except CancelledError:      # distributed's FutureCancelledError too: the scheduler is gone
            raise ClusterLost(f"the Dask scheduler at {self.address} went away") from None
        except Exception as exc:          # distributed's KilledWorker, or a task that could not run
            name, text = _error_of(exc)
            if name == "KilledWorker":
                return job.failure("grading this submission killed every worker that tried it", retry=False)
            return job.failure(f"the cluster could not run this job: {name}: {text}"[:300])
        return parse_reply(job, reply, self.settings.max_outcome_bytes, self.settings.max_outcome_header_bytes)


    def _check_cluster(self, idle_since):
        """While nothing finishes: stop if the scheduler is gone or no worker can grade for long."""
        if self.client.status not in ("running", "newly-created"):
            raise ClusterLost(f"the Dask scheduler at {self.address} went away "
                              f"(the client is {self.client.status})")
        try:
            able = self._able_workers()
        except (OSError, TimeoutError) as exc:
            raise ClusterLost(f"the Dask scheduler at {self.address} does not answer ({exc})") from None
        if able:
            self.workers = able
            return None
        idle_since = idle_since or time.monotonic()
        if time.monotonic() - idle_since > self.settings.no_worker_patience:
            raise ClusterLost(f"no worker of the Dask cluster at {self.address} able to grade has been "
                              f"there for {self.settings.no_worker_patience:g} s")
        return idle_since

    def close(self):
        import logging

        if self.client.status == "running":
            try:
                self.client.unregister_worker_plugin(self.name)
            except Exception:      # workers gone: nothing left to clean
                pass
        else:       # the scheduler is gone and ClusterLost said so: no reconnection, no log of it
            logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
        self.client.close(timeout=5)


def parse_reply(job, reply, max_bytes, max_header_bytes):
    """The outcome of ``job`` in a worker's ``reply`` (``cluster_worker.grade_remotely``: plain
    data): a ``JobOutcome`` for a grading job, a ``FeedbackOutcome`` for a feedback job; or the
    job's failure saying why the reply cannot be used."""
    if not (isinstance(reply, dict) and isinstance(reply.get("kind"), str)):
        return job.failure(f"a worker answered with {type(reply).__name__}, not a grading reply")
    kind = reply["kind"]
    if kind != "ok":
        message = reply.get("message")
        message = message[:500] if isinstance(message, str) else f"a worker reported {kind[:40]!r}"
        return job.failure(message, retry=kind != "timeout")
    kind_of_outcome = FeedbackOutcome if isinstance(job, FeedbackJob) else JobOutcome
    try:
        outcome = decode(kind_of_outcome, reply.get("outcome"), max_bytes, max_header_bytes)
    except WireError as exc:
        return job.failure(f"a worker's answer could not be read as a grading outcome: {exc}"[:500])
    if kind_of_outcome is FeedbackOutcome:
        unsafe = [name for name in outcome.feedback if _unsafe_name(name) or "/" in name]
        if unsafe:
            return job.failure(f"a worker's answer names feedback files outside the page's folder: {unsafe[0][:200]!r}")
        return outcome
    result = outcome.result
    if (result.student, result.lesson) != (job.student, job.lesson):
        return job.failure(f"a worker answered for {result.student[:80]!r} / {result.lesson[:80]!r}, "
                           "not for this submission")
    unsafe = [name for name in outcome.autograded if _unsafe_name(name)]
    if unsafe:
        return job.failure(f"a worker's answer names files outside the submission: {unsafe[0][:200]!r}")
    result.submission_sha256, result.lesson_sha256 = job.submission_sha256, job.lesson_sha256
    return outcome


def check_address(address, insecure):
    """Refuse a scheduler address that is not ``tls://`` unless ``insecure`` (``ClusterError``)."""
    scheme = scheme_of(address)
    if scheme != "tls" and not insecure:
        raise ClusterError(
            f"refused to grade on {address}: a {scheme}:// scheduler is neither authenticated nor "
            "encrypted, so anyone who reaches it could run code on its workers or send back a forged "
            "grade. Nothing was graded. Make the course's certificates (`make cluster-certs`), start "
            "the scheduler and workers with them and pass tls://HOST:PORT (docs/instructor-guide.md: Grading a large "
            "class on a Dask cluster), or pass --insecure-cluster to accept the risk.")
    return scheme


def _unsafe_name(name):
    """Would writing ``name`` under a submission's folder leave it (or is it no name at all)?"""
    path = PurePosixPath(name)
    return not name or "\0" in name or path.is_absolute() or ".." in path.parts or "\\" in name
