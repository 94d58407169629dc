"""The harness the lesson 08 memory benchmarks share (``tiled_memory_growth``, ``key_block_memory``):
each answer style graded by ``make grade`` in a scratch copy of the course whose lesson 08 spec
writes down the figures its judge reads, one submission per draw (a comment in the answer changes
the draw)."""
import argparse
import csv
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "instructor" / "grading")]

LESSON = "08_long_context"


def options(doc, known):
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--styles", default=",".join(known))
    return parser.parse_args()


def graded_figures(prefix, logged, logging_line, known, styles, draws, changed):
    """Yield (style, figures, points) per style and draw: ``logging_line(log)`` (code writing one
    JSON line to the file ``log``) is put after the spec's line ``logged`` (``changed``: what to
    say when the spec no longer has it); ``known``: {style: answer source, or None for the
    solution's}."""
    import nbformat
    from conftest import copy_course, nbgrader
    from grading_helpers import run_grade
    from lesson_grading import release_path, solution_path
    from notebook_tools import grade_id, lean, solved, with_answer

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    log = folder / "figures.jsonl"
    try:
        root = copy_course(folder / "course", lessons=[LESSON])
        spec = root / "instructor/lessons/08_long_context/spec.py"
        text = spec.read_text()
        assert logged in text, changed
        spec.write_text(text.replace(logged, logged + logging_line(log)))
        nbgrader(root, "generate_assignment", LESSON, "--force")
        answer = lean(solved(release_path(LESSON), solution_path(LESSON)))
        for style in styles:
            for draw in range(draws):
                nb = nbformat.from_dict(answer if known[style] is None else
                                        with_answer(answer, "tiled_attention", known[style]))
                cell = next(c for c in nb.cells if grade_id(c) == "tiled_attention")
                cell.source += f"\n# draw {draw}"
                student = f"{style}-{draw}"
                (root / "submitted" / student / LESSON).mkdir(parents=True)
                nbformat.write(nb, root / "submitted" / student / LESSON / f"{LESSON}.ipynb")
                before = len(log.read_text().splitlines()) if log.exists() else 0
                run_grade(root, "--lesson", LESSON, "--student", student, "--workers", "1", "--force",
                          "--no-feedback", "--no-report", timeout=900)
                figures = [json.loads(line) for line in (log.read_text().splitlines() if log.exists() else [])[before:]]
                with open(root / "grades.csv", newline="") as fh:
                    points = next((r["score"] for r in csv.DictReader(fh) if r["student"] == student), "?")
                yield style, figures, points
    finally:
        shutil.rmtree(folder, ignore_errors=True)
