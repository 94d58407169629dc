"""What `make grade` costs the instructor's process as the class grows (issue 40, point 5).

For each size (submissions; learners × the nine lessons, each learner handing in every lesson's
solution with its timestamp.txt), a fresh course is built and graded twice by
``attention_grading.cli.grade.grade``, in a process of its own:

1. everything is graded: the real intake, plan, pool (``--workers`` processes), store, gradebook
   (SQLite) and publish (penalties, grades.csv, grades-by-learner.csv, the table, the report);
   only the kernels are skipped: each job is ``stub_jobs.stub_job`` (a verdict for every hidden
   test, the autograded notebook as ``ApplyVerdicts`` leaves it), run in the workers;
2. ``make grade`` again: every submission skipped as graded and unchanged, then publish.

A size that runs for an hour can be asked where it is: ``kill -USR1`` on the measuring child
appends its threads' stacks to ``stacks.txt`` beside the class.

Printed per size and run: this process's CPU seconds per submission (``time.process_time``:
the workers' are not in it), its peak memory (``ru_maxrss``), and the CPU and wall seconds of each
phase (intake, plan, grading with the store, penalties again, exports, report). Feedback pages are
not rendered (``--no-feedback``: their cost is benchmarks/feedback_cost.py's). Not a timed test.

Usage: python benchmarks/class_scale.py [--sizes 1000,10000[,90000]] [--workers 2] [--keep DIR]
                                      [--repo CHECKOUT]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# --repo: another checkout's grader and course (its `main`, say, for a figure before a change)
REPO = Path(sys.argv[sys.argv.index("--repo") + 1]).resolve() if "--repo" in sys.argv else HERE.parent
sys.path.insert(0, str(REPO / "instructor" / "grading"))
sys.path.insert(0, str(HERE))

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir())
TIMESTAMP = "2026-01-10 12:00:00.000000 UTC"


def build(root, size):
    """A course at ``root`` with ``size`` submissions (learner00000 hands in every lesson, then
    learner00001...)."""
    root.mkdir(parents=True)
    for name in ("nbgrader_config.py", "instructor"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / name)
    for folder in ("source", "notebooks", "solutions"):
        for lesson in LESSONS:
            shutil.copytree(REPO / folder / lesson, root / folder / lesson)
    solutions = {l: (REPO / "solutions" / l / f"{l}.ipynb").read_bytes() for l in LESSONS}
    for i in range(size):
        student, lesson = f"learner{i // len(LESSONS):05d}", LESSONS[i % len(LESSONS)]
        folder = root / "submitted" / student / lesson
        folder.mkdir(parents=True)
        (folder / f"{lesson}.ipynb").write_bytes(solutions[lesson])
        (folder / "timestamp.txt").write_text(TIMESTAMP)


class Phases:
    """CPU and wall seconds of this process in each wrapped function."""

    def __init__(self):
        self.cpu, self.wall, self.originals = {}, {}, []

    def wrap(self, owner, name, label):
        original = getattr(owner, name)
        self.originals.append((owner, name, original))

        def timed(*args, **kwargs):
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.cpu[label] = self.cpu.get(label, 0.0) + time.process_time() - cpu
                self.wall[label] = self.wall.get(label, 0.0) + time.perf_counter() - wall
        setattr(owner, name, timed)

    def unwrap(self):
        for owner, name, original in reversed(self.originals):
            setattr(owner, name, original)


def measure(root, workers):
    """Grade the course at ``root`` twice in this process; return the figures (a dict)."""
    import faulthandler
    import logging
    import signal
    import warnings

    import attention_grading.cli.grade as grading
    import attention_grading.store.report as report
    from attention_grading.cli.export import CourseGradesExport
    from attention_grading.course import environment_tools_on_path
    from stub_jobs import stub_job

    # a long size's progress: `kill -USR1 <this process>` appends every thread's stack to stacks.txt
    faulthandler.register(signal.SIGUSR1, file=open(root.parent / "stacks.txt", "a"), all_threads=True)
    environment_tools_on_path()
    warnings.filterwarnings("ignore")
    logging.disable(logging.ERROR)
    grading.run_job = stub_job                    # the one part replaced: no kernel
    out = {"submissions": sum(1 for _ in root.glob("submitted/*/*/*.ipynb"))}
    for run in ("graded", "again"):
        phases = Phases()
        for owner, name, label in ((grading, "scan", "intake"), (grading, "plan", "plan"),
                                   (grading, "_grade", "grade+store"), (grading, "refresh", "penalties"),
                                   (CourseGradesExport, "write", "exports"), (report, "build_report", "report"),
                                   (grading, "publish", "publish")):
            phases.wrap(owner, name, label)
        lines = []
        cpu, wall = time.process_time(), time.perf_counter()
        record = grading.grade(root, workers=workers, feedback=False, unsandboxed=True, log=lines.append)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        phases.unwrap()
        out[run] = {"graded": len(record.graded), "skipped": record.skipped, "failed": len(record.failed),
                    "cpu": cpu, "wall": wall, "phases_cpu": phases.cpu, "phases_wall": phases.wall,
                    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    return out


def one_size(size, workers, keep):
    """Build and measure one size in a child process (its own peak memory)."""
    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="attention-scale-"))
    root = folder / f"class-{size}"
    try:
        started = time.perf_counter()
        build(root, size)
        built = time.perf_counter() - started
        env = {**os.environ, "TQDM_DISABLE": "1"}
        done = subprocess.run([sys.executable, __file__, "--measure", str(root), "--workers", str(workers),
                               "--repo", str(REPO)],
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"size {size}: the measurement failed:\n{done.stderr[-4000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        figures["build_seconds"] = built
        return figures
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def show(figures):
    n = figures["submissions"]
    print(f"\n{n:,} submissions ({n // len(LESSONS):,} learners × {len(LESSONS)} lessons; "
          f"built in {figures['build_seconds']:.0f} s)")
    for run, title in (("graded", "make grade, every submission graded (stub jobs)"),
                       ("again", "make grade again, every submission skipped")):
        f = figures[run]
        print(f"  {title}: graded {f['graded']:,}, skipped {f['skipped']:,}, failed {f['failed']}")
        print(f"    main process: {1000 * f['cpu'] / n:.2f} CPU-ms per submission ({f['cpu']:.1f} CPU-s, "
              f"{f['wall']:.1f} s wall), peak memory {f['peak_rss_mb']:.0f} MB")
        print("    phases (CPU-s / wall s): " + ", ".join(
            f"{label} {f['phases_cpu'][label]:.1f}/{f['phases_wall'][label]:.1f}" for label in f["phases_cpu"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="submissions per class, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", default=None, help="build the classes in this folder and keep them")
    parser.add_argument("--repo", default=None, help="grade with this checkout's grader and course "
                        "(default: this one's)")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)     # the child's part
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.workers)))
        return
    print(f"class_scale: main-process cost of make grade per submission, {args.workers} worker(s), "
          f"stub jobs (no kernels), SQLite gradebook, the grader of {REPO}")
    for size in (int(s) for s in args.sizes.split(",")):
        show(one_size(size, args.workers, args.keep))


if __name__ == "__main__":
    main()
