"""The grader's largest process while it grades the hostile catalogue (tests/hostile_catalogue.py).

Every attack of the catalogue, and a correct learner of each lesson attacked, is handed in to a
copy of the course and graded as tests/test_hostile_catalogue.py grades it: ``make grade`` (two
workers, the feedback of the attacks that read theirs, then every attack's second attempt) or
plain ``nbgrader autograde`` (one lesson at a time, then the second attempts). Each way runs in a
child process of its own that only waits for what grading starts, and prints the largest resident
set of any process it waited for (``RUSAGE_CHILDREN``'s ``ru_maxrss``: of every process the
grading started and waited for, directly or not; kernels, which the sandbox's own processes
reap, aside), and how long it took. Not a timed test.

Usage: python benchmarks/hostile_memory.py [--way make|nbgrader ...] [--attack NAME ...]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for folder in ("tests", "instructor/grading", "instructor/reference"):
    sys.path.insert(0, str(REPO / folder))


def grade_one_way(way, names, folder):
    """Grade the catalogue one way, in this process's children; {"way", "max_rss_mib", "seconds", ...}."""
    os.chdir(REPO / "tests")
    import hostile_catalogue as catalogue
    import test_hostile_catalogue as hostile
    from conftest import copy_course, nbgrader
    from grading_helpers import CELL_TIMEOUT, run_grade

    started = time.monotonic()
    if way == "nbgrader":
        hostile.ATTACKS = names
        catalogue.LESSONS = tuple(catalogue.lessons_of(names))
        results = hostile.grade_with_nbgrader(folder)
        runs = [results["run"]]
    else:
        lessons = catalogue.lessons_of(names)
        root = copy_course(Path(folder) / "course", lessons=lessons)
        with open(root / "nbgrader_config.py", "a") as config:
            config.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
        for lesson in lessons:
            nbgrader(root, "generate_assignment", lesson, "--force")
        context = hostile.write_attacks(root, names)
        lesson_args = [a for lesson in lessons for a in ("--lesson", lesson)]
        run = run_grade(root, *lesson_args, "--workers", "2", "--force", "--no-feedback", "--no-report",
                        timeout=7200, ATTENTION_TEST_SECRET=hostile.SECRET)
        readers = [a for name in names if name in hostile.FEEDBACK_READERS for a in ("--student", f"attack_{name}")]
        runs = [run] + ([run_grade(root, *lesson_args, *readers, "--workers", "2", "--no-report", timeout=1800)]
                        if readers else [])
        results = hostile.after_make_grade(context, run)
        runs += [r for r in (results["resubmitted"], results["again"][0]) if r is not None]
    return {"way": way, "attacks": len(names), "max_rss_mib": round(results["grader_max_rss"] / 2**20, 1),
            "seconds": round(time.monotonic() - started), "exit_statuses": [r.returncode for r in runs]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--way", action="append", choices=("make", "nbgrader"), default=None)
    parser.add_argument("--attack", action="append", default=None, help="only these attacks (default: all)")
    parser.add_argument("--one-way", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import hostile_catalogue as catalogue

    names = sorted(args.attack or catalogue.ATTACKS)
    if args.one_way:
        with tempfile.TemporaryDirectory(prefix="hostile-memory-") as folder:
            print(json.dumps(grade_one_way(args.one_way, names, folder)))
        return 0
    for way in args.way or ["make", "nbgrader"]:
        # A child of its own: RUSAGE_CHILDREN then covers this way's grading and nothing else.
        done = subprocess.run([sys.executable, __file__, "--one-way", way, *[a for n in names for a in ("--attack", n)]],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{way}: failed\n{done.stderr[-3000:]}", file=sys.stderr)
            return 1
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{way}: {figures['attacks']} attacks, largest grading process {figures['max_rss_mib']} MiB, "
              f"{figures['seconds']} s (exit statuses {figures['exit_statuses']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
