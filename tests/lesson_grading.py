"""The expensive runs behind tests/test_lessons.py and tests/test_validate.py: ``nbgrader validate``
on every lesson (as the instructor and as a learner), and autograding every lesson's catalogue and
hostile cases. Each takes a scratch folder and
returns plain data, so that tests/background.py can start it as soon as the tests are collected.
"""
import csv
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

import catalogue
import hostile
from conftest import ROOT, copy_course, nbgrader
from grading_helpers import CELL_TIMEOUT, run_grade, tree_hash
from notebook_tools import execute, lean, solved, with_answer


def release_path(lesson, root=ROOT):
    return Path(root) / "notebooks" / lesson / f"{lesson}.ipynb"


def solution_path(lesson, root=ROOT):
    return Path(root) / "solutions" / lesson / f"{lesson}.ipynb"


# ---------------------------------------------------------------- nbgrader validate

def _validate_report(output):
    """Split nbgrader validate's output into {notebook file name: text}."""
    parts = re.split(r"\[ValidateApp \| INFO\] Validating '([^']+)'", output)
    return {Path(parts[i]).name: parts[i + 1] for i in range(1, len(parts), 2)}


def validate_all(folder, lessons):
    """(reports of ``validate`` on the sources, reports of ``validate --invert`` on the release)."""
    root = copy_course(Path(folder) / "course", lessons=lessons)
    sources = [str(root / "source" / l / f"{l}.ipynb") for l in lessons]
    releases = [str(release_path(l, root)) for l in lessons]
    with ThreadPoolExecutor(2) as pool:
        plain = pool.submit(nbgrader, root, "validate", *sources, check=False)
        inverted = pool.submit(nbgrader, root, "validate", "--invert", *releases, check=False)
        plain, inverted = plain.result(), inverted.result()
    return _validate_report(plain.stdout), _validate_report(inverted.stdout)


# ---------------------------------------------------------------- nbgrader validate, as a learner runs it

def learner_notebooks(lesson):
    """(the release with every answer written, the same with the first exercise's first catalogued
    mistake in its place, that function and that mistake)."""
    right = solved(release_path(lesson), solution_path(lesson))
    function, entries = next(iter(catalogue.load(lesson).WRONG.items()))
    mistake, source = next(iter(entries.items()))
    return right, with_answer(right, function, source), function, mistake


def _demonstration_errors(nb):
    """``[(cell source, traceback text)]`` of the cells nbgrader knows nothing of that raised."""
    from notebook_tools import cell_role

    found = []
    for cell in nb.cells:
        if cell.cell_type == "code" and not cell_role(cell):
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    found.append((cell.source, re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(output.traceback))))
    return found


def validate_as_learner(folder, lessons):
    """What a learner sees, in a folder of their own (no course configuration): ``nbgrader validate``
    on each lesson with every answer right, and with one catalogued mistake; and, for the latter,
    the errors of the demonstrations when the notebook runs as the Validate button runs it.
    Returns ``{"right": reports, "wrong": reports, "output": both outputs, "mistakes": {lesson:
    (function, mistake)}, "demonstrations": {lesson: errors}}``."""
    from nbclient import NotebookClient

    learner = Path(folder) / "learner"
    paths, mistakes, wrong_nbs = {"right": [], "wrong": []}, {}, {}
    for lesson in lessons:
        right, wrong, function, mistake = learner_notebooks(lesson)
        mistakes[lesson], wrong_nbs[lesson] = (function, mistake), wrong
        for kind, nb in (("right", right), ("wrong", wrong)):
            path = learner / kind / lesson / f"{lesson}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(nb, path)
            paths[kind].append(str(path))

    def demonstrations(lesson):
        nb = nbformat.from_dict(wrong_nbs[lesson])
        nb.cells.insert(0, nbformat.v4.new_code_cell("import os\nos.environ['NBGRADER_EXECUTION'] = 'validate'"))
        execute(NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                               resources={"metadata": {"path": str(learner)}}))
        return _demonstration_errors(nb)

    with ThreadPoolExecutor(2) as pool:
        runs = {kind: pool.submit(nbgrader, learner, "validate", *paths[kind], check=False) for kind in paths}
        demos = {lesson: pool.submit(demonstrations, lesson) for lesson in lessons}
        runs = {kind: run.result().stdout for kind, run in runs.items()}
        demos = {lesson: run.result() for lesson, run in demos.items()}
    return {"right": _validate_report(runs["right"]), "wrong": _validate_report(runs["wrong"]),
            "output": runs["right"] + runs["wrong"], "mistakes": mistakes, "demonstrations": demos}


# ---------------------------------------------------------------- autograding

