"""Worker processes for grading jobs, each job with a wall-clock limit.

Each worker runs one job at a time, in its own process group (with the kernel zygote it starts and,
through their parent-death signal, every kernel). A job whose worker dies, or that outlives its
deadline (a worker that hangs, or is stopped), is charged to that job alone: the worker's group is
killed and a fresh worker takes the next job. Nothing a submission does can stop the pool: its
kernels can neither see nor signal these processes (``sandbox``), and the deadline ends the rest.

``run_with_second_attempt`` grades a failed job once more after all the others, so that a failure
the submission did not cause (a machine under load) costs a second try, never a grade.
"""
import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.connection import wait

# Imported once by the forkserver, whose forks are the workers. Never the command's own module
# (attention_grading.cli.grade), nor anything that imports it: multiprocessing runs the main module
# afresh in every worker (as __mp_main__), and runpy warns, once per worker, when a copy of it is
# already imported ("RuntimeWarning: 'attention_grading.cli.grade' found in sys.modules ...").
PRELOAD = ["attention_grading.run.jobs", "attention_grading.run.autograde", "attention_grading.run.feedback_jobs",
           "nbgrader.converters", "nbgrader.api", "nbgrader.preprocessors"]


def serve(fd):
    """A worker started as a command rather than forked (``python -c`` in a Dask worker, whose
    daemon process may not fork multiprocessing children): the same loop on inherited ``fd``,
    answering with each outcome's ``wire`` bytes (the Dask worker passes them on unread)."""
    from multiprocessing.connection import Connection

    from .wire import encode

    conn = Connection(fd)
    _worker_main(conn, lambda outcome: conn.send_bytes(encode(outcome)))


def _worker_main(conn, answer=None):
    """A worker: run ``function(job)`` for each (function, job) received, until told to stop, and
    ``answer`` with its outcome (by default sent pickled, to the pool that forked this worker)."""
    import logging
    import warnings

    answer = answer or conn.send

    os.setpgid(0, 0)    # its own group: the pool kills the worker, its zygote and kernels together
    try:
        from ..kernels.sandbox._libc import PR_SET_PDEATHSIG, prctl

        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)   # never outlive the grader
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the main process
    warnings.filterwarnings("ignore")     # nbgrader's own SQLAlchemy warnings, kernels' chatter
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    logging.basicConfig(level=logging.WARNING)
    for name in ("traitlets", "nbgrader", "NbGraderApp"):
        logging.getLogger(name).setLevel(logging.WARNING)
    conn.send("ready")             # a job's time starts when it reaches a worker that is up
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        function, job = message
        answer(function(job))


class Feed:
    """The jobs of a run, taken one at a time as workers free up: ``jobs`` may be a generator
    (``run.plan``'s), so only the jobs on workers (and the one planned ahead) are in memory,
    whatever the size of the class."""

    def __init__(self, jobs):
        self._jobs, self._next = iter(jobs), None
        self._advance()

    def _advance(self):
        self._next = next(self._jobs, _END)

    def __bool__(self):
        return self._next is not _END

    def pop(self):
        """The next job (planned ahead by one, so that a freed worker never waits for the plan)."""
        job = self._next
        if job is not _END:
            self._advance()
        return job


_END = object()     # a Feed's end


