"""Lesson 09's training, measured: the solved notebook run headless, its training lines and table.

Usage: python benchmarks/small_gpt_training.py
Prints the machine's load before and after (the figures are only comparable on a quiet machine;
CPU seconds are less disturbed by other work than wall-clock seconds), the time each model trained
(wall clock and CPU), the table of validation bits per character and the margin over the bigram
counts, as the notebook printed them in this run.
"""
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solution_runtimes import REPO, run  # noqa: E402

LESSON = "09_small_gpt"
SHOWN = re.compile(r"parameters|trained in|beats the bigram|both models")


def main():
    grading = str(REPO / "instructor" / "grading")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [grading, os.environ.get("PYTHONPATH")] if p)
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    seconds, problems, nb = run(LESSON, keep=True)
    print("load average after:  %.2f %.2f %.2f" % os.getloadavg())
    print(f"the whole notebook: {seconds:.1f} s, {'clean' if not problems else problems}")
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                for line in output.text.splitlines():
                    if SHOWN.search(line):
                        print(line)
            text = output.get("data", {}).get("text/markdown", "")
            if "bits per character" in text:
                print(text)


if __name__ == "__main__":
    main()
