"""The learner's own figures: drawn as pictures in the cells the learner wrote, shown as a line of
text in the lesson's own cells (drawing every picture of every submission costs up to as much as
grading it; learners see the lesson's figures when they run the notebook)."""
import hashlib
from pathlib import Path

from nbclient.util import run_sync
from nbformat.notebooknode import NotebookNode


def code_digest(source):
    return hashlib.sha256(source.strip().encode()).hexdigest()


def lesson_code(course_root, lesson):
    """Digests of the lesson's code cells (``source/<lesson>/<lesson>.ipynb`` of the course), or
    None where that notebook is not at hand."""
    import nbformat

    path = Path(course_root, "source", str(lesson), f"{lesson}.ipynb")
    if not (lesson and path.is_file()):
        return None
    return {code_digest(c.source) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"}


def learners_own(state, cell):
    """An answer, or a cell the lesson does not have: the learner wrote it."""
    meta = cell.metadata.get("nbgrader", {})
    if state.lesson_cells is None or meta.get("grade"):
        return False
    return bool(meta.get("solution")) or code_digest(cell.source) not in state.lesson_cells


def draw_figures(client, state, on, index):
    """Switch the kernel's inline figures to pictures (PNG) or text, with a cell of our own that
    leaves no history; a kernel that does not take it only loses its pictures."""
    if on == state.drawing:
        return
    formats = "['png']" if on else "[]"       # no braces: IPython expands {...} in a magic's line
    switch = NotebookNode(cell_type="code", metadata={}, outputs=[], source=(
        f"get_ipython().run_line_magic('config', \"InlineBackend.figure_formats = {formats}\")"))
    cell, replies = client.nb.cells[index], dict(state.replies)
    try:
        run_sync(client.async_execute_cell)(switch, index, store_history=False)
        state.drawing = on
    except Exception:               # its own kernel broke: the next cell finds out, and recovers
        state.drawing = None
    finally:                        # nbclient stores a cell it ran at its index: the real one stays
        client.nb.cells[index], state.replies = cell, replies
