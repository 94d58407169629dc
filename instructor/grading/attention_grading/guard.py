"""Kernel side of the grading guard: report (and refuse) any reach for the instructor's files.

Installed at kernel start-up by ``execute.GuardedExecute`` (through ``IPKernelApp.exec_lines``)
when ``ATTENTION_GUARD`` names the grader's socket. An audit hook, which Python offers no way to
remove, watches imports of the reference and of the grading helpers and every open or listing
of a path under ``instructor/``. When code from the submission is on the call stack, the event
is reported to the grader and refused. The same socket carries hidden-test verdict requests, so
the grader, not the kernel, decides each hidden test.
"""
import hashlib
import json
import linecache
import os
import socket
import sys
import sysconfig
import threading

from .paths import GRADING_DIR, INSTRUCTOR_DIR

WATCHED_MODULES = ("attention_reference", "attention_grading")
WATCHED_EVENTS = ("open", "os.listdir", "os.scandir", "glob.glob", "os.chdir", "shutil.copyfile")

_channel = None


class Channel:
    """One JSON line per message to the grader, one JSON line back; serialised by a lock."""

    def __init__(self, address):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(address)
        self._reader = self._sock.makefile("r", encoding="utf-8")
        self._lock = threading.Lock()

    def ask(self, message):
        data = (json.dumps(message) + "\n").encode("utf-8")
        with self._lock:
            self._sock.sendall(data)
            line = self._reader.readline()
        if not line:
            raise ConnectionError("the grader closed the guard channel")
        return json.loads(line)


def channel():
    """The live channel to the grader, or None outside of guarded grading."""
    return _channel


def _trusted_prefixes():
    paths = sysconfig.get_paths()
    prefixes = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    prefixes.add(str(INSTRUCTOR_DIR))   # the grader's own code: client, substitutes
    try:
        import attention_course

        prefixes.add(os.path.dirname(attention_course.__file__))
    except ImportError:
        pass
    return tuple(sorted(p for p in prefixes if p))


def install():
    """Connect to the grader and start watching; a no-op outside guarded grading."""
    global _channel
    address = os.environ.get("ATTENTION_GUARD")
    if not address or _channel is not None:
        return
    _channel = Channel(address)
    trusted_cells = set(_channel.ask({"type": "hello", "pid": os.getpid()})["trusted_cells"])
    prefixes = _trusted_prefixes()
    instructor = os.path.realpath(INSTRUCTOR_DIR)
    search_entry = os.path.realpath(GRADING_DIR)
    ask = _channel.ask
    getframe = sys._getframe
    realpath = os.path.realpath
    busy = threading.local()

    def is_trusted(code):
        filename = code.co_filename
        if filename.startswith(prefixes) or filename.startswith("<frozen "):
            return True
        entry = linecache.cache.get(filename)    # (size, mtime, lines, name) for notebook cells
        if entry and len(entry) > 2:
            source = "".join(entry[2]).strip()
            return hashlib.sha256(source.encode("utf-8")).hexdigest() in trusted_cells
        return False

    def submission_frames():
        frame, names = getframe(2), []
        while frame is not None:
            if not is_trusted(frame.f_code):
                names.append(frame.f_code.co_name)
            frame = frame.f_back
        return names

    def touches_instructor(event, args):
        if event == "import":
            return str(args[0]).split(".")[0] in WATCHED_MODULES
        if event in WATCHED_EVENTS and args:
            target = args[0]
            if isinstance(target, int) or target is None:
                return False
            try:
                path = realpath(os.fsdecode(target))
            except (TypeError, ValueError):
                return False
            # Module search lists every sys.path entry, instructor/grading among them.
            return path != search_entry and (path == instructor or path.startswith(instructor + os.sep))
        return False

    def inside_import_system():
        # Finding any module scans every sys.path entry, instructor/grading included: that is
        # not a reach for our files. Imports of the watched modules raise "import" events.
        caller = getframe(2)
        return caller is not None and caller.f_code.co_filename.startswith("<frozen importlib")

    def hook(event, args):
        if getattr(busy, "active", False) or not touches_instructor(event, args):
            return
        if event != "import" and inside_import_system():
            return
        busy.active = True
        try:
            names = submission_frames()
            if not names:
                return
            detail = f"{event} {args[0]!r}"[:300]
            ask({"type": "flag", "event": event, "detail": detail, "functions": names[:20]})
        finally:
            busy.active = False
        raise PermissionError("grading: the submission may not use or look for the instructor's files")

    sys.addaudithook(hook)


def cell_hash(source):
    """How the grader and the guard name a trusted cell: the sha256 of its stripped source."""
    return hashlib.sha256(source.strip().encode("utf-8")).hexdigest()
