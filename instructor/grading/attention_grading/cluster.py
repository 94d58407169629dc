"""``DaskPool``: grading jobs on a Dask distributed cluster, with ``LocalPool``'s interface.

``make grade --scheduler tcp://HOST:8786`` (or ``c.DaskCluster.scheduler``) hands every
grading job to the cluster's workers instead of this machine's cores. A job is self-contained
(``jobs.GradingJob``: the submission, its lesson's template gradebook, the configuration) and its
outcome comes back whole, so workers share no filesystem with the course and this process stays
the only writer of the gradebook. What a worker runs is ``cluster_worker`` (sent by value), with
this course's grader and reference sent once per worker; see there for the worker's side.

Faults: a worker that dies mid-job loses nothing, the scheduler runs its jobs elsewhere (a job
that keeps killing workers is reported as ungradable, like a grading process that dies locally);
a worker that cannot sandbox never receives a job (its reason is printed); the scheduler going
away raises ``ClusterLost``, after the outcomes already received were handed over (and saved).
"""
import hashlib
import pickle
import time
import uuid
from concurrent.futures import CancelledError

from traitlets import Float, Int, Unicode
from traitlets.config import Configurable

from .errors import ClusterError
from .paths import INSTRUCTOR_DIR

SHIPPED = (("grading", "attention_grading"), ("reference", "attention_reference"))


class DaskCluster(Configurable):
    """Grading on a Dask cluster (``c.DaskCluster.<name>``; ``make grade --scheduler`` overrides
    ``scheduler``)."""

    scheduler = Unicode("", help="Address of the Dask scheduler whose workers grade (tcp://HOST:8786); "
                        "empty: grade on this machine. nbgrader_config.py reads ATTENTION_DASK_SCHEDULER.").tag(config=True)
    connect_timeout = Float(30.0, help="Seconds to reach the scheduler.").tag(config=True)
    no_worker_patience = Float(120.0, help="Seconds jobs may wait with no worker able to grade them before "
                               "the run stops.").tag(config=True)
    in_flight_per_thread = Int(2, help="Jobs on the cluster at once, per able worker thread (a job holds a "
                               "submission and a gradebook).").tag(config=True)
    in_flight_minimum = Int(8, help="Jobs on the cluster at once, at least.").tag(config=True)


class ClusterLost(RuntimeError):
    """The scheduler went away, or no worker able to grade is left."""


def grader_files():
    """{path under instructor/: bytes} of the grader and the reference, as workers need them."""
    files = {}
    for parent, package in SHIPPED:
        base = INSTRUCTOR_DIR / parent
        for path in sorted((base / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
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


class DaskPool:
    """Jobs on the Dask cluster at ``address``; ``job_timeout``: seconds a job may take."""

    def __init__(self, address, job_timeout=None, sandboxed=True, log=print, settings=None):
        import cloudpickle
        from distributed import Client

        from . import cluster_worker       # imports distributed (most of a second): only here

        self._worker_side = cluster_worker
        self.settings = settings or DaskCluster()
        self.address, self.log = address, log
        try:
            self.client = Client(address, timeout=self.settings.connect_timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}. Nothing was graded. "
                             "Start one (`dask scheduler`) and workers (`dask worker ADDRESS`), or "
                             "grade here without --scheduler.") from None
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
        resource); with ``report``, asks every worker and prints the others with their reason."""
        if report:
            for address, refusal in sorted(self.client.run(self._worker_side.status, self.name,
                                                           on_error="return").items()):
                if isinstance(refusal, BaseException):
                    refusal = f"it did not answer ({type(refusal).__name__}: {refusal})"
                if refusal:
                    self.log(f"[cluster] worker {address} gets no jobs: {refusal}")
        workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        return sum(w.get("nthreads", 1) for w in workers if w.get("resources", {}).get(self.name))

    def run(self, function, jobs, progress):
        """Yield ``(job, outcome)`` for every job, as they finish (the interface of LocalPool.run).

        At most ``DaskCluster.in_flight_per_thread`` jobs per able worker thread are on the cluster at a time:
        a job holds a submission and a gradebook, and a class may have tens of thousands."""
        from distributed import as_completed

        waiting, futures = list(reversed(jobs)), {}
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
            kind, value = future.result()
        except CancelledError:      # distributed's FutureCancelledError too: the scheduler is gone
            raise ClusterLost(f"the Dask scheduler at {self.address} went away") from None
        except Exception as exc:          # distributed's KilledWorker, or a task that could not run
            name = type(exc).__name__
            if name == "KilledWorker":
                return job.failure("grading this submission killed every worker that tried it", retry=False)
            return job.failure(f"the cluster could not run this job: {name}: {exc}"[:300])
        if kind == "ok":
            return pickle.loads(value)
        return job.failure(value, retry=kind != "timeout")

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