class _Worker:
    START_SECONDS = 300      # a worker's start (the forkserver's first one imports nbgrader) is not a job's time

    def __init__(self, context):
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(theirs,), daemon=True)
        self.process.start()
        theirs.close()
        self.job, self.deadline = None, None
        if not self.conn.poll(self.START_SECONDS) or self.conn.recv() != "ready":
            self.kill()
            raise RuntimeError(f"a grading process did not start within {self.START_SECONDS} s")

    def give(self, function, job, timeout):
        self.job, self.deadline = job, (time.monotonic() + timeout if timeout else None)
        self.conn.send((function, job))

    def kill(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.join(5)
        self.conn.close()

    def stop(self):
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(5)
        if self.process.is_alive():
            self.kill()


class LocalPool:
    """``workers`` grading processes on this machine; ``job_timeout``: seconds a job may take."""

    def __init__(self, workers, job_timeout=None):
        self.workers, self.job_timeout = max(1, int(workers)), job_timeout
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        self._context = context
        self._idle, self._busy = [], []
        self._warming, self._warmed = None, []

    def warm(self):
        """Start the workers now, in a thread, while the caller goes on (plans the run): the
        forkserver's imports and each worker's start then overlap that work instead of delaying
        the first job. A worker that cannot start is started again when a job needs it."""
        def start():
            for _ in range(self.workers):
                try:
                    self._warmed.append(_Worker(self._context))
                except Exception:
                    return

        if self._warming is None and not self._idle:
            self._warming = threading.Thread(target=start, name="pool-warm", daemon=True)
            self._warming.start()

    def _warm_ones(self):
        """The workers ``warm`` started (once it is done), idle."""
        if self._warming is not None:
            self._warming.join()
            self._idle.extend(self._warmed)
            self._warming, self._warmed = None, []

    def _worker(self):
        self._warm_ones()
        return self._idle.pop() if self._idle else _Worker(self._context)

    def run(self, function, jobs, progress):
        """Yield ``(job, outcome)`` for every job, as they finish. A freed worker gets its next job
        before the outcome is handed over, so it never waits while the caller saves a result."""
        waiting, busy = Feed(jobs), self._busy

        def top_up():
            while waiting and len(busy) < self.workers:
                worker = self._worker()
                worker.give(function, waiting.pop(), self.job_timeout)
                busy.append(worker)

        while waiting or busy:
            top_up()
            now = time.monotonic()
            deadlines = [w.deadline - now for w in busy if w.deadline is not None]
            ready = wait([w.conn for w in busy], timeout=max(0.0, min(deadlines)) if deadlines else None)
            for worker in list(busy):
                job, outcome, healthy = worker.job, None, False
                if worker.conn in ready:
                    try:
                        outcome, healthy = worker.conn.recv(), True
                    except (EOFError, OSError):
                        outcome = job.failure("the grading process died while grading this submission")
                elif worker.deadline is not None and time.monotonic() >= worker.deadline:
                    outcome = job.failure(f"grading took longer than {self.job_timeout:g} s: its grading "
                                          "process was stopped", retry=False)
                if outcome is None:
                    continue
                busy.remove(worker)
                if healthy:
                    worker.job = worker.deadline = None
                    self._idle.append(worker)
                else:
                    worker.kill()
                top_up()
                progress.update(1)
                yield job, outcome

    def close(self):
        self._warm_ones()
        while self._idle:
            self._idle.pop().stop()

    def terminate(self):
        """Stop at once (Ctrl-C): every worker killed with its kernels, busy or not."""
        self._warm_ones()
        while self._busy:
            self._busy.pop().kill()
        while self._idle:
            self._idle.pop().kill()


def run_with_second_attempt(pool, function, jobs, progress, keep):
    """Run ``function(job)`` for every job on ``pool``; ``keep(job, outcome, attempt)`` stores an
    outcome and returns None, or says why it could not.

    A job turned down is run once more, after all the others, unless its outcome says a second
    try is pointless (it used up its time). Returns ({job: why} turned down for good,
    {job: why the first attempt failed} of the jobs kept on their second attempt).
    """
    first, final, again = {}, {}, []       # ``jobs`` may be a generator: the failed ones are kept
    for attempt in (1, 2):
        if attempt == 2:
            jobs = again
            if not jobs:
                break
            progress.total += len(jobs)
            progress.refresh()
        for job, outcome in pool.run(function, jobs, progress):
            why = keep(job, outcome, attempt)
            if why is None:
                continue
            if attempt == 1 and getattr(outcome, "retry", True):
                first[job.key] = why
                again.append(job)
            else:
                final[job.key] = why
    return final, {key: why for key, why in first.items() if key not in final}
