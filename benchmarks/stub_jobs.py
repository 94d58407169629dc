"""A grading job that skips the kernels, for benchmarks/class_scale.py: what a worker would hand
back, made without running the learner's notebook.

``stub_job`` takes a real ``run.jobs.GradingJob`` (made by make grade's plan) and returns a real
``JobOutcome``: a verdict for every hidden-test cell of the lesson (passed or failed, decided by a
hash of the learner and the cell, so about two in three pass), the autograded notebook as the
course's ``ApplyVerdicts`` step leaves it (each verdict its test cell's only scoring output) and
the files nbgrader keeps beside it. Everything after it (the store, the gradebook, publish) is the
grader's own code. A module of its own so that the pool's workers can import it (a function of the
benchmark's ``__main__`` would be looked up in each worker's own ``__main__``).
"""
import hashlib
import time


def stub_job(job):
    import nbformat

    from attention_grading.cells import CellPlan, grade_id
    from attention_grading.results import GRADED, NOTES_KEY, GradingResult, NotebookNotes, Verdict
    from attention_grading.run.jobs import JobOutcome, submission_time
    from attention_grading.steps.verdicts import ApplyVerdicts

    started = time.time()
    name = f"{job.lesson}.ipynb"
    nb = nbformat.reads(job.files[name].decode("utf-8"), as_version=4)
    notes = NotebookNotes(sandbox="stub: no kernel")
    for index in CellPlan(nb.cells).tests:
        gid = grade_id(nb.cells[index])
        passed = hashlib.sha256(f"{job.student}/{gid}".encode()).digest()[0] < 170
        notes.verdicts[gid] = Verdict(gid, passed, "" if passed else "wrong values (stub verdict)",
                                      cases=4).as_dict()
    ApplyVerdicts().preprocess(nb, {NOTES_KEY: notes.as_dict()})
    result = GradingResult(job.student, job.lesson, status=GRADED, submission_sha256=job.submission_sha256,
                           lesson_sha256=job.lesson_sha256)
    result.timestamp = submission_time(job.files, job.student, job.lesson)
    result.notes = notes.as_dict()
    result.sandboxed = False
    files = {name: nbformat.writes(nb).encode("utf-8")}
    files.update({n: job.files[n] for n in ("timestamp.txt",) if n in job.files})
    result.seconds = time.time() - started
    return JobOutcome(result, True, files)
