"""What runs inside a Dask worker when ``make grade --scheduler`` grades on a cluster.

This module travels by value (cloudpickle) with the run, and imports nothing of the grader: a
worker needs only the course environment (``pip install '.[instructor]'``), not this repository.
``CourseGrader``, a worker plugin, brings this run's grader and reference (their files, sent
once per worker), checks that the worker can sandbox kernels, and only then offers the run's
resource, so the scheduler never gives a job to a worker that cannot sandbox. Each job runs in a
grading process of its own (``attention_grading.run.pool.serve``, started from the files sent, so a
worker serving several runs never mixes their code) with the same wall-clock limit as locally;
the worker only passes bytes through and never unpickles a job or a result. What a task returns
is plain data (a dict of text and bytes, which Dask sends as msgpack): the outcome in ``wire``
form, or why there is none; the grader parses it and unpickles nothing.
"""
import asyncio
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from distributed import WorkerPlugin

logger = logging.getLogger("attention_grading.run.cluster")

CHILD = "import sys; from attention_grading.run.pool import serve; serve(int(sys.argv[1]))"
# What grading needs (the course environment) is importable, and kernels can be sandboxed.
SANDBOX_CHECK = ("import json, nbgrader, attention_course; from attention_grading.kernels.sandbox.support import missing; "
                 "print(json.dumps(missing()))")


class CourseGrader(WorkerPlugin):
    """The worker plugin of one run.

    ``files``: {relative path: bytes} of ``grading/attention_grading``,
    ``reference/attention_reference`` and ``lessons/`` (the lessons' specs and references); ``name``: the run's plugin and resource name (it names
    the files' digest, so two runs of the same grader share one copy)."""

    def __init__(self, name, files, job_timeout, sandboxed=True):
        self.name, self.files, self.job_timeout, self.sandboxed = name, files, job_timeout, sandboxed
        self.refusal = None

    async def setup(self, worker):
        self.folder = Path(worker.local_directory) / self.name
        self.address = worker.address
        self._idle, self._lock = [], threading.Lock()
        grading = str(self.folder / "grading")
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([grading, *paths])}
        try:
            await asyncio.to_thread(self._unpack)
            self.refusal = await asyncio.to_thread(self._sandbox_refusal) if self.sandboxed else None
        except Exception as exc:       # a full disk, a missing package: this worker cannot grade
            self.refusal = f"the grader could not be set up here: {type(exc).__name__}: {exc}"
        try:       # why not, as plain text for make grade (it never asks a worker to run code for that)
            await worker.scheduler.set_metadata(keys=[self.name, "refusals", worker.address],
                                                value=self.refusal or "")
        except Exception as exc:
            logger.warning("could not tell the scheduler whether this worker grades: %s", exc)
        if self.refusal:
            logger.warning("this worker refuses grading jobs: it cannot sandbox kernels: %s", self.refusal)
            return
        await worker.set_resources(**{self.name: worker.state.nthreads})

    def _unpack(self):
        if (self.folder / ".complete").exists():
            return
        partial = self.folder.with_name(self.folder.name + f".{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        for relative, data in self.files.items():
            path = partial / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (partial / ".complete").write_text("")
        try:
            partial.rename(self.folder)
        except OSError:        # another plugin of the same run got there first
            shutil.rmtree(partial, ignore_errors=True)

    def _sandbox_refusal(self):
        """Why kernels cannot be sandboxed on this worker (the grader's own check), or None."""
        done = subprocess.run([sys.executable, "-c", SANDBOX_CHECK], env=self.env, capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            return f"the course environment or the sandbox check failed here: {last}"
        reasons = json.loads(done.stdout.strip().splitlines()[-1])
        return "; ".join(reasons) or None

    def teardown(self, worker):
        with self._lock:
            children, self._idle = self._idle, []
        for child in children:
            child.kill()

    # -- jobs ------------------------------------------------------------------------------------

    def grade(self, payload):
        """{"kind": "ok", "outcome": the outcome's wire bytes}, or {"kind": "died" or "timeout",
        "message": why}."""
        with self._lock:
            child = self._idle.pop() if self._idle else None
        if child is None:
            child = _GradingProcess(self.env, str(self.folder))
        try:
            reply = child.run(payload, self.job_timeout)
        except TimeoutError:
            child.kill()
            return {"kind": "timeout", "message": f"grading took longer than {self.job_timeout:g} s: its "
                                                  f"grading process on worker {self.address} was stopped"}
        except (EOFError, OSError):
            child.kill()
            return {"kind": "died", "message": f"the grading process on worker {self.address} died while "
                                               "grading this submission"}
        with self._lock:
            self._idle.append(child)
        return {"kind": "ok", "outcome": reply}


class _GradingProcess:
    """One grading process (``pool.serve``) in its own process group, fed over a socket."""

    def __init__(self, env, cwd):
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-c", CHILD, str(theirs.fileno())],
                                        pass_fds=[theirs.fileno()], env=env, cwd=cwd,
                                        stdin=subprocess.DEVNULL)
        theirs.close()
        self.conn = Connection(ours.detach())
        if not self.conn.poll(300):           # its start is not a job's time (pool._worker_main)
            self.kill()
            raise EOFError("the grading process did not start")
        self.conn.recv_bytes()                # "ready"

    def run(self, payload, timeout):
        self.conn.send_bytes(payload)
        deadline = time.monotonic() + timeout if timeout else None
        while not self.conn.poll(1.0):
            if self.process.poll() is not None:
                raise EOFError
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError
        return self.conn.recv_bytes()

    def kill(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)     # the process, its zygote and kernels
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.kill()
        except OSError:
            pass
        self.process.wait(10)
        self.conn.close()


def grade_remotely(plugin_name, payload):
    """The task of one job on a worker: ``CourseGrader.grade``'s reply, or {"kind": "refused", ...};
    never raises (an error would travel as a pickle, which the grader does not read)."""
    try:
        from distributed import get_worker

        worker = get_worker()
        plugin = worker.plugins.get(plugin_name)
        if plugin is None:
            return {"kind": "refused", "message": f"worker {worker.address} has not got this run's grader"}
        if plugin.refusal:
            return {"kind": "refused", "message": f"worker {worker.address} cannot sandbox kernels: {plugin.refusal}"}
        return plugin.grade(payload)
    except Exception as exc:
        return {"kind": "failed", "message": f"the worker could not run the job: {type(exc).__name__}: {exc}"[:500]}
