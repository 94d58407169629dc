"""Nothing lost on an instructor's slip: a copy of the SQLite gradebook before each run that writes
it, and no silent new gradebook where grades were."""
import sqlite3
from datetime import datetime
from pathlib import Path

from traitlets import Integer, Unicode
from traitlets.config import Configurable

from ..course import RESULT_FILE
from ..errors import GradebookError


def sqlite_path(db_url):
    """The file of a SQLite gradebook URL, or None for another database."""
    if not db_url.startswith("sqlite:///"):
        return None
    rest = db_url[len("sqlite:///"):].split("?", 1)[0]
    return None if rest in ("", ":memory:") else Path(rest)


def check_gradebook(db_url, course_id, root, allow_new=False):
    """Refuse to start over silently: when the gradebook is missing (a SQLite file that is not
    there) or holds no submission while ``autograded/`` holds graded results, raise
    ``GradebookError`` naming both, unless ``allow_new`` (``--new-gradebook``)."""
    graded = sorted(Path(root, "autograded").glob(f"*/*/{RESULT_FILE}"))
    if allow_new or not graded:
        return
    where = sqlite_path(db_url)
    if where is not None and not where.exists():
        state = f"the gradebook {where} does not exist"
    else:
        from nbgrader.api import Gradebook, SubmittedAssignment

        with Gradebook(db_url, course_id) as gb:
            if gb.db.query(SubmittedAssignment).first() is not None:
                return
        state = f"the gradebook {_shown(db_url)} holds no submission"
    raise GradebookError(
        f"{state}, but {Path(root, 'autograded')} holds {len(graded)} graded submission(s): was the "
        f"gradebook moved, or its URL (ATTENTION_GRADEBOOK_URL, --db-url) mistyped? Nothing was done. "
        f"Put it back (copies are in {_backups_hint(db_url)}), or start over on purpose with "
        f"--new-gradebook (every submission is graded again; manual grades are not in it).")


def _shown(db_url):
    """A database URL without its password."""
    import re

    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", db_url)


def _backups_hint(db_url):
    where = sqlite_path(db_url)
    return str(where.parent / "gradebook-backups") if where else "your database's own backups"


class GradebookBackup(Configurable):
    """A copy of the SQLite gradebook before each ``make grade`` that writes it."""

    keep = Integer(5, help="How many gradebook copies to keep (the newest); 0: make none.").tag(config=True)
    folder = Unicode("", help="Where the copies go (default: gradebook-backups/ beside the "
                              "gradebook).").tag(config=True)

    def make(self, db_url):
        """Copy the gradebook (SQLite's online backup: a consistent copy even while another
        program, the formgrader say, has it open); return the copy's path, or None."""
        source = sqlite_path(db_url)
        if self.keep <= 0 or source is None or not source.exists():
            return None
        folder = Path(self.folder) if self.folder else source.parent / "gradebook-backups"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{source.stem}-{datetime.now():%Y%m%d-%H%M%S-%f}{source.suffix or '.db'}"
        with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
        copies = sorted(folder.glob(f"{source.stem}-*{source.suffix or '.db'}"))
        for old in copies[:-self.keep]:
            old.unlink()
        return target
