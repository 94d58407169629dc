"""A real Dask cluster on loopback for the tests and the benchmark: ``dask scheduler`` and
``dask worker`` processes, each in its own process group (so that killing one kills its nanny,
its worker and every grading process under it).

The workers run from a folder of their own with no ``PYTHONPATH``: they have the course
environment and nothing of this repository, as on a cluster's machines. With ``tls`` (a folder of
certificates made by ``make cluster-certs``, ``attention_grading.cli.certs``) every process is
started as the instructor's guide (docs/instructor-guide.md) says, with its role's certificate
(mutual TLS); without, on plain tcp://.
The scheduler listens on a port the system chooses (``--port 0``) and writes the address it
listens on into its scheduler file once it does: nothing else can take the port in between.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

DASK = Path(sys.executable).parent / "dask"


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "DASK_", "ATTENTION_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def tls_args(folder, role):
    """``dask scheduler``/``dask worker`` options for ``role``'s certificates in ``folder``."""
    folder = Path(folder)
    return ["--tls-ca-file", str(folder / "ca.pem"), "--tls-cert", str(folder / f"{role}.pem"),
            "--tls-key", str(folder / f"{role}-key.pem")]


class LoopbackCluster:
    """A scheduler on 127.0.0.1 and named workers (one thread each), with their logs in ``folder``;
    ``tls``: the folder of the course's cluster certificates (None: plain tcp://)."""

    def __init__(self, folder, tls=None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tls = Path(tls) if tls else None
        self.workers = {}
        scheduler_file = self.folder / "scheduler.json"
        self.scheduler = self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                                   "--scheduler-file", str(scheduler_file), "--no-dashboard",
                                                   *(tls_args(self.tls, "scheduler") if tls else [])])
        try:
            self.address = self._listening_address(scheduler_file)
        except BaseException:
            self.stop()
            raise
        self.port = int(self.address.rsplit(":", 1)[1])

    def _listening_address(self, scheduler_file, timeout=120):
        """The address the scheduler listens on, from the file it writes once it does."""
        def written():
            try:
                return json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):      # not yet written, or written half-way
                return None
        wait_until(lambda: written() or self.scheduler.poll() is not None, timeout,
                   f"the scheduler's address in {scheduler_file}")
        if written() is None:
            raise AssertionError(f"the scheduler exited ({self.scheduler.returncode}):\n{self.log('scheduler')}")
        return written()

    def _start(self, name, command, **env):
        log = open(self.folder / f"{name}.log", "w")
        return subprocess.Popen(command, cwd=self.folder, env=_clean_env(**env), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def add_worker(self, name, *extra, tls="course", address=None, **env):
        """A ``dask worker`` (with its nanny), as the instructor's guide starts one. ``tls``: "course" (the
        course's worker certificate, when the cluster has them), a folder of other certificates,
        or None; ``address``: the scheduler's, if not ours; ``extra``: more options; ``env``:
        extra variables."""
        local = self.folder / name
        local.mkdir(exist_ok=True)
        certificates = self.tls if tls == "course" else tls
        self.workers[name] = self._start(name, [str(DASK), "worker", address or self.address, "--name", name,
                                                "--nthreads", "1", "--no-dashboard",
                                                "--local-directory", str(local), *extra,
                                                *(tls_args(certificates, "worker") if certificates else [])],
                                         **env)
        return self.workers[name]

    def client(self, **kwargs):
        """A client of the cluster, with the course's client certificate when it has them."""
        from distributed import Client

        if self.tls:
            from attention_grading.run.cluster_tls import security

            kwargs.setdefault("security", security(self.tls, "client"))
        return Client(self.address, timeout=60, set_as_default=False, **kwargs)

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
