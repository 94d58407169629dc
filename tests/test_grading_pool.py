"""The process pool behind `make grade`: a second attempt for failures, and a worker's death
charged to the job that caused it alone (attention_grading.grade.Pool, run_with_second_attempt)."""
from tqdm import tqdm

from attention_grading.grade import Pool, run_with_second_attempt
from grading_helpers import flaky_job


def test_failures_get_one_second_attempt_and_a_killer_fails_alone(tmp_path):
    behaviours = {"a": "ok", "b": "fails_once", "c": "fails", "d": "kills_worker", "e": "ok",
                  "f": "ok", "g": "fails_once", "h": "ok"}
    jobs = [(str(tmp_path), name, behaviour) for name, behaviour in behaviours.items()]
    kept, attempts = {}, []

    def keep(job, result, attempt):
        attempts.append((job[1], attempt))
        if result.get("ok"):
            kept[job[1]] = result["runs"]
            return None
        return result.get("message", "?")

    pool = Pool(2)
    try:
        with tqdm(total=len(jobs), disable=True) as bar:
            turned_down, second = run_with_second_attempt(pool, flaky_job, jobs, bar, keep)
    finally:
        pool.close()
    runs = {name: int((tmp_path / name).read_text()) for name in behaviours}
    assert {job[1] for job in turned_down} == {"c", "d"}
    assert "died" in turned_down[str(tmp_path), "d", "kills_worker"]
    assert {job[1]: why for job, why in second.items()} == {"b": "b failed on run 1", "g": "g failed on run 1"}
    assert set(kept) == {"a", "b", "e", "f", "g", "h"}
    # every job that succeeded ran once, or twice if it was made to fail once (or shared the pool
    # with the killer when it died and was run again alone); a job that always fails runs twice;
    # the killer runs once with the others and once alone, never a third time
    assert runs["c"] == 2 and runs["d"] == 2 and runs["b"] == 2 and runs["g"] == 2
    assert all(runs[name] <= 2 for name in "aefh")
    assert sorted(n for n, _ in attempts) == sorted("abcdefghbgc")
