"""How long each solution notebook takes to execute headless (kernel start included).

Usage: python benchmarks/solution_runtimes.py [LESSON ...]
Prints one line per lesson: seconds, and whether any cell showed an error or wrote to stderr.
"""
import os
import sys
import time
from pathlib import Path

import nbclient
import nbformat

REPO = Path(__file__).resolve().parents[1]


def run(lesson, keep=False):
    """(seconds, problems), and the executed notebook with ``keep``."""
    path = REPO / "solutions" / lesson / f"{lesson}.ipynb"
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    problems = [o.get("ename") or "stderr" for c in nb.cells for o in c.get("outputs", [])
                if o.get("output_type") == "error" or o.get("name") == "stderr"]
    return (seconds, problems, nb) if keep else (seconds, problems)


def main(lessons):
    # Hidden test cells import the grading helpers, as they do under nbgrader.
    grading = str(REPO / "instructor" / "grading")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [grading, os.environ.get("PYTHONPATH")] if p)
    lessons = lessons or sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir())
    for lesson in lessons:
        seconds, problems = run(lesson)
        print(f"{lesson:<26} {seconds:6.1f} s  {'clean' if not problems else problems}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
