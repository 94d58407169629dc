"""Real Unix accounts for learners (the exchange tests, in a shell and in the browser).

The learners run Debian's own Python (root's Python lives in root's home, closed to them) with
the course environment's packages on their path: the same packages, readable by every account.
"""
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT, copy_course

SYSTEM_PYTHON = Path("/usr/bin/python3")


def tool(name):
    """A system tool, found even where /usr/sbin is not on PATH."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")


def skip_unless_accounts_possible():
    """Skip unless this test may make accounts whose Python is the course environment's."""
    if os.geteuid() != 0 or not SYSTEM_PYTHON.exists() or not all(map(tool, ("setpriv", "useradd", "usermod"))):
        pytest.skip("the exchange loop needs root (to make the learners' accounts), Debian's python3, "
                    "setpriv and useradd")
    if f"{sys.version_info.major}.{sys.version_info.minor}" != subprocess.run(
            [str(SYSTEM_PYTHON), "-c", "import sys; print(f'{sys.version_info.major}.{sys.version_info.minor}')"],
            capture_output=True, text=True).stdout.strip():
        pytest.skip("Debian's python3 is not the course environment's Python version")


def account(name, home, created):
    """The account ``name`` with its home at ``home`` (made if missing: its name goes in ``created``)."""
    if subprocess.run([tool("id"), "-u", name], capture_output=True).returncode != 0:
        subprocess.run([tool("useradd"), "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh",
                        name], check=True, capture_output=True)
        created.append(name)
    else:
        subprocess.run([tool("usermod"), "--home", str(home), name], check=True, capture_output=True)
    home.mkdir(parents=True)
    entry = pwd.getpwnam(name)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o700)
    return entry


def course_with_exchange(base, lesson):
    """(exchange folder, course copy of ``lesson`` whose config points at it) under ``base``."""
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)       # as nbgrader's documentation sets it up: everyone may create in it
    course = copy_course(base / "course", lessons=[lesson])
    with open(course / "nbgrader_config.py", "a") as config:
        config.write(f'\nc.Exchange.root = "{exchange}"\n')
    return exchange, course


def remove_accounts(created):
    for name in created:
        subprocess.run([tool("userdel"), name], capture_output=True)


class Learner:
    """One learner's account: runs nbgrader as that account, in its own home."""

    def __init__(self, name, home, exchange, created):
        self.name, self.home = name, home
        self.entry = account(name, home, created)
        config = home / ".jupyter" / "nbgrader_config.py"
        config.parent.mkdir()
        config.write_text(f'c = get_config()\nc.CourseDirectory.course_id = "attention"\n'
                          f'c.Exchange.root = "{exchange}"\n'
                          'c.ExchangeFactory.submit = "attention_course.exchange.PrivateSubmit"\n')
        self.chown(config.parent, config)

    def chown(self, *paths):
        for path in paths:
            os.chown(path, self.entry.pw_uid, self.entry.pw_gid)

    def env(self):
        site = sysconfig.get_paths()["purelib"]          # the course environment, read-only to them
        return {"HOME": str(self.home), "USER": self.name, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                "PYTHONPATH": os.pathsep.join([site, str(ROOT / "src")])}

    def command(self, *command):
        """``command`` as this account (for ``subprocess``; ``env()`` is its environment)."""
        return [tool("setpriv"), f"--reuid={self.entry.pw_uid}", f"--regid={self.entry.pw_gid}",
                "--init-groups", "--", *command]

    def run(self, *command, check=True):
        done = subprocess.run(self.command(*command), cwd=self.home, env=self.env(),
                              capture_output=True, text=True, timeout=600)
        if check and done.returncode != 0:
            raise AssertionError(f"{self.name}: {' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
        return done

    def nbgrader(self, *args, check=True):
        return self.run(str(SYSTEM_PYTHON), "-m", "nbgrader", *args, check=check)

    def python(self, code):
        return self.run(str(SYSTEM_PYTHON), "-c", code, check=False)

    def skip_unless_environment_readable(self):
        reachable = self.python("import nbgrader, attention_course")
        if reachable.returncode != 0:
            pytest.skip(f"the course environment is not readable by other accounts here: {reachable.stderr[-300:]}")
