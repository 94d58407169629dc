"""The grading service's eyes on the exchange: which submissions in the inbound folder are
complete and not answered yet.

The inbound folder is the truth: every look at it (``ready_arrivals``) lists it whole. inotify
(through watchdog) only wakes the service as soon as something changes there; without it (or with
``GradingService.inotify`` off, e.g. on a network file system that sends no events) the service
looks every ``poll_seconds``. A submission is complete once nbgrader's ``submit`` wrote its last
file, ``submission_secret.txt`` (128 hex digits), and nothing in it changed for ``settle_seconds``
(as the kernel recorded it: ``regular_files.recorded_time``); a folder that never completes is
never graded and costs nothing.
"""
import datetime
import os
import stat
import threading

from attention_course.regular_files import recorded_time

from .service_queue import Arrival

SECRET = "submission_secret.txt"


class InboundWatcher:
    """Wakes ``wait`` when the inbound folder changes (inotify), else after its timeout."""

    def __init__(self, inbound, inotify=True):
        self.inbound = str(inbound)
        self.changed = threading.Event()
        self.observer = None
        self.how = "polling"
        if inotify:
            try:
                self._start_observer()
                self.how = "inotify (watchdog)"
            except Exception as exc:     # no watchdog, no inotify watches left, no such folder yet
                self.how = f"polling (inotify unavailable: {type(exc).__name__}: {exc})"
                self.observer = None

    def _start_observer(self):
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers.inotify import InotifyObserver

        changed = self.changed

        class Wake(FileSystemEventHandler):
            def on_any_event(self, event):
                changed.set()

        self.observer = InotifyObserver()
        self.observer.daemon = True
        # Recursive: a submission's last file (its secret) is written inside its folder.
        self.observer.schedule(Wake(), self.inbound, recursive=True)
        self.observer.start()

    def wait(self, timeout):
        """Until something changed in the inbound folder, or ``timeout`` seconds."""
        self.changed.wait(timeout)
        self.changed.clear()

    def stop(self):
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)
            self.observer = None


def _complete(path, settle_seconds, now):
    """Whether the submission folder ``path`` is written whole and settled."""
    secret = os.path.join(path, SECRET)
    try:
        info = os.lstat(secret)
        if not stat.S_ISREG(info.st_mode) or info.st_size < 128:
            return False
        changed = recorded_time(path)
    except OSError:
        return False
    return (now - changed).total_seconds() >= settle_seconds


def ready_arrivals(collector, lessons, answered, settle_seconds, refused_names):
    """(Arrivals complete and not ``answered``, oldest first; names of folders that are not
    submissions, newly found). ``collector``: the course's ``OwnedCollect`` (its reading of a
    folder: whose it is, at what time); ``lessons``: the course's lessons (a folder for another
    is left alone)."""
    try:
        names = sorted(os.listdir(collector.inbound_path))
    except FileNotFoundError:
        return [], []
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found, refused = [], []
    for name in names:
        if name in answered or name in refused_names or name.startswith("."):
            continue
        parts = name.rsplit("+", 3)
        if len(parts) < 3 or parts[1] not in lessons:
            continue
        path = os.path.join(collector.inbound_path, name)
        if not _complete(path, settle_seconds, now):
            continue
        record = collector._path_to_record(path)
        if "refused" in record:
            refused.append((name, record["refused"]))
            continue
        found.append(Arrival(record["username"], parts[1], name, record["timestamp"]))
    found.sort(key=lambda a: a.arrived)
    return found, refused
