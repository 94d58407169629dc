"""The course's secret for hidden-test cases: kept in ``instructor/hidden-cases.secret`` (made on
first use, readable by the instructor only, never committed), so that the cases an attempt gets
(``spec.case_generator``, from its key: ``attempts.case_key``) cannot be known without it, and
every course has its own."""
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

