"""Fixtures of the per-step tests: a throwaway gradebook (one empty SQLite file made once per
session, copied for each test: creating one runs ``alembic``), a lesson stored in it as
``nbgrader generate_assignment`` stores it, and the resources nbgrader's preprocessors read."""
import os
import shutil
import sys
from pathlib import Path

import pytest

from . import factories

COURSE_ID = "attention"


@pytest.fixture(scope="session")
def _empty_gradebook(tmp_path_factory):
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("gradebook") / "empty.db"
    bin_dir = str(Path(sys.executable).parent)          # nbgrader runs `alembic` from PATH
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([bin_dir, saved])
    try:
        Gradebook(f"sqlite:///{path}", COURSE_ID).close()
    finally:
        os.environ["PATH"] = saved
    return path


@pytest.fixture
def db_url(tmp_path, _empty_gradebook):
    """The URL of a fresh, empty gradebook of this test's own."""
    path = tmp_path / "gradebook.db"
    shutil.copyfile(_empty_gradebook, path)
    return f"sqlite:///{path}"


def store_lesson(db_url, nb, lesson="01_context_vectors"):
    """Put ``nb`` in the gradebook as lesson ``lesson`` (one notebook of the same name), with its
    grade, solution and source cells, as ``nbgrader generate_assignment`` does (SaveCells)."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveCells

    with Gradebook(db_url, COURSE_ID) as gb:
        gb.update_or_create_assignment(lesson)
    SaveCells().preprocess(nb.copy() if hasattr(nb, "copy") else nb,
                           {"nbgrader": {"db_url": db_url, "assignment": lesson, "notebook": lesson}})
    return lesson


@pytest.fixture
def stored_lesson(db_url):
    """(db_url, the lesson's source notebook, its id): ``factories.lesson()`` in the gradebook."""
    nb = factories.lesson()
    return db_url, nb, store_lesson(db_url, nb)


def resources(db_url, lesson="01_context_vectors", student="alice", path=None):
    """What nbgrader hands a preprocessor of ``autograde`` (``path``: the submission's folder)."""
    out = {"nbgrader": {"db_url": db_url, "assignment": lesson, "notebook": lesson, "student": student}}
    if path is not None:
        out["metadata"] = {"path": str(path)}
    return out
