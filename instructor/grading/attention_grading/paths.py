"""Where the instructor-only code lives, found from this file (never from the working directory),
and how the grader writes a file that others read while it runs."""
import os
import tempfile
from pathlib import Path

GRADING_DIR = Path(__file__).resolve().parents[1]        # instructor/grading
INSTRUCTOR_DIR = GRADING_DIR.parent                      # instructor/
REFERENCE_DIR = INSTRUCTOR_DIR / "reference"             # instructor/reference
LESSONS_DIR = INSTRUCTOR_DIR / "lessons"                 # instructor/lessons/<id>/: one folder a lesson
COURSE_ROOT = INSTRUCTOR_DIR.parent


def write_atomically(path, data, *, durable=False, mode=None):
    """Write ``data`` (str or bytes) to ``path`` whole or not at all: a reader sees the old file or
    the new one, never part of either (a temporary file beside it, renamed over it). ``durable``:
    on disk before the rename (what decides hidden cases or answers a submission); ``mode``: the
    new file's permissions (a temporary file is made 600)."""
    path = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
