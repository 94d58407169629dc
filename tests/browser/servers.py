"""JupyterLab servers for the browser tests: private Jupyter folders, start, stop, logs.

Each server listens on a port it asks the system for (``--port=0``) and names it in its runtime
file (``jpserver-<pid>.json``, in its private runtime folder): the tests read the port there, so
no other process can take it between a choice and a bind."""
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from accounts import SYSTEM_PYTHON
from conftest import ROOT, course_env

JUPYTER = Path(sys.executable).parent / "jupyter"

# JupyterLab's own settings for these servers: no news or update checks (there is no network),
# and nothing read from or written to the user's ~/.jupyter.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}


def private_folders(home, config=None):
    """Private Jupyter folders under ``home`` (the config folder at ``config`` if given), with
    ``LAB_SETTINGS``: {variable: folder}."""
    folders = {}
    for var, folder in (("JUPYTER_CONFIG_DIR", config or home / "config"), ("JUPYTER_RUNTIME_DIR", home / "runtime"),
                        ("JUPYTERLAB_WORKSPACES_DIR", home / "workspaces"),
                        ("JUPYTERLAB_SETTINGS_DIR", home / "settings"), ("IPYTHONDIR", home / "ipython")):
        folder.mkdir(parents=True, exist_ok=True)
        folders[var] = str(folder)
    for name, value in LAB_SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    return folders


def lab_env(home, course=ROOT):
    """The course environment (for the course at ``course``) plus private Jupyter folders under ``home``."""
    env = course_env(course)
    env.update(private_folders(home))
    env.pop("JUPYTER_TOKEN", None)
    env.pop("BROWSER", None)
    return env


def root_flag():
    return ["--allow-root"] if os.geteuid() == 0 else []


class Lab:
    """A running JupyterLab: its URL (once ``wait_ready`` has read its port), token, process group and log."""

    def __init__(self, command, cwd, env, token, log_path, runtime_dir):
        self.token, self.log_path = token, log_path
        self.runtime_dir = Path(runtime_dir)
        self.port = self.base = None
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={self.token}"

    def get(self, path, method="GET", timeout=10):
        request = urllib.request.Request(f"{self.base}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, lines=40):
        self._log.flush()
        return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])

    def server_info(self):
        """What the server wrote in its runtime file (its port, URL, root folder), or None before it has."""
        for path in self.runtime_dir.glob("jpserver-*.json"):
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):        # being written
                return None
        return None

    def wait_ready(self, timeout=180):
        """Wait for the server's runtime file (its port), then for it to answer; a server that
        exits, or is not up within ``timeout`` s, fails with the end of its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"JupyterLab exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self.port is None and (info := self.server_info()):
                self.port = info["port"]
                self.base = f"http://127.0.0.1:{self.port}"
            if self.port is not None:
                try:
                    self.get("/api/status", timeout=3)
                    return self
                except (urllib.error.URLError, OSError, ValueError):
                    pass
            time.sleep(0.3)
        raise AssertionError(f"JupyterLab did not answer /api/status within {timeout} s:\n{self.log_tail()}")

    def shutdown_kernels(self):
        """Shut the test's kernels down in the background (the server stops at the end anyway)."""
        def shutdown():
            try:
                for session in self.get("/api/sessions"):
                    self.get(f"/api/sessions/{session['id']}", method="DELETE", timeout=60)
            except (urllib.error.URLError, OSError):
                pass
        threading.Thread(target=shutdown, daemon=True).start()

    def in_background(self, path):
        """GET ``path`` in a background thread (to warm something up while other tests run)."""
        def fetch():
            try:
                self.get(path, timeout=180)
            except (urllib.error.URLError, OSError, ValueError):
                pass    # whatever went wrong, the test that needs it will see it
        threading.Thread(target=fetch, daemon=True).start()

    def stop(self):
        """Stop the server's whole process group (make, jupyter, kernels), gently first."""
        if self._log.closed:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        try:    # kernels the server started live in its process group; leave none behind
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._log.close()


def start_course_lab(course, home, log_path):
    """JupyterLab at the root of the course copy ``course`` (so nbgrader finds its config), on
    127.0.0.1, a port of the system's choosing and a random token, as ``make formgrader`` starts it (the grading
    package importable, the course's Content-Security-Policy extension on, the local exchange
    folder made); started, not awaited (``Lab.wait_ready``)."""
    (Path(course) / ".exchange").mkdir(exist_ok=True)    # `make formgrader`'s `mkdir -p .exchange`
    token = secrets.token_hex(24)
    command = [str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", "--port=0",
               f"--ServerApp.token={token}", f"--ServerApp.root_dir={course}", *root_flag(),
               "--ServerApp.jpserver_extensions=attention_grading.cli.formgrader=True"]
    return Lab(command, course, lab_env(home, course), token, log_path, home / "runtime")


def start_lab_as(learner, log_path):
    """JupyterLab as the account of ``learner`` (``accounts.Learner``) in its home, with Debian's
    Python and the course environment's packages (``Learner.env``); started, not awaited."""
    # Hidden from its file browser; the config folder is where its nbgrader_config.py is.
    folders = private_folders(learner.home / ".lab", config=learner.home / ".jupyter")
    for path in [learner.home, *learner.home.rglob("*")]:
        learner.chown(path)
    # sys.prefix is /usr for Debian's Python: without JUPYTER_PATH no nbgrader lab extension
    # (no Nbgrader menu), without JUPYTER_CONFIG_PATH no nbgrader server extensions (its
    # etc/jupyter enables them). JupyterLab 4.6 finds its assets beside its package anyway;
    # JUPYTERLAB_DIR says it outright.
    prefix = Path(sys.prefix)
    env = {**learner.env(), **folders, "JUPYTERLAB_DIR": str(prefix / "share" / "jupyter" / "lab"),
           "JUPYTER_PATH": str(prefix / "share" / "jupyter"), "JUPYTER_CONFIG_PATH": str(prefix / "etc" / "jupyter")}
    token = secrets.token_hex(24)
    command = learner.command(str(SYSTEM_PYTHON), "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                              "--port=0", f"--ServerApp.token={token}",
                              f"--ServerApp.root_dir={learner.home}")
    return Lab(command, learner.home, env, token, log_path, folders["JUPYTER_RUNTIME_DIR"])


def make_lab_env(home):
    """The environment of ``make lab`` as typed in a shell (not nested in ``make test``)."""
    env = lab_env(home)
    for var in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        env.pop(var, None)
    return env


def make_lab_would_reinstall(env):
    """Why ``make lab`` would (re)install the course environment before starting, or None."""
    stale = subprocess.run(["make", "-q", ".venv/.installed"], cwd=ROOT, env=env, capture_output=True)
    if stale.returncode == 0:
        return None
    return ("the course environment's stamp .venv/.installed is missing or older than "
            "pyproject.toml, so `make lab` would (re)install the environment first: run "
            "`make test` (which refreshes it before the tests) or `make lab` once")


def start_make_lab(env, home, log_path):
    """``make lab`` from the repository as the README says, on a port of the system's choosing,
    with a token; ``env`` from ``make_lab_env(home)``."""
    token = secrets.token_hex(24)
    command = ["make", "lab", f"LAB_ARGS=--no-browser --port=0 --ServerApp.token={token}"]
    return Lab(command, ROOT, env, token, log_path, home / "runtime")
