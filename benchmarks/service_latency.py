"""The grading service's latency: from `nbgrader submit` to feedback fetchable.

A course on an exchange in a temporary folder, the service (`python -m attention_grading.cli.serve`)
running in the foreground beside it, learners submitting with real `nbgrader submit`. A submission's
latency runs from the start of its `nbgrader submit` to the moment its feedback page is in the
exchange under the name `nbgrader fetch_feedback` looks for (its notebook's hash under the
submission's secret); the script then fetches every page once, as the learner.

- one learner (default): the solution of each lesson 01-08 in turn, each submitted once the previous
  one's feedback is out; prints each lesson's latency, then p50/p95/max (issue 42: p50 < 30 s,
  p95 < 60 s);
- `--rush`: a deadline rush, `--submissions` over `--minutes` from `--learners` learners (default
  40 over 2 minutes from 8; the issue's 200 over 10 minutes: `--submissions 200 --minutes 10
  --learners 40`), one learner flooding a quarter of them, each submission of a lesson drawn from
  `--lessons` (default: an even mix of 01-08; e.g. `--lessons 01,03,06` for the three light ones
  of earlier measurements); every submission must be answered; prints p50/p95/max (also per
  lesson), the flood's and the others' waits, and the queue's length as the service reported it.
  Each learner fetches the lessons they will submit before the clock starts.

Usage: .venv/bin/python benchmarks/service_latency.py [--lesson ID ...] [--rush] [--submissions N]
                                                     [--minutes M] [--learners L] [--workers W]
                                                     [--lessons 01,02,...]
"""
import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "instructor" / "grading")]

from service_course import Learner, served_course, start_service, status, stop_service  # noqa: E402

ONE_LEARNER_LESSONS = ["01_context_vectors", "02_queries_keys_values", "03_scaling", "04_causal_masking",
                       "05_gradients", "06_multi_head", "07_capstone", "08_long_context"]


def lessons_named(text):
    """The lessons of ``--lessons`` (``01,03,06``: ids or their numbers), in course order."""
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    chosen = [l for l in ONE_LEARNER_LESSONS if any(l == w or l.split("_")[0] == w for w in wanted)]
    unknown = [w for w in wanted if not any(l == w or l.split("_")[0] == w for l in ONE_LEARNER_LESSONS)]
    if unknown or not chosen:
        raise SystemExit(f"--lessons: not lessons of the course: {', '.join(unknown) or text!r} "
                         f"(lessons: {', '.join(ONE_LEARNER_LESSONS)})")
    return chosen


def page_path(exchange, learner, lesson, before):
    """The exchange's page for ``learner``'s newest submission of ``lesson`` not in ``before``."""
    from nbgrader.utils import notebook_hash

    cache = learner.home / ".cache" / "attention"
    new = sorted(set(cache.glob(f"*+{lesson}+*")) - before)
    secret = (new[-1] / "submission_secret.txt").read_text()
    return exchange / "attention" / "feedback" / f"{notebook_hash(secret=secret, notebook_id=lesson)}.html"


def submissions_of(learner, lesson):
    return set((learner.home / ".cache" / "attention").glob(f"*+{lesson}+*"))


def percentiles(values):
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered), p95, ordered[-1]


def wait_for(path, service, timeout=1800):
    while not path.exists():
        if service.poll() is not None:
            raise SystemExit(f"the service stopped (status {service.returncode})")
        if time.monotonic() > timeout:
            raise SystemExit(f"no feedback at {path} in time")
        time.sleep(0.1)


def one_learner(base, lessons, workers):
    course, exchange = served_course(base, lessons, "c.GradingService.settle_seconds = 0.2\n")
    learner = Learner(base, "solo", exchange)
    for lesson in lessons:          # fetched before the clock starts: the learner's work is done
        learner.fetch(lesson)
    service = start_service(course, "--workers", str(workers))
    try:
        while status(course).get("pid") != service.pid:
            time.sleep(0.1)
        latencies = {}
        for lesson in lessons:
            before = submissions_of(learner, lesson)
            started = time.monotonic()
            learner.submit(lesson, "correct")
            page = page_path(exchange, learner, lesson, before)
            wait_for(page, service, started + 1800)
            latencies[lesson] = time.monotonic() - started
            print(f"{lesson:<26} submit -> feedback fetchable {latencies[lesson]:6.1f} s", flush=True)
    finally:
        stop_service(service)
    fetched = sum(len(learner.fetch_feedback(lesson)) for lesson in lessons)
    p50, p95, most = percentiles(list(latencies.values()))
    print(f"one learner, {len(lessons)} lesson(s): p50 {p50:.1f} s, p95 {p95:.1f} s, max {most:.1f} s "
          f"(issue 42: p50 < 30 s, p95 < 60 s); pages fetched by the learner: {fetched}/{len(lessons)}")
    return latencies