#: The lesson whose hostile cases (tests/hostile.py) the quick tier grades; the full tier grades every lesson's.
QUICK_HOSTILE_LESSON = "01_context_vectors"
# A guard against a hung grader, not a speed target: the full tier grades some 450 notebooks in one
# make grade run beside the rest of the suite (a notebook takes a worker about 4 s on an idle
# machine, several times that on a loaded one; lesson 09's train for a minute).
HANG_GUARD_PER_NOTEBOOK = 15


def submissions(lesson, sampled=False):
    """({student id: notebook}, {student id: catalogue manifest}): the solution and the release as
    they are, every catalogue entry (packed, see ``catalogue.packed``; a sample of it when
    ``sampled``) and every hostile case (when ``sampled``, only in ``QUICK_HOSTILE_LESSON``) in a
    lean notebook (demonstrations deleted, as a learner may: grading reads answers and tests)."""
    answer = solved(release_path(lesson), solution_path(lesson))
    students = {"solution": answer, "untouched": nbformat.read(release_path(lesson), as_version=4)}
    manifest = {}
    answer = lean(answer)
    for entry in catalogue.packed(lesson, hostile.graded_functions(answer), sampled):
        nb = answer
        for function, source in entry["sources"].items():
            nb = with_answer(nb, function, source)
        students[entry["id"]] = nb
        manifest[entry["id"]] = entry
    target = hostile.graded_functions(answer)[0]
    for case, build in hostile.CORE_CASES.items() if not sampled or lesson == QUICK_HOSTILE_LESSON else ():
        students[f"hostile--{target}--{case}"] = build(answer, target)
    return students, manifest


def _write_submissions(root, lesson, sampled):
    students, manifest = submissions(lesson, sampled)
    for student, nb in students.items():
        folder = root / "submitted" / student / lesson
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lesson}.ipynb")
    return students, manifest


def _results(root, lesson, students, manifest, log):
    from nbgrader.api import Gradebook, MissingEntry

    scores = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        for student in students:
            try:
                notebook = gb.find_submission_notebook(lesson, lesson, student)
            except MissingEntry:  # not graded: test_every_submission_is_graded says why
                continue
            scores[student] = {g.name: (g.score, g.max_score) for g in notebook.grades
                               if not g.needs_manual_grade}
    autograded = {p.parts[-3]: nbformat.read(p, as_version=4)
                  for p in (root / "autograded").glob(f"*/{lesson}/{lesson}.ipynb")}
    notes = {p.parts[-3]: json.loads(p.read_text())
             for p in (root / "autograded").glob(f"*/{lesson}/grading-notes.json")}
    feedback = {p.parts[-3]: p.read_text() for p in (root / "feedback").glob(f"*/{lesson}/*.html")
                if p.parts[-3] in students}
    return {"scores": scores, "autograded": autograded, "log": log, "notes": notes,
            "feedback": feedback, "root": root, "manifest": manifest, "students": sorted(students)}


