"""How fast `make grade` is against stock nbgrader, in wall time and in CPU, and against the floor
of running the notebooks.

Builds a synthetic class (default 40 learners x every lesson that has a solution and a release):
correct (the solution), buggy (the solution with one of tests/catalogue/<lessonNN>.py's WRONG
answers put in its solution cell), blank (the release) and broken (invalid JSON). Then, in one run:

1. stock: `nbgrader autograde <lesson>` (the CLI, one command per lesson over all learners, one
   notebook at a time), with each kernel started cold as nbgrader does
   (`--GuardedExecute.fork_kernels=False`) and every cell run as nbgrader runs them
   (`--GuardedExecute.skip_demonstrations=False`); the course's preprocessors otherwise, so that
   the scores can be compared;
2. ours: `python -m attention_grading.cli.grade` as `make grade` runs it (N workers, kernels
   forked from a warm parent into the sandbox, the lesson's demonstrations skipped, feedback pages
   and the report made; `--no-feedback` leaves out the pages and the report);
3. the floor: start a kernel cold and execute the same notebook with nbclient (with
   NBGRADER_EXECUTION=autograde, as under nbgrader), for a sample of each kind per lesson,
   weighted by how many of each kind the class has.

The CPU of each way is that of every process it started, kernels included: each way runs in a
cgroup of the `cpuacct` controller of its own (cgroup v1, or the unified hierarchy's `cpu.stat`),
which its children and every kernel inherit (the sandbox makes memory and process cgroups only);
where no cgroup can be made, ``RUSAGE_CHILDREN`` (processes waited for: the kernels, which the
sandbox reaps, are then missing, and the line says so). It checks both graders give the same
score to every check of every gradable submission and prints the wall-time and CPU ratios, and
the per-notebook cost against the floor. Not a timed test.

`--learners 4` with every lesson is the 36-notebook class of issue 40 (9 lessons x 4 learners).

Usage: python benchmarks/grading_speed.py [--learners 40] [--lesson ID ...] [--workers N] [--no-feedback]
       [--no-floor] [--keep]
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
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "instructor" / "grading"))
sys.path.append(str(REPO / "tests"))             # the catalogue modules import their package
KINDS = ["correct", "buggy", "blank", "correct", "buggy", "correct", "blank", "buggy", "correct", "broken"]


def catalogue(lesson):
    """WRONG of instructor/lessons/<lesson>/catalogue.py, or {} when the lesson has none yet."""
    import catalogue as catalogues

    return getattr(catalogues.load(lesson), "WRONG", {})


def notebook_text(lesson, kind, index):
    solution = REPO / "solutions" / lesson / f"{lesson}.ipynb"
    if kind == "correct":
        return solution.read_text()
    if kind == "blank":
        return (REPO / "notebooks" / lesson / f"{lesson}.ipynb").read_text()
    if kind == "broken":
        return solution.read_text()[: 500]
    wrong = [(fn, code) for fn, bugs in sorted(catalogue(lesson).items()) for _, code in sorted(bugs.items())]
    nb = json.loads(solution.read_text())
    if not wrong:
        return (REPO / "notebooks" / lesson / f"{lesson}.ipynb").read_text()
    function, code = wrong[index % len(wrong)]
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == function:
            cell["source"] = code.strip("\n") + "\n"
    return json.dumps(nb, indent=1)


def build(root, lessons, learners):
    root.mkdir(parents=True)
    for name in ("nbgrader_config.py", "instructor"):
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, root / name)
    for folder in ("source", "notebooks", "solutions"):
        for lesson in lessons:
            shutil.copytree(REPO / folder / lesson, root / folder / lesson)
    kinds = {}
    for i in range(learners):
        student = f"learner{i:02d}"
        for j, lesson in enumerate(lessons):
            kind = KINDS[(i + j) % len(KINDS)]
            folder = root / "submitted" / student / lesson
            folder.mkdir(parents=True)
            (folder / f"{lesson}.ipynb").write_text(notebook_text(lesson, kind, i))
            (folder / "timestamp.txt").write_text("2026-01-10 12:00:00.000000 UTC")
            kinds[student, lesson] = kind
    return kinds


class CPUMeter:
    """CPU seconds of a command and every process it starts: a cgroup of its own (``cpuacct``), or
    ``RUSAGE_CHILDREN`` where none can be made (``whole`` False: kernels the sandbox reaps missing)."""

    V1 = Path("/sys/fs/cgroup/cpuacct")
    V2 = Path("/sys/fs/cgroup")

    def __init__(self, name):
        self.folder, self.whole = None, False
        for base, counter in ((self.V1, "cpuacct.usage"), (self.V2, "cpu.stat")):
            folder = base / f"attention-bench-{name}-{os.getpid()}"
            try:
                folder.mkdir()
            except OSError:
                continue
            if (folder / counter).is_file():
                self.folder, self.counter, self.whole = folder, counter, True
                break
            folder.rmdir()

    def run(self, command, **kwargs):
        """``subprocess.run(command)``, its process joining the cgroup before it starts."""
        def join():
            (self.folder / "cgroup.procs").write_text(str(os.getpid()))
        return subprocess.run(command, preexec_fn=join if self.folder else None, **kwargs)

    def seconds(self):
        if self.folder is None:
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            return usage.ru_utime + usage.ru_stime
        text = (self.folder / self.counter).read_text()
        if self.counter == "cpuacct.usage":
            return int(text) / 1e9
        return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6

    def close(self):
        """Remove the cgroup once the last of its processes (a worker still exiting) is gone."""
        for _ in range(100) if self.folder is not None else ():
            try:
                self.folder.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def env_for(root):
    env = {k: v for k, v in os.environ.items() if k not in ("ATTENTION_GRADEBOOK_URL", "ATTENTION_EXCHANGE")}
    env["PYTHONPATH"] = str(root / "instructor" / "grading")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def nbgrader(root, *args, meter=None):
    return (meter.run if meter else subprocess.run)([sys.executable, "-m", "nbgrader", *args], cwd=root,
                                                    env=env_for(root), capture_output=True, text=True)


def table(root, lessons):
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        for lesson in lessons:
            for submission in gb.assignment_submissions(lesson):
                for nb in submission.notebooks:
                    for grade in nb.grades:
                        out[lesson, submission.student.id, grade.name] = grade.auto_score
    return out


def floor(root, lessons, kinds):
    """Mean seconds to start a kernel and execute one notebook with nbclient, weighted by kind."""
    import nbformat
    from nbclient import NotebookClient

    os.environ["PYTHONPATH"] = str(root / "instructor" / "grading")
    os.environ["NBGRADER_EXECUTION"] = "autograde"   # the same (shorter) demonstrations as graders run
    weights = Counter(k for k in kinds.values() if k != "broken")
    total, count = 0.0, 0
    for lesson in lessons:
        for kind in ("correct", "buggy", "blank"):
            sample = next((s for (s, l), k in sorted(kinds.items()) if l == lesson and k == kind), None)
            if sample is None:
                continue
            nb = nbformat.read(root / "submitted" / sample / lesson / f"{lesson}.ipynb", as_version=4)
            start = time.perf_counter()
            NotebookClient(nb, timeout=30, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(root / "submitted" / sample / lesson)}}).execute()
            seconds = time.perf_counter() - start
            share = weights[kind] / len(lessons)
            total += seconds * share
            count += share
    return total / count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=40)
    parser.add_argument("--lesson", action="append", default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--no-feedback", action="store_true", help="ours without feedback pages and report")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor (nbclient) measurement")
    parser.add_argument("--keep", action="store_true", help="keep the temporary courses")
    args = parser.parse_args(argv)
    from attention_grading.course import lesson_ids

    lessons = args.lesson or [l for l in lesson_ids(REPO)
                              if (REPO / "solutions" / l / f"{l}.ipynb").is_file()
                              and (REPO / "notebooks" / l / f"{l}.ipynb").is_file()]
    scratch = Path(tempfile.mkdtemp(prefix="attention-bench-"))
    stock, ours = scratch / "stock", scratch / "ours"
    kinds = build(stock, lessons, args.learners)
    build(ours, lessons, args.learners)
    n = sum(1 for k in kinds.values() if k != "broken")
    print(f"{args.learners} learners x {len(lessons)} lesson(s) = {len(kinds)} submissions "
          f"({dict(Counter(kinds.values()))}); {n} gradable; {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    for root in (stock, ours):                      # both gradebooks get the lessons (not timed)
        for lesson in lessons:
            done = nbgrader(root, "generate_assignment", lesson, "--force")
            if done.returncode:
                sys.exit(done.stderr[-3000:])

    from tqdm import tqdm

    stock_meter, ours_meter = CPUMeter("stock"), CPUMeter("ours")
    start, cpu = time.perf_counter(), stock_meter.seconds()
    for lesson in tqdm(lessons, desc="stock autograde", unit="lesson"):
        # exits 1 because of the broken notebooks
        nbgrader(stock, "autograde", lesson, "--GuardedExecute.fork_kernels=False",
                 "--GuardedExecute.skip_demonstrations=False", meter=stock_meter)
    stock_seconds = time.perf_counter() - start
    stock_cpu = stock_meter.seconds() - cpu
    print(f"stock nbgrader autograde (sequential): {stock_seconds:8.1f} s  {n / stock_seconds:.3f} nb/s  "
          f"{stock_cpu:8.1f} CPU-s  {stock_cpu / n:.2f} CPU-s/nb")

    extra = ["--no-feedback", "--no-report"] if args.no_feedback else []
    start, cpu = time.perf_counter(), ours_meter.seconds()
    done = ours_meter.run([sys.executable, "-m", "attention_grading.cli.grade", "--root", str(ours),
                           "--workers", str(args.workers), "--force", *extra],
                          cwd=ours, env=env_for(ours), stdout=subprocess.PIPE, text=True)  # its progress bar shows
    ours_seconds = time.perf_counter() - start
    ours_cpu = ours_meter.seconds() - cpu
    for meter in (stock_meter, ours_meter):
        meter.close()
    print(f"attention_grading.cli.grade ({args.workers} workers{', no feedback' if args.no_feedback else ', feedback and report'}):  "
          f"{ours_seconds:8.1f} s  {n / ours_seconds:.3f} nb/s  {ours_cpu:8.1f} CPU-s  {ours_cpu / n:.2f} CPU-s/nb")
    print(f"CPU measured {'in a cgroup per way (every process, kernels included)' if ours_meter.whole else 'by RUSAGE_CHILDREN (kernels the sandbox reaps are missing)'}")

    theirs, mine = table(stock, lessons), table(ours, lessons)
    gradable = {key: value for key, value in theirs.items() if kinds[key[1], key[0]] != "broken"}
    mine = {key: value for key, value in mine.items() if kinds[key[1], key[0]] != "broken"}
    same = gradable == mine and len(mine) > 0
    print(f"same scores on every check of the {n} gradable submissions: {same}")
    if not same:
        diff = {k: (gradable.get(k), mine.get(k)) for k in set(gradable) | set(mine) if gradable.get(k) != mine.get(k)}
        print("  differences (stock, ours):", dict(list(diff.items())[:10]))
        print(done.stdout[-2000:])

    print(f"class: {args.learners} learners x {len(lessons)} lessons ({', '.join(lessons)})")
    print(f"wall ratio (stock / ours): {stock_seconds / ours_seconds:.2f}x faster  (target >= 4x)")
    print(f"CPU ratio (ours / stock): {ours_cpu / stock_cpu:.2f}x of stock's CPU  (target <= 0.5x)")
    if not args.no_floor:
        floor_seconds = floor(ours, lessons, kinds)
        per_notebook = ours_seconds * args.workers / n
        print(f"per-notebook cost: ours {per_notebook:.2f} s of a worker (wall x workers / notebooks), "
              f"stock {stock_seconds / n:.2f} s, floor (kernel start + nbclient execute) {floor_seconds:.2f} s "
              f"-> ours/floor {per_notebook / floor_seconds:.2f}x  (target <= 1.3x)")
    if args.keep:
        print(f"kept: {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
