"""The course's secret for hidden-test cases: kept in ``instructor/hidden-cases.secret`` (made on
first use, readable by the instructor only, never committed), so that the cases a submission gets
(``spec.case_generator``) cannot be known without it, and every course has its own."""
import hashlib
import os
import secrets
from pathlib import Path

SECRET_FILE = Path("instructor") / "hidden-cases.secret"


def course_secret(root):
    """The secret of the course at ``root`` (hex text), created there if it has none yet."""
    path = Path(root) / SECRET_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:             # another grader made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    return path.read_text().strip()


def notebook_digest(nb):
    """A digest of what a submission holds (every cell's type and source, in order): the same
    files give the same digest, whatever outputs or metadata they carry."""
    h = hashlib.sha256()
    for cell in nb.cells:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        h.update(f"{cell.get('cell_type', '')}\0{len(source)}\0".encode() + source.encode())
    return h.hexdigest()
