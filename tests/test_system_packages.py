"""`make test` on a machine without Debian's PostgreSQL, Chromium or libseccomp: where it may not install them,
it stops before any test with one message naming the packages and the command. (Installing is
not tested here: the packages are there, and nothing is uninstalled.)"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT


def run_unprivileged(command, system_root):
    """``command`` in the repository as an account that cannot install (nobody, when we are root),
    with the packages looked for under ``system_root`` instead of /."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "ATTENTION_SYSTEM_ROOT": str(system_root)}
    if os.geteuid() == 0:
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    elif shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        pytest.skip("this account may install with sudo: the check would install instead of stopping")
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def bare_system():
    """An empty stand-in for / that the unprivileged account can read (pytest's own temporary
    folders are private to us)."""
    folder = Path(tempfile.mkdtemp(prefix="attention-bare-system-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_make_test_stops_before_any_test_and_names_the_missing_packages(bare_system):
    done = run_unprivileged(["make", "test"], bare_system)
    assert done.returncode != 0
    assert "not installed: postgresql chromium libseccomp2" in done.stderr, done.stderr
    assert "sudo apt-get install --no-install-recommends postgresql chromium libseccomp2" in done.stderr
    assert "-m pytest" not in done.stdout and "pip install" not in done.stdout   # nothing after the check


def test_only_what_is_missing_is_named(bare_system):
    """Chromium where the browser tests look for it (/usr/bin/chromium) and libseccomp where the
    loader finds it (/usr/lib/<triplet>/), no PostgreSQL server."""
    chromium = bare_system / "usr" / "bin" / "chromium"
    chromium.parent.mkdir(parents=True)
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    libseccomp = bare_system / "usr" / "lib" / "x86_64-linux-gnu" / "libseccomp.so.2"
    libseccomp.parent.mkdir(parents=True)
    libseccomp.write_bytes(b"")
    done = run_unprivileged(["bash", ".ci/check-system-packages"], bare_system)
    assert done.returncode == 1
    assert "not installed: postgresql\n" in done.stderr, done.stderr
    assert "install --no-install-recommends postgresql\n" in done.stderr
