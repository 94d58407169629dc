"""Feedback pages in the course: what a learner may receive, what each page was made from, and
which pages are stale.

``feedback/<student>/<lesson>/`` holds only what a learner may receive: the page and the two
files nbgrader's ``release_feedback`` needs beside it (the submission's time and secret), never
the grader's notes. Each page's origin is recorded beside the autograded notebook
(``autograded/<student>/<lesson>/grading-feedback.json``): the digest of the submission's grades,
comments and penalties (``standing.Standing.digest``), of the autograded notebook and of the code
that renders pages. A page whose recorded origin is not today's is stale and rendered again.
"""
import hashlib
import json
import shutil
from pathlib import Path

from ..course import NBGRADER_FILES, PAGE_FILE

RENDERER = ("steps/label_cells.py", "steps/given_grades.py", "store/page_grades.py", "steps/hide_hidden_tests.py", "steps/figure_outputs.py", "steps/feedback_exporter.py",
            "steps/maths.py", "steps/sanitize.py", "steps/csp.py", "steps/templates")


def learner_files(folder, lesson):
    """{name: bytes} of what a learner may receive from a feedback folder nbgrader wrote."""
    folder = Path(folder)
    return {name: (folder / name).read_bytes() for name in (f"{lesson}.html", *NBGRADER_FILES)
            if (folder / name).is_file()}


def renderer_digest():
    """Of the code and templates that render a feedback page: a new template makes pages stale."""
    here = Path(__file__).parents[1]
    digest = hashlib.sha256()
    for name in RENDERER:
        for path in sorted([here / name] if (here / name).is_file() else (here / name).rglob("*")):
            if path.is_file() and path.suffix != ".pyc":
                digest.update(str(path.relative_to(here)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def page_digest(standing_digest, notebook, renderer):
    """What a page is made from: the submission's standing, its autograded notebook (bytes), the
    renderer."""
    return hashlib.sha256("\0".join([standing_digest, hashlib.sha256(notebook).hexdigest(), renderer])
                          .encode()).hexdigest()


def recorded(root, student, lesson):
    """The digest the page of a submission was made from, or None (no page, or no record)."""
    if not (Path(root) / "feedback" / student / lesson / f"{lesson}.html").is_file():
        return None
    try:
        return json.loads((Path(root) / "autograded" / student / lesson / PAGE_FILE).read_text())["page"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write(root, student, lesson, files, digest):
    """Put a rendered page in ``feedback/<student>/<lesson>/`` (only what a learner may receive:
    anything else there goes) and record what it was made from."""
    folder = Path(root) / "feedback" / student / lesson
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, data in files.items():
        if name == f"{lesson}.html" or name in NBGRADER_FILES:
            (folder / name).write_bytes(data)
    (Path(root) / "autograded" / student / lesson / PAGE_FILE).write_text(json.dumps({"page": digest}))
