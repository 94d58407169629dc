"""The one way grading starts a process it must hear from: fork it, and read one status line.

The child runs ``body(report)`` and never returns (it ends with ``os._exit`` or an exec);
``report(line)`` sends the parent one line and closes the pipe: ``ready``, ``error: <why>``, or
whatever the caller's protocol puts there. The parent gets the child's pid and that line, or
``""`` if the child ended (or exec'd, the pipe being close-on-exec) before it reported.

Every start goes through ``fork_reporting``: the sandbox's waiter and the sandboxed process
(``spawn``), a cold kernel under its launcher (``launch``) and an unsandboxed forked kernel
(``zygote``).
"""
import os
import traceback

READY = "ready"


def error_line(why):
    """The status line of a start that failed: ``error: <why>`` on one line."""
    return "error: " + " ".join(str(why).split())


class Report:
    """The child's end of the status pipe: one line, then closed."""

    def __init__(self, fd):
        self.fd = fd

    def __call__(self, line):
        if self.fd is None:
            return
        try:
            os.write(self.fd, (str(line).replace("\r", " ").replace("\n", " ") + "\n").encode())
        finally:
            self.close()

    def ready(self):
        self(READY)

    def error(self, why):
        self(error_line(why))

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def fork_reporting(body, close=()):
    """Fork a child that runs ``body(report)``; returns ``(pid, status line)``.

    ``close``: file descriptors of the caller the child must not keep (closed first thing).
    The caller must be single-threaded (it forks). A body that returns or raises ends the child
    with status 1 (its traceback on the child's stderr).
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            for fd in close:
                os.close(fd)
            body(Report(write_end))
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(1)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        line = pipe.readline()
    return pid, line.decode(errors="replace").strip()


def wait_for(pid):
    """Wait for child ``pid``; its exit code (1 if it was already reaped)."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