def _noted(root):
    """({(student, lesson): why} not graded, {(student, lesson): note} graded on a second
    attempt), from the ``status`` and ``note`` columns of ``make grade``'s grades.csv."""
    if not (Path(root) / "grades.csv").is_file():   # make grade stopped early: its output says why
        return {}, {}
    with open(Path(root) / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return ({(r["student"], r["lesson"]): r["note"] for r in rows if r["status"] == "ungradable"},
            {(r["student"], r["lesson"]): r["note"] for r in rows
             if r["status"] != "ungradable" and "second attempt" in r["note"]})


def _with_logs(root, noted):
    """Each message followed by the end of the grading logs ``make grade`` kept for it."""
    out = {}
    for (student, lesson), message in noted.items():
        logs = sorted((Path(root) / "grading-report" / "logs").glob(f"{student}__{lesson}.*.log"))
        tails = [f"--- {p.name}:\n{p.read_text()[-2500:]}" for p in logs]
        out[student, lesson] = "\n".join([message, *tails])
    return out


def _without_progress(text):
    return "\n".join(line for line in text.replace("\r", "\n").splitlines() if "it/s]" not in line
                     and "nb/s]" not in line and "s/nb]" not in line)


def grade_all(folder, lessons, attacks=False, sampled=False):
    """{lesson: results}: every lesson's catalogue and hostile cases, autograded (a sample of each
    when ``sampled``); with ``attacks``, also the hostile catalogue of tests/hostile_catalogue.py
    (its quick-tier selection when ``sampled``; its results under ``"_hostile"``);
    ``"_breakdown"``: where the run's time went, for the summary (``kernel_time_by_lesson``).

    All the submissions go in one course and through ``make grade`` (``attention_grading.cli.grade``:
    stock nbgrader ``Autograde`` per submission, four workers), so the cores stay busy to the end
    instead of waiting on the longest lesson. It runs as a process of its own, so nothing the
    tests do meanwhile (warning filters, environment) reaches it.
    """
    import hostile_catalogue

    attack_names = hostile_catalogue.selected(full=not sampled) if attacks else []
    course_lessons = sorted(set(lessons) | set(hostile_catalogue.lessons_of(attack_names)))
    root = copy_course(Path(folder) / "course", lessons=course_lessons)
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.Execute.timeout = {CELL_TIMEOUT}\n")
    for lesson in course_lessons:
        nbgrader(root, "generate_assignment", lesson, "--force")
    written = {lesson: _write_submissions(root, lesson, sampled) for lesson in lessons}
    if attacks:
        import test_hostile_catalogue as hostile_tests

        context = hostile_tests.write_attacks(root, attack_names)
    before = tree_hash(root / "submitted")
    lesson_args = [arg for lesson in course_lessons for arg in ("--lesson", lesson)]
    secret = {"ATTENTION_TEST_SECRET": hostile_tests.SECRET} if attacks else {}
    notebooks = sum(1 for _ in (root / "submitted").glob("*/*/*.ipynb"))
    graded = run_grade(root, *lesson_args, "--workers", "4", "--force", "--no-feedback", "--no-report",
                       timeout=max(1800, HANG_GUARD_PER_NOTEBOOK * notebooks), **secret)
    # A submission that could not be graded fails its lesson's test_every_submission_is_graded,
    # with the reason and the grading log, rather than every test of every lesson.
    not_graded, second_attempts = (_with_logs(root, noted) for noted in _noted(root))
    if graded.returncode != 0 and not not_graded:
        raise RuntimeError(f"make grade failed:\n{graded.stdout[-6000:]}\n"
                           f"{_without_progress(graded.stderr)[-3000:]}")
    # Feedback for a correct, a wrong and a hostile submission of each lesson (not one that names
    # our files in its own code: feedback shows learners their own code).
    readers = {"solution"}
    for students, _ in written.values():
        readers.add(next(s for s in students if s.startswith("wrong--")))
        readers.add(next((s for s in students if s.endswith("--patched_helpers")), "solution"))
    if attacks:
        readers |= {f"attack_{name}" for name in hostile_tests.FEEDBACK_READERS if name in attack_names}
    reader_args = [arg for student in sorted(readers) for arg in ("--student", student)]
    feedback = run_grade(root, *lesson_args, *reader_args, "--workers", "4", "--no-report", timeout=600)
    if "feedback file(s) could not be generated" in feedback.stdout or \
            (feedback.returncode != 0 and not not_graded):
        raise RuntimeError(f"feedback failed:\n{feedback.stdout[-6000:]}\n"
                           f"{_without_progress(feedback.stderr)[-3000:]}")
    unchanged = before == tree_hash(root / "submitted")
    results = {}
    for lesson, (students, manifest) in written.items():
        results[lesson] = _results(root, lesson, students, manifest, graded.stdout)
        results[lesson]["submitted_unchanged"] = unchanged
        results[lesson]["not_graded"] = {s: m for (s, l), m in not_graded.items() if l == lesson and s in students}
        results[lesson]["second_attempts"] = {s: m for (s, l), m in second_attempts.items()
                                              if l == lesson and s in students}
    if attacks:
        results["_hostile"] = hostile_tests.after_make_grade(context, graded)
    results["_breakdown"] = kernel_time_by_lesson(root) + [
        f"  {line}" for line in graded.stdout.splitlines() if line.startswith("longest to grade")]
    return results


def _span(nb):
    """Seconds from a notebook's first cell starting to its last cell's reply (nbclient's timing
    metadata): the kernel's part of a grading job, hidden tests included, its start not."""
    stamps = [value for cell in nb.cells for key, value in cell.get("metadata", {}).get("execution", {}).items()
              if key in ("iopub.status.busy", "shell.execute_reply")]
    if not stamps:
        return 0.0
    from datetime import datetime

    times = [datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in stamps]
    return max(times) - min(times)


def kernel_time_by_lesson(root):
    """Lines for the background-runs summary: per lesson (and for the hostile catalogue), how many
    notebooks were graded and the kernel time they took, with the longest: where the run's time went."""
    groups = {}
    for path in sorted(Path(root, "autograded").glob("*/*/*.ipynb")):
        student, lesson = path.parts[-3], path.parts[-2]
        group = "hostile catalogue" if student.startswith("attack_") else lesson
        groups.setdefault(group, []).append((_span(nbformat.read(path, as_version=4)), student))
    lines = []
    for group, spans in sorted(groups.items(), key=lambda item: -sum(s for s, _ in item[1])):
        longest, who = max(spans)
        lines.append(f"  {group}: {len(spans)} notebooks, {sum(s for s, _ in spans):.0f} s in kernels "
                     f"(longest {longest:.0f} s: {who})")
    return lines
