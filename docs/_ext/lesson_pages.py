"""A page per lesson: the learner's release, stubs and all, with the figures and printed results a
solved run gives, and never a solution.

The release (``notebooks/<id>/<id>.ipynb``) is stored without outputs, and its stubs raise. So the
lesson's solution (``solutions/<id>/<id>.ipynb``) runs once, without its graded test cells (their
hidden tests need the grader), and the outputs of every code cell that is neither an answer nor a
graded test are grafted onto the same cell of the release (cells match by id, and only where the
release's source is the solution's: a cell a learner fills in shows its stub and no output). An
answer's source and output, and a hidden test, never reach a page (``tests/test_docs.py`` reads
every built page for their lines).

The outputs are cached by the hash of what they are computed from (the solution notebook and the
learner package it imports) in ``lesson_outputs_cache`` (default ``docs/_build/lesson-outputs``,
git-ignored): lesson 09 trains for minutes, once. Settings (``sphinx-build -D name=value``):

- ``lesson_outputs``: ``run`` (``make docs``) runs the solutions whose outputs are not cached;
  ``cache`` builds from the cache alone, a lesson without cached outputs shown without them.
- ``lesson_outputs_run``: with ``run``, only these lessons (comma-separated) may run.

Each page is read through myst-nb's custom notebook formats: ``docs/lessons/<id>.lesson`` holds
the lesson's id, and ``read`` turns it into the page's notebook.
"""
import asyncio
import copy
import hashlib
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from sphinx.util import logging

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
LEARNER_PACKAGE = ROOT / "src" / "attention_course"
DEFAULT_CACHE = ROOT / "docs" / "_build" / "lesson-outputs"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The longest a cell may run: seconds in every lesson but 09, which trains two models for minutes
#: of CPU (more on a busy machine). A reply the kernel never sends (jupyter_client 8 can lose one
#: now and then: jupyter/jupyter_client#922; seen here as an idle kernel and a build waiting on it)
#: is given up after that, and the lesson is run again once (``fill_cache``).
CELL_TIMEOUT = 180
CELL_TIMEOUTS = {"09_small_gpt": 1200}

#: Where ``read`` finds the outputs (set when the build starts: ``builder-inited``).
_settings = {"cache": DEFAULT_CACHE}


# ---------------------------------------------------------------- the lessons and their cells

def lesson_ids():
    """Assignment ids in course order: the folders of ``source/`` holding a same-named notebook."""
    return sorted(p.name for p in (ROOT / "source").iterdir() if (p / f"{p.name}.ipynb").is_file())


def notebook(tree, lesson):
    return ROOT / tree / lesson / f"{lesson}.ipynb"


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def is_answer(cell):
    """A cell the learner fills in (a graded function, a written answer): nbgrader's ``solution``."""
    return bool(_nbgrader(cell).get("solution"))


def is_graded_test(cell):
    """A graded test cell: its hidden tests are stripped from the release and need the grader."""
    return cell.get("cell_type") == "code" and bool(_nbgrader(cell).get("grade")) and not is_answer(cell)


def shows_outputs(cell):
    """A code cell whose solved outputs a page may show: given code, visible checks, demonstrations."""
    return cell.get("cell_type") == "code" and not is_answer(cell) and not is_graded_test(cell)


