"""Grading throughput on a Dask cluster on loopback against this machine's own pool.

Builds the synthetic class of grading_speed.py (default 12 learners x lessons 01 and 02), then
grades it (once to warm up, then) four ways with `python -m attention_grading.cli.grade --force --no-feedback
--no-report`: here with 1 and 2 workers, and with `--scheduler` on a loopback cluster
(tests/dask_cluster.py: a `dask scheduler`, workers of one thread each, no repository on their
path, all with the course's TLS certificates, made as `make cluster-certs` makes them) of 1 and 2
workers. Prints seconds, throughput against this machine with as many workers,
and the cluster's cost per job (cluster with 1 worker minus here with 1 worker, per submission:
scheduling, sending the job and its outcome, and the run's one-time start on each worker: the
grader sent over, a grading process and its kernel zygote started). Checks that every run gives
every check the same score. Not a timed test.

Usage: python benchmarks/dask_throughput.py [--learners 12] [--lesson ID ...] [--keep]
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from dask_cluster import LoopbackCluster  # noqa: E402
from grading_speed import build, env_for, nbgrader, table  # noqa: E402


def grade(root, *args):
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "attention_grading.cli.grade", "--root", str(root), "--force",
                           "--no-feedback", "--no-report", *args], cwd=root, env=env_for(root),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if "graded " not in done.stdout:
        raise SystemExit(f"make grade failed ({' '.join(args)}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=12)
    parser.add_argument("--lesson", action="append", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    lessons = args.lesson or ["01_context_vectors", "02_queries_keys_values"]
    scratch = Path(tempfile.mkdtemp(prefix="attention-dask-bench-"))
    try:
        root = scratch / "course"
        kinds = build(root, lessons, args.learners)
        for lesson in lessons:
            nbgrader(root, "generate_assignment", lesson, "--force")
        jobs = sum(1 for k in kinds.values() if k != "broken")
        print(f"{len(kinds)} submissions ({jobs} gradable) of {len(lessons)} lesson(s)")
        seconds, scores = {}, {}
        grade(root, "--workers", "2")          # warm-up, not counted: disk caches, the gradebook
        for workers in (1, 2):
            seconds["here", workers] = grade(root, "--workers", str(workers))
            scores["here", workers] = table(root, lessons)
            print(f"here, {workers} worker(s): {seconds['here', workers]:.1f} s", flush=True)
        subprocess.run([sys.executable, "-m", "attention_grading.cli.certs", "--root", str(root)], cwd=root,
                       env=env_for(root), check=True, capture_output=True)
        for workers in (1, 2):
            with LoopbackCluster(scratch / f"cluster-{workers}", tls=root / "instructor" / "cluster-tls") as cluster:
                for i in range(workers):
                    cluster.add_worker(f"w{i + 1}")
                cluster.wait_for_workers(workers)
                seconds["cluster", workers] = grade(root, "--scheduler", cluster.address)
                scores["cluster", workers] = table(root, lessons)
            print(f"loopback cluster, {workers} worker(s): {seconds['cluster', workers]:.1f} s", flush=True)
        reference = scores["here", 2]
        for run, table_ in scores.items():
            assert table_ == reference, f"{run} scored differently from here with 2 workers"
        print(f"\nthe same score on every check of all {jobs} gradable submissions in the four runs")
        print(f"{'where':<28}{'seconds':>9}{'notebooks/min':>15}{'vs here, same workers':>24}")
        for (where, workers), s in seconds.items():
            ratio = seconds["here", workers] / s
            print(f"{where + f', {workers} worker(s)':<28}{s:>9.1f}{60 * jobs / s:>15.1f}{ratio:>23.2f}x")
        overhead = (seconds["cluster", 1] - seconds["here", 1]) / jobs
        print(f"\ncluster cost per job (1 worker, against here with 1 worker): {overhead:+.2f} s "
              f"({seconds['here', 1] / jobs:.2f} s a notebook here)")
        print(f"2 cluster workers against 1: {seconds['cluster', 1] / seconds['cluster', 2]:.2f}x the throughput")
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
