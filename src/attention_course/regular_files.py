"""Reading a learner's folder without following anything out of it.

A submission folder is the learner's to write (in nbgrader's exchange, until it is collected): it
may hold symbolic links to the instructor's files, hard links to files that live elsewhere,
named pipes that block a reader, devices. ``walk`` yields only regular files that are wholly
the submission's: each opened through the folder's own descriptors with ``O_NOFOLLOW`` (a link
planted in the path is never followed, even if swapped in while the folder is read), checked
with ``fstat`` on the open file (regular, one link), and read from that descriptor; everything
else is named in ``skipped`` with why. ``recorded_time`` is the submission's time as the kernel
recorded it: the newest status change (ctime) of the folder and of everything in it, which no
process but the kernel's clock can set (``utime`` sets only access and modification times).
"""
import datetime
import os
import stat

class TooLarge(OSError):
    """A regular file larger than the bytes its reader takes."""


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _kind(mode):
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _walk(folder, skipped, on_file, on_entry=None):
    """Walk ``folder`` through directory descriptors, never following a link: ``on_file(path, fd)``
    for each regular file of one link (opened, still to be closed by ``on_file``'s caller here),
    ``on_entry(path, stat)`` for every entry's lstat; what is left out goes in ``skipped``."""
    root = os.open(folder, _DIR)                 # the folder itself must not be a link either
    if on_entry:
        on_entry("", os.fstat(root))
    stack = [("", root)]
    while stack:
        relative, directory = stack.pop()
        try:
            for name in sorted(os.listdir(directory)):
                path = f"{relative}/{name}" if relative else name
                try:
                    info = os.stat(name, dir_fd=directory, follow_symlinks=False)
                except FileNotFoundError:           # removed while we read the folder
                    continue
                if on_entry:
                    on_entry(path, info)
                if stat.S_ISDIR(info.st_mode):
                    try:
                        stack.append((path, os.open(name, _DIR, dir_fd=directory)))
                    except OSError as exc:          # swapped for a link, or unreadable
                        skipped.append((path, f"a folder that could not be opened ({exc.strerror})"))
                    continue
                if not stat.S_ISREG(info.st_mode):
                    skipped.append((path, _kind(info.st_mode)))
                    continue
                try:
                    fd = os.open(name, _FILE, dir_fd=directory)
                except OSError as exc:              # ELOOP: swapped for a link
                    skipped.append((path, f"could not be opened ({exc.strerror})"))
                    continue
                try:
                    opened = os.fstat(fd)
                    if not stat.S_ISREG(opened.st_mode):
                        skipped.append((path, _kind(opened.st_mode)))
                    elif opened.st_nlink != 1:
                        skipped.append((path, f"a hard link (the file has {opened.st_nlink} names; its "
                                              "content lives outside the submission too)"))
                    else:
                        on_file(path, fd, opened)
                finally:
                    os.close(fd)
        finally:
            os.close(directory)


def survey(folder, max_entries):
    """``(entries, bytes)``: how many entries ``folder`` holds (folders, files, links, anything)
    and the apparent size of its regular files (``st_size``: a sparse file counts whole), from
    ``lstat`` alone: nothing is opened but folders, nothing is read, no link is followed. Counting
    stops once there are more than ``max_entries``."""
    entries, size, stack = 0, 0, [folder]
    while stack and entries <= max_entries:
        try:
            with os.scandir(stack.pop()) as listing:
                for entry in listing:
                    entries += 1
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(info.st_mode):
                        size += info.st_size
                    if entries > max_entries:
                        break
        except OSError:           # removed or unreadable while counted: walk names it
            continue
    return entries, size


def walk(folder, max_bytes=None, max_files=None, max_total=None):
    """({relative path: bytes} of the regular files of ``folder``, [(relative path, why)] of
    what was left out). ``max_bytes``: a file larger than this is left out too (a number, or a
    function of the relative path giving one); ``max_files``: files past that many are left out
    unread; ``max_total``: a file that would take the bytes read past this many is left out (each
    file's size is checked with ``fstat`` before it is read, and again as it is read)."""
    files, skipped = {}, []
    total = 0

    def read(path, fd, opened):
        nonlocal total
        if max_files is not None and len(files) >= max_files:
            skipped.append((path, f"past the {max_files:,} files read"))
            return
        limit = max_bytes(path) if callable(max_bytes) else max_bytes
        if max_total is not None:
            left = max_total - total
            if opened.st_size > left:
                skipped.append((path, f"past the {max_total:,} bytes read in all"))
                return
            limit = left if limit is None else min(limit, left)
        if limit is not None and opened.st_size > limit:
            skipped.append((path, f"larger than {limit:,} bytes"))
            return
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if limit is not None and size > limit:
                skipped.append((path, f"larger than {limit:,} bytes"))
                return
            chunks.append(chunk)
        files[path] = b"".join(chunks)
        total += size

    _walk(folder, skipped, read)
    return files, skipped


def visit(folder, on_file, on_entry=None):
    """Walk ``folder`` as ``walk`` does, without reading: ``on_file(path, fd, stat)`` for each
    regular file of one link (its descriptor, open until ``on_file`` returns), ``on_entry(path,
    lstat)`` for every entry (the folder itself as ""). Returns [(relative path, why)] of what
    ``walk`` would leave out."""
    skipped = []
    _walk(folder, skipped, on_file, on_entry)
    return skipped


def irregular(folder):
    """[(relative path, why)] of what in ``folder`` ``walk`` would leave out (nothing is read)."""
    skipped = []
    _walk(folder, skipped, lambda *args: None)
    return skipped


def read_regular(path, max_bytes=None):
    """The bytes of ``path`` if it is a regular file of one link reached without following a
    link (its last component; ``OSError`` otherwise, with why in its message; ``TooLarge`` if it
    has more than ``max_bytes``)."""
    fd = os.open(path, _FILE)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise OSError(f"{path} is {_kind(opened.st_mode)}")
        if opened.st_nlink != 1:
            raise OSError(f"{path} is a hard link ({opened.st_nlink} names)")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise TooLarge(f"{path} is larger than {max_bytes:,} bytes")
        return data
    finally:
        os.close(fd)


def recorded_time(folder):
    """The newest ctime of ``folder`` and of every entry in it (links and pipes included, never
    followed), as a naive UTC datetime: when the submission last changed, as the kernel saw it."""
    newest = [0]

    def note(path, info):
        newest[0] = max(newest[0], info.st_ctime_ns)

    _walk(folder, [], lambda *args: None, on_entry=note)
    return datetime.datetime.fromtimestamp(newest[0] / 1e9, datetime.timezone.utc).replace(tzinfo=None)
