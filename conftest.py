"""At the repository's root, so that it applies however tests are named on the command line:

- the two tiers: ``pytest`` (``make test``) runs the quick tier, ``pytest --full`` (``make
  test-all``, what ``.ci/run`` runs) everything. The quick tier leaves out the tests marked
  ``full`` and those of the slow kinds (``cluster``, ``accounts``, ``postgres``, and ``browser``
  except the ones also marked ``smoke``); tests that grade a catalogue grade a sample of it
  (``full_tier``);
- nbval over the learners' release in ``notebooks/`` (``--nbval-lax``, set in pyproject.toml), up to
  each lesson's first exercise. Not over ``solutions/``: ``nbgrader validate`` runs the same cells
  from ``source/`` (hidden tests included, reduced training) and ``tests/test_lesson_text.py``
  runs every solution at full length; nbval there ran each lesson's training a third time.
"""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent


SLOW_KINDS = ("cluster", "accounts", "postgres")


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="the full tier (make test-all, CI): every catalogue entry, both halves of the hostile "
                          "catalogue, Dask, every browser test, real accounts, PostgreSQL")


def full_tier(config):
    """Is this the full tier (``--full``)? Tests that grade a catalogue grade all of it then."""
    return bool(config.getoption("full", default=False))


def only_in_the_full_tier(item):
    """Does ``item`` belong to the full tier only (see the module docstring)?"""
    marks = {mark.name for mark in item.iter_markers()}
    return "full" in marks or bool(marks & set(SLOW_KINDS)) or ("browser" in marks and "smoke" not in marks)


def pytest_configure(config):
    if getattr(config.option, "nbval_lax", False) or getattr(config.option, "nbval", False):
        # The solutions' hidden-test cells import attention_grading, as in the instructor's own
        # JupyterLab (`make formgrader` sets the same path); nbval's kernels inherit it.
        grading = str(ROOT / "instructor" / "grading")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [grading, os.environ.get("PYTHONPATH")]))


def release_cells_after_the_first_exercise(items):
    """nbval's cells of the learners' release (``notebooks/``) from the first answer cell on: a
    release runs clean up to its first exercise, and raises from there (nothing is written yet)."""
    release, past = ROOT / "notebooks", set()
    dropped = []
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is None or not hasattr(item, "cell_num") or release not in Path(item.path).parents:
            continue
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            past.add(item.path)
        if item.path in past:
            dropped.append(item)
    return dropped


def pytest_collection_modifyitems(session, config, items):
    dropped = release_cells_after_the_first_exercise(items)
    if not full_tier(config):
        dropped += [item for item in items if only_in_the_full_tier(item)]
    if dropped:
        ids = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in ids]
        config.hook.pytest_deselected(items=dropped)