def _digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(lesson):
    """The hash of what a lesson's outputs are computed from: its solution notebook and every file
    of the learner package (its plots, widgets and checks)."""
    digest = hashlib.sha256(notebook("solutions", lesson).read_bytes())
    for path in sorted(LEARNER_PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(LEARNER_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# ---------------------------------------------------------------- running a solution

def _clean_stream(text):
    """A stream as a terminal leaves it: a progress bar redrawn with ``\\r`` keeps its last state."""
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def _page_output(output):
    """An output as a page shows it: widgets (which need a live kernel) as a sentence."""
    output = copy.deepcopy(output)
    if output.get("output_type") == "stream":
        output["text"] = _clean_stream(output["text"])
    data = output.get("data", {})
    if WIDGET_VIEW in data:
        output["data"] = {"text/plain": "(an interactive explorer: open the notebook in JupyterLab to use it)"}
        output.get("metadata", {}).pop(WIDGET_VIEW, None)
    return output


def run_solution(lesson):
    """``{cell id: {"source": sha256 of its source, "outputs": [...]}}`` of the cells a page may
    show, from one run of the lesson's solution without its graded test cells, in a folder of its
    own. A cell that raises stops the run with its error (a page never shows a traceback, which
    could quote an answer's code)."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = nbformat.read(notebook("solutions", lesson), as_version=4)
    nb.cells = [cell for cell in nb.cells if not is_graded_test(cell)]
    environment = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}   # the full demonstrations
    with tempfile.TemporaryDirectory(prefix=f"lesson-{lesson}-") as folder:
        # The kernel's channels are UNIX sockets in that folder: no port to choose, nothing on TCP.
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = os.path.join(folder, "kernel")
        client = NotebookClient(nb, config=config, kernel_name="python3", allow_errors=False,
                                timeout=CELL_TIMEOUTS.get(lesson, CELL_TIMEOUT),
                                resources={"metadata": {"path": folder}})
        # On a loop of its own, closed when done (runs go two at a time, in threads).
        asyncio.run(client.async_execute(env=environment))
    return {cell.id: {"source": _digest(cell.source), "outputs": [_page_output(o) for o in cell.get("outputs", [])]}
            for cell in nb.cells if shows_outputs(cell)}


def cache_file(cache, lesson):
    return Path(cache) / f"{lesson}-{cache_key(lesson)[:20]}.json"


def cached_outputs(cache, lesson):
    """The cached outputs of ``lesson`` for its current solution and learner package, or None."""
    path = cache_file(cache, lesson)
    return json.loads(path.read_text())["cells"] if path.is_file() else None


def store_outputs(cache, lesson, cells, seconds=None):
    """Keep ``cells`` (``run_solution``'s answer) for the current solution; older entries of the
    lesson go."""
    path = cache_file(cache, lesson)
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(f"{lesson}-*.json"):
        old.unlink()
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"lesson": lesson, "seconds": seconds, "cells": cells}))
    partial.replace(path)


def fill_cache(cache, lessons, workers=2):
    """Run the solutions of ``lessons`` whose outputs are not cached, ``workers`` at a time."""
    missing = [lesson for lesson in lessons if cached_outputs(cache, lesson) is None]

    def run(lesson):
        logger.info("lesson pages: running the solution of %s for its figures%s", lesson,
                    " (it trains: minutes)" if lesson == "09_small_gpt" else "")
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        start = time.monotonic()
        try:
            cells = run_solution(lesson)
        except (CellTimeoutError, DeadKernelError) as exc:     # a lost reply, not the lesson's doing
            logger.info("lesson pages: %s: %s; running it again", lesson, str(exc).splitlines()[0])
            cells = run_solution(lesson)
        store_outputs(cache, lesson, cells, round(time.monotonic() - start, 1))

    with ThreadPoolExecutor(max(1, workers)) as pool:
        for done in [pool.submit(run, lesson) for lesson in missing]:
            done.result()
    return missing


# ---------------------------------------------------------------- the page

NOTE_WITH_OUTPUTS = """```{{note}}
This is lesson {number} as a learner receives it (`notebooks/{lesson}/{lesson}.ipynb`): each exercise
is a stub to fill in. The figures and printed results under the other cells come from a run of the
solved lesson; in your copy, the cells after an exercise work once you have written it. To run it,
see the [learner's guide](../learner-guide.md).
```"""
NOTE_WITHOUT_OUTPUTS = """```{{note}}
This is lesson {number} as a learner receives it (`notebooks/{lesson}/{lesson}.ipynb`): each exercise
is a stub to fill in. This copy of the site was built without running the lesson, so it shows no
figures (`make docs` runs it). To run it, see the [learner's guide](../learner-guide.md).
```"""


def page(lesson, cells=None):
    """The release of ``lesson`` with ``cells``' outputs (``run_solution``'s answer) on the cells
    that may show them, and a note under its title saying what the page is."""
    nb = nbformat.read(notebook("notebooks", lesson), as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        solved = (cells or {}).get(cell.id)
        fits = shows_outputs(cell) and solved is not None and solved["source"] == _digest(cell.source)
        cell.outputs = [nbformat.from_dict(o) for o in solved["outputs"]] if fits else []
        cell.execution_count = None
    note = NOTE_WITH_OUTPUTS if cells else NOTE_WITHOUT_OUTPUTS
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(note.format(lesson=lesson, number=lesson[:2])))
    return nb


def read(text):
    """myst-nb's reader of a ``.lesson`` file (the lesson's id): the lesson's page."""
    lesson = next(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))
    if lesson not in lesson_ids():
        raise ValueError(f"{lesson!r} is not a lesson of source/")
    return page(lesson, cached_outputs(_settings["cache"], lesson))


# ---------------------------------------------------------------- Sphinx

def _run_outputs(app):
    config = app.config
    cache = Path(config.lesson_outputs_cache or DEFAULT_CACHE)
    if not cache.is_absolute():
        cache = Path(app.confdir) / cache
    _settings["cache"] = cache
    if config.lesson_outputs == "cache":
        return
    if config.lesson_outputs != "run":
        raise ValueError(f"lesson_outputs is 'run' or 'cache', not {config.lesson_outputs!r}")
    chosen = [name.strip() for name in str(config.lesson_outputs_run or "").split(",") if name.strip()]
    fill_cache(cache, chosen or lesson_ids())


def _every_lesson_page(app, env, added, changed, removed):
    """Lesson pages are read again on every build: their notebook comes from files Sphinx does
    not watch (the release, the cache)."""
    return [f"lessons/{lesson}" for lesson in lesson_ids() if f"lessons/{lesson}" in env.found_docs]


def setup(app):
    app.add_config_value("lesson_outputs", "run", "env")
    app.add_config_value("lesson_outputs_cache", "", "env")
    app.add_config_value("lesson_outputs_run", "", "env")
    app.connect("builder-inited", _run_outputs)
    app.connect("env-get-outdated", _every_lesson_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
