"""The worker pool behind `make grade` (attention_grading.run.pool): a second attempt for failures,
and a job whose worker dies, hangs or is stopped charged to that job alone, with real processes."""
from tqdm import tqdm

from attention_grading.run.pool import LocalPool, run_with_second_attempt
from flaky_jobs import FlakyJob, run_flaky


def _run(folder, behaviours, job_timeout=None):
    """(turned down {name: why}, second attempts {name: why}, kept names, runs {name: count})."""
    jobs = [FlakyJob(str(folder), name, behaviour) for name, behaviour in behaviours.items()]
    kept = set()

    def keep(job, outcome, attempt):
        if outcome.ok:
            kept.add(job.name)
            return None
        return outcome.message

    pool = LocalPool(2, job_timeout)
    try:
        with tqdm(total=len(jobs), disable=True) as bar:
            turned_down, second = run_with_second_attempt(pool, run_flaky, jobs, bar, keep)
    finally:
        pool.close()
    runs = {name: (folder / name).stat().st_size for name in behaviours}
    return turned_down, second, kept, runs


def test_a_failure_gets_one_second_attempt(tmp_path):
    """A job that fails once is kept on its second run; one that always fails is run twice, then reported."""
    behaviours = {"a": "ok", "b": "fails_once", "c": "fails", "e": "ok", "g": "fails_once"}
    turned_down, second, kept, runs = _run(tmp_path, behaviours)
    assert turned_down == {"c": "c failed on run 2"}
    assert second == {"b": "b failed on run 1", "g": "g failed on run 1"}
    assert kept == {"a", "b", "e", "g"}
    assert runs == {"a": 1, "b": 2, "c": 2, "e": 1, "g": 2}


def test_a_worker_that_dies_hangs_or_is_stopped_costs_only_its_job(tmp_path):
    """Killed, hung and stopped workers: each job reported alone, everyone else kept, the run ends."""
    behaviours = {"a": "ok", "b": "ok", "d": "kills_worker", "e": "ok", "h": "hangs", "f": "ok",
                  "s": "stops", "g": "ok"}
    turned_down, second, kept, runs = _run(tmp_path, behaviours, job_timeout=3)
    assert set(turned_down) == {"d", "h", "s"}, turned_down
    assert "died" in turned_down["d"] and "longer than 3 s" in turned_down["h"] and "longer than 3 s" in turned_down["s"]
    assert kept == set(behaviours) - {"d", "h", "s"} and not second
    assert runs["d"] == 2, "a job whose worker died gets one second attempt"
    assert runs["h"] == runs["s"] == 1, "a job that used up its time is not run again"
    assert all(runs[name] == 1 for name in kept)


def test_jobs_are_planned_as_workers_free_up(tmp_path):
    """A generator of jobs (make grade's plan, run.plan.Plan.jobs) is drawn one job at a time as
    a worker frees up: jobs planned and not yet stored never outnumber the workers, plus the one
    planned ahead and the one whose outcome is being handed over, however many there are; a
    failed one still gets its second attempt."""
    workers, planned, finished, most = 2, [], set(), [0]
    names = [f"job{i:02d}" for i in range(24)]

    def plan():
        for name in names:
            planned.append(name)
            most[0] = max(most[0], len(planned) - len(finished))
            yield FlakyJob(str(tmp_path), name, "fails_once" if name == "job05" else "ok")

    def keep(job, outcome, attempt):
        finished.add(job.name)
        return None if outcome.ok else outcome.message

    pool = LocalPool(workers)
    try:
        with tqdm(total=len(names), disable=True) as bar:
            turned_down, second = run_with_second_attempt(pool, run_flaky, plan(), bar, keep)
    finally:
        pool.close()
    assert planned == names and finished == set(names)
    assert turned_down == {} and second == {"job05": "job05 failed on run 1"}
    assert 1 <= most[0] <= workers + 2, most[0]


def test_workers_warmed_before_the_run_are_the_ones_that_grade(tmp_path):
    """``warm`` starts the workers (in a thread) while the caller goes on; the run then grades on
    those very processes, starting none of its own, and ``close`` stops them."""
    import multiprocessing

    pool = LocalPool(2)
    try:
        pool.warm()
        pool._warm_ones()
        warmed = {worker.process.pid for worker in pool._idle}
        assert len(warmed) == 2
        kept = set()
        with tqdm(total=4, disable=True) as bar:
            jobs = [FlakyJob(str(tmp_path), f"w{i}", "ok") for i in range(4)]
            for job, outcome in pool.run(run_flaky, jobs, bar):
                assert outcome.ok
                kept.add(job.name)
        assert kept == {"w0", "w1", "w2", "w3"}
        assert {worker.process.pid for worker in pool._idle} == warmed
    finally:
        pool.close()
    assert not pool._idle and not [p for p in multiprocessing.active_children() if p.pid in warmed]
