"""A real Dask cluster on loopback for the tests and the benchmark: ``dask scheduler`` and
``dask worker`` processes, each in its own process group (so that killing one kills its nanny,
its worker and every grading process under it).

The workers run from a folder of their own with no ``PYTHONPATH``: they have the course
environment and nothing of this repository, as on a cluster's machines.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ports import free_port

DASK = Path(sys.executable).parent / "dask"


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "DASK_", "ATTENTION_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


class LoopbackCluster:
    """A scheduler on 127.0.0.1 and named workers (one thread each), with their logs in ``folder``."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.workers = {}
        self.scheduler = self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1",
                                                   "--port", str(self.port), "--no-dashboard"])

    def _start(self, name, command, **env):
        log = open(self.folder / f"{name}.log", "w")
        return subprocess.Popen(command, cwd=self.folder, env=_clean_env(**env), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def add_worker(self, name, **env):
        """A ``dask worker`` (with its nanny), as the README starts one; ``env``: extra variables."""
        local = self.folder / name
        local.mkdir(exist_ok=True)
        self.workers[name] = self._start(name, [str(DASK), "worker", self.address, "--name", name,
                                                "--nthreads", "1", "--no-dashboard",
                                                "--local-directory", str(local)], **env)
        return self.workers[name]

    def client(self):
        from distributed import Client

        return Client(self.address, timeout=60, set_as_default=False)

    def wait_for_workers(self, n, timeout=120):
        with self.client() as client:
            client.wait_for_workers(n, timeout=timeout)

    def log(self, name):
        return (self.folder / f"{name}.log").read_text(errors="replace")

    @staticmethod
    def kill(process):
        """SIGKILL a process group started here (a worker: nanny, worker, grading processes)."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(30)

    def stop(self):
        for process in [*self.workers.values(), self.scheduler]:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    self.kill(process)
                except ProcessLookupError:
                    pass
            try:          # what the group left behind (grading processes, kernels)
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s")
