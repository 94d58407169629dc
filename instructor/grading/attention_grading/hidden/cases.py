"""Where a submission's hidden-test cases come from: the course's secret, kept in
``instructor/hidden-cases.secret`` (made on first use, readable by the instructor only, never
committed), the key of the submission's attempt (``case_key``: the learner, the lesson, the
attempt's number and every byte handed in, ``attempts``), and the generator each hidden test
draws its cases from under both (``case_generator``). The cases cannot be known without the
secret, every course has its own, and only the same attempt graded again gets the same ones."""
import hashlib
import hmac
import os
import secrets
from pathlib import Path

import numpy as np

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



def case_key(student, lesson, attempt, digest):
    """The key of one attempt's hidden cases (hex; secret only in combination with the course's
    secret, ``case_generator``)."""
    return hashlib.sha256(f"{student}\0{lesson}\0{attempt}\0{digest}".encode("utf-8", "surrogateescape")
                          ).hexdigest()


def case_generator(secret, attempt_key, name):
    """The generator a hidden test draws its cases from: seeded by an HMAC of the attempt's key
    (``case_key``) and the test's name under the course's secret (bytes). Nobody without the secret
    can tell the cases in advance; the same attempt graded again gets the same ones, any other
    attempt others."""
    key = hmac.new(secret, f"{attempt_key}\0{name}".encode(), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(key[:16], "big"))