def rush(base, submissions, minutes, learners, workers, lessons):
    course, exchange = served_course(base, lessons, "c.GradingService.settle_seconds = 0.2\n")
    people = [Learner(base, f"learner{n:02d}", exchange) for n in range(learners)]
    flood = people[0]
    rng = random.Random(42)
    plan = [(flood if n % 4 == 0 else rng.choice(people[1:]), rng.choice(lessons), rng.choice(["correct", "correct", "blank"]))
            for n in range(submissions)]
    for person, lesson in sorted({(p, l) for p, l, _ in plan}, key=lambda pair: (pair[0].name, pair[1])):
        person.fetch(lesson)        # before the clock: only what the rush will hand in
    service = start_service(course, "--workers", str(workers))
    pending, done, queue_lengths = [], [], []
    try:
        while status(course).get("pid") != service.pid:
            time.sleep(0.1)
        t0 = time.monotonic()
        gap = 60.0 * minutes / submissions
        def answered():
            """Time each page as it appears (also while submissions are still being made)."""
            for item in list(pending):
                if item[2].exists():
                    done.append((item[0].name, time.monotonic() - item[3], item[1]))
                    pending.remove(item)

        for n, (person, lesson, kind) in enumerate(plan):
            while time.monotonic() < t0 + n * gap:
                answered()
                time.sleep(min(0.2, max(0.0, t0 + n * gap - time.monotonic())))
            before = submissions_of(person, lesson)
            started = time.monotonic()
            person.submit(lesson, kind)
            pending.append((person, lesson, page_path(exchange, person, lesson, before), started))
            queue_lengths.append(status(course).get("queue", 0))
        while pending:
            answered()
            if service.poll() is not None:
                raise SystemExit(f"the service stopped (status {service.returncode})")
            queue_lengths.append(status(course).get("queue", 0))
            time.sleep(0.2)
    finally:
        stop_service(service)
    waits = [seconds for _, seconds, _ in done]
    p50, p95, most = percentiles(waits)
    theirs = [s for name, s, _ in done if name != flood.name]
    mine = [s for name, s, _ in done if name == flood.name]
    print(f"rush: {submissions} submissions over {minutes} min from {learners} learners ({len(mine)} from one "
          f"flooding learner), lessons {', '.join(l.split('_')[0] for l in lessons)}, {workers} worker(s): "
          f"all {len(done)} answered")
    print(f"  submit -> feedback: p50 {p50:.1f} s, p95 {p95:.1f} s, max {most:.1f} s")
    for lesson in lessons:
        these = [s for _, s, l in done if l == lesson]
        if these:
            print(f"    {lesson:<26} {len(these):>4} submission(s): p50 {statistics.median(these):.1f} s, "
                  f"max {max(these):.1f} s")
    print(f"  the flooding learner: p50 {statistics.median(mine):.1f} s, max {max(mine):.1f} s; "
          f"the others: p50 {statistics.median(theirs):.1f} s, max {max(theirs):.1f} s")
    print(f"  queue length seen: max {max(queue_lengths)}, mean {statistics.mean(queue_lengths):.1f}")
    table = (course / "grading-report" / "service-status.txt").read_text()
    print("  the service's last table:\n    " + table.replace("\n", "\n    "))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", default=None, help="one-learner lessons (default 01-08)")
    parser.add_argument("--rush", action="store_true", help="the deadline rush instead of one learner")
    parser.add_argument("--submissions", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--learners", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lessons", type=lessons_named, default=list(ONE_LEARNER_LESSONS),
                        help="the rush's lessons, comma-separated ids or numbers (default: 01-08, an even mix)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="attention-service-bench-"))
    try:
        if args.rush:
            rush(base, args.submissions, args.minutes, args.learners, args.workers, args.lessons)
        else:
            one_learner(base, args.lesson or ONE_LEARNER_LESSONS, args.workers)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
