"""The process pool behind `make grade`: a second attempt for failures, and a worker's death
charged to the job that caused it alone (attention_grading.grade.Pool, run_with_second_attempt)."""
from tqdm import tqdm

from attention_grading.grade import Pool, run_with_second_attempt
from grading_helpers import flaky_job


def _run(folder, behaviours):
    """(turned down {name: why}, second attempts {name: why}, kept names, runs {name: count})."""
    jobs = [(str(folder), name, behaviour) for name, behaviour in behaviours.items()]
    kept = set()

    def keep(job, result, attempt):
        if result.get("ok"):
            kept.add(job[1])
            return None
        return result.get("message", "?")

    pool = Pool(2)
    try:
        with tqdm(total=len(jobs), disable=True) as bar:
            turned_down, second = run_with_second_attempt(pool, flaky_job, jobs, bar, keep)
    finally:
        pool.close()
    runs = {name: (folder / name).stat().st_size for name in behaviours}
    return ({job[1]: why for job, why in turned_down.items()}, {job[1]: why for job, why in second.items()},
            kept, runs)


def test_a_failure_gets_one_second_attempt(tmp_path):
    """A job that fails once is kept on its second run; one that always fails is run twice, then reported."""
    behaviours = {"a": "ok", "b": "fails_once", "c": "fails", "e": "ok", "g": "fails_once"}
    turned_down, second, kept, runs = _run(tmp_path, behaviours)
    assert turned_down == {"c": "c failed on run 2"}
    assert second == {"b": "b failed on run 1", "g": "g failed on run 1"}
    assert kept == {"a", "b", "e", "g"}
    assert runs == {"a": 1, "b": 2, "c": 2, "e": 1, "g": 2}


def test_a_job_that_kills_its_worker_fails_alone(tmp_path):
    """The jobs in the pool when a worker dies are run again alone; only the killer is reported."""
    behaviours = {"a": "ok", "b": "ok", "d": "kills_worker", "e": "ok", "f": "ok", "g": "ok", "h": "ok"}
    turned_down, second, kept, runs = _run(tmp_path, behaviours)
    assert set(turned_down) == {"d"} and "died" in turned_down["d"]
    assert kept == set(behaviours) - {"d"} and not second
    assert runs["d"] == 2, "the killer was not run alone once, or was run again after dying alone"
    assert all(runs[name] <= 2 for name in kept)
