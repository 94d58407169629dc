"""nbval over the notebooks (``--nbval-lax``, set in pyproject.toml): at the repository's root so
that it applies however the notebooks are named on the command line (``pytest solutions/``)."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent


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
    if dropped:
        ids = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in ids]
        config.hook.pytest_deselected(items=dropped)
