"""What a feedback page costs the instructor's process (the one running `make grade`), against
rendering it there as `make grade` used to (stock GenerateFeedback in the main process).

On the synthetic class of benchmarks/grading_speed.py (default 20 learners × lesson 01, correct,
buggy, blank and broken), in one run:

1. `make grade` in this process (``attention_grading.cli.grade.grade``): once the grades are
   stored, feedback jobs render each page in the workers; this process's CPU seconds
   (``time.process_time``: workers excluded) on feedback pages (``RunRecord.feedback_cpu``: checking,
   digesting and writing them) per page, and all its CPU seconds per graded notebook (imports,
   intake, the gradebook, everything);
2. every learner's written answer graded by hand (nbgrader's API, as the formgrader writes it),
   then `make feedback` (``--feedback-only``): the pages whose grades changed, rendered by
   feedback jobs in the workers; this process's CPU seconds on pages per page, and in all;
3. the old way, side by side: stock ``GenerateFeedback`` (the course's feedback steps) for the
   same pages in this process: its CPU seconds per page.

Prints the three and the ratio of 3 to 2. Not a timed test.

Usage: python benchmarks/feedback_cost.py [--learners 20] [--lesson ID] [--workers N] [--keep]
"""
import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "instructor" / "grading"))
sys.path.insert(0, str(REPO / "benchmarks"))

from grading_speed import build  # noqa: E402


def measured(function, *args, **kwargs):
    """(its result, CPU seconds of this process, wall seconds)."""
    cpu, wall = time.process_time(), time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.process_time() - cpu, time.perf_counter() - wall


def grade_by_hand(root, lesson):
    """Every graded submission's first written answer: 0.5 points and a comment, by hand."""
    from nbgrader.api import Gradebook

    count = 0
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        for submission in gb.assignment_submissions(lesson):
            for nb in submission.notebooks:
                written = [g for g in nb.grades if g.cell_type == "markdown"]
                if written:
                    written[0].manual_score, written[0].needs_manual_grade = 0.5, False
                    gb.find_comment(written[0].name, nb.name, lesson, submission.student.id).manual_comment = \
                        r"Half: the scale is $\sqrt{d_k}$."
                    count += 1
        gb.db.commit()
    return count


def stock_feedback(root, lesson, students):
    """Stock GenerateFeedback with the course's configuration, in this process, one page each."""
    from nbgrader.converters import GenerateFeedback

    from attention_grading.run.feedback_jobs import coursedir_for
    from attention_grading.course import load_config

    config = load_config(root)
    for student in students:
        config_s, coursedir = coursedir_for(config, root, f"sqlite:///{root / 'gradebook.db'}", lesson, student)
        coursedir.feedback_directory = "feedback-stock"
        converter = GenerateFeedback(coursedir=coursedir, config=config_s)
        converter.force = True
        converter.log.setLevel(logging.ERROR)
        converter.start()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=20)
    parser.add_argument("--lesson", default="01_context_vectors")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the course folder")
    args = parser.parse_args(argv)

    import warnings

    from attention_grading.course import environment_tools_on_path
    from attention_grading.cli.grade import grade

    environment_tools_on_path()
    warnings.filterwarnings("ignore")
    folder = Path(tempfile.mkdtemp(prefix="feedback-cost-"))
    root = folder / "course"
    build(root, [args.lesson], args.learners)
    quiet = lambda *a, **k: None   # noqa: E731
    try:
        run, cpu1, wall1 = measured(grade, root, workers=args.workers, report=False, log=quiet)
        pages1 = run.feedback_written
        by_hand = grade_by_hand(root, args.lesson)
        again, cpu2, wall2 = measured(grade, root, workers=args.workers, report=False, feedback_only=True, log=quiet)
        pages2 = again.feedback_written
        students = sorted(p.parts[-2] for p in (root / "feedback").glob(f"*/{args.lesson}"))
        _, cpu3, wall3 = measured(stock_feedback, root, args.lesson, students)
        print(f"class: {args.learners} learners x {args.lesson}; {len(run.graded)} graded, {pages1} pages; "
              f"{by_hand} written answers graded by hand")
        print(f"1. make grade, pages rendered in the grading jobs: this process {run.feedback_cpu / max(pages1, 1):.3f} "
              f"CPU-s per page on pages; {cpu1:.2f} CPU-s in all ({cpu1 / max(len(run.graded), 1):.3f} per "
              f"graded notebook; {wall1:.1f} s wall)")
        print(f"2. make feedback after the manual grades: {pages2} pages re-rendered by feedback jobs: this "
              f"process {again.feedback_cpu / max(pages2, 1):.3f} CPU-s per page on pages; {cpu2:.2f} CPU-s in all "
              f"({cpu2 / max(pages2, 1):.3f} per page; {wall2:.1f} s wall)")
        cpu2 = again.feedback_cpu
        print(f"3. stock GenerateFeedback in this process (the old way) for {len(students)} pages: "
              f"{cpu3:.2f} CPU-s ({wall3:.1f} s wall): {cpu3 / max(len(students), 1):.3f} s per page")
        if pages2:
            print(f"the old way costs this process {(cpu3 / len(students)) / max(cpu2 / pages2, 1e-9):.1f}x "
                  f"as much per page as a feedback job's page")
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
