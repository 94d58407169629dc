"""One ``make grade`` at a time per course, and Ctrl-C that never cuts a save in half."""
import contextlib
import fcntl
import os
import signal
import time
from datetime import datetime
from pathlib import Path

from ..errors import CourseBusy

LOCK_FILE = ".grading.lock"


@contextlib.contextmanager
def course_lock(root, wait=False, log=print):
    """Hold the course's grading lock (``fcntl.flock`` on ``<root>/.grading.lock``: the kernel
    drops it when its holder exits, even killed, so no crash leaves it behind). Another holder:
    ``CourseBusy``, or with ``wait`` wait for it."""
    path = Path(root) / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            if not wait:
                raise CourseBusy(f"another make grade is running on this course ({holder}); nothing was "
                                 f"done. Wait for it to finish, or pass --wait to start when it has "
                                 f"(the lock is {path}; it goes away with its process).") from None
            log(f"waiting for the make grade running on this course ({holder}) to finish ...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, started {datetime.now():%Y-%m-%d %H:%M:%S}".encode(), 0)
        yield path
    finally:
        os.close(fd)         # releases the lock


@contextlib.contextmanager
def deferred_interrupt():
    """Ctrl-C while saving waits for the save to end, then stops the run (KeyboardInterrupt)."""
    caught = []
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, lambda *_: caught.append(time.monotonic()))
    except ValueError:           # not the main thread: nothing to defer
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        if callable(previous):       # the handler it was deferred from (the service's remembers it)
            previous(signal.SIGINT, None)
        raise KeyboardInterrupt
