"""Every lesson through real nbgrader with real kernels.

- the release holds no solution code and no hidden test;
- ``nbgrader validate`` passes the source and ``validate --invert`` fails every test of the release;
- autograding: the solution gets full marks, the untouched release 0, every catalogued wrong
  answer loses points on its own exercise and nowhere else, every catalogued correct answer
  (loops, einsum, scipy, chatty code that warns and prints to stderr) gets full marks;
- ``submitted/`` is byte-for-byte unchanged by grading.
"""
import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

import catalogue
import hostile
import leaks
from conftest import ROOT, copy_course, lesson_ids, nbgrader
from notebook_tools import functions_of_tests, grade_id, is_solution_code, solved, with_answer

LESSONS = lesson_ids()
HIDDEN_MARKERS = ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                  "attention_grading", "attention_reference"]


def release_path(lesson, root=ROOT):
    return Path(root) / "notebooks" / lesson / f"{lesson}.ipynb"


def solution_path(lesson, root=ROOT):
    return Path(root) / "solutions" / lesson / f"{lesson}.ipynb"


@pytest.mark.parametrize("lesson", LESSONS)
def test_release_holds_no_solution_and_no_hidden_test(lesson):
    """The learners' notebook has stubs where solutions were and no trace of hidden tests."""
    text = release_path(lesson).read_text()
    for marker in HIDDEN_MARKERS:
        assert marker not in text, f"{marker!r} leaked into notebooks/{lesson}"
    nb = nbformat.read(release_path(lesson), as_version=4)
    stubs = [c for c in nb.cells if is_solution_code(c)]
    assert stubs, "a lesson without exercises"
    for cell in stubs:
        body = cell.source.split("\n", 1)[-1]
        assert "raise NotImplementedError()" in body and len(body.strip().splitlines()) <= 2, \
            f"solution cell {grade_id(cell)} of the release is not a stub:\n{cell.source}"


def _validate_report(output):
    """Split nbgrader validate's output into {notebook path: text}."""
    parts = re.split(r"\[ValidateApp \| INFO\] Validating '([^']+)'", output)
    return {Path(parts[i]).name: parts[i + 1] for i in range(1, len(parts), 2)}


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    root = copy_course(tmp_path_factory.mktemp("validate"))
    sources = [str(root / "source" / l / f"{l}.ipynb") for l in LESSONS]
    releases = [str(release_path(l, root)) for l in LESSONS]
    with ThreadPoolExecutor(2) as pool:
        plain = pool.submit(nbgrader, root, "validate", *sources, check=False)
        inverted = pool.submit(nbgrader, root, "validate", "--invert", *releases, check=False)
        plain, inverted = plain.result(), inverted.result()
    return (_validate_report(plain.stdout),
            _validate_report(inverted.stdout))


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_validate_passes_the_source(lesson, validation):
    """nbgrader validate: the source notebook, solutions in place, passes every test."""
    report = validation[0][f"{lesson}.ipynb"]
    assert "Success! Your notebook passes all the tests." in report, report


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_validate_invert_fails_every_test_of_the_release(lesson, validation):
    """nbgrader validate --invert: no test of the untouched release passes."""
    report = validation[1][f"{lesson}.ipynb"]
    assert "Success! The notebook does not pass any tests." in report, report


# ---------------------------------------------------------------- the catalogue, autograded

def _tree_digest(folder):
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _submissions(lesson):
    """{student id: notebook} for the solution, the release and every catalogue entry."""
    answer = solved(release_path(lesson), solution_path(lesson))
    students = {"solution": answer, "untouched": nbformat.read(release_path(lesson), as_version=4)}
    for kind in ("WRONG", "CORRECT"):
        for function, variants in catalogue.entries(lesson, kind).items():
            for name, source in variants.items():
                students[f"{kind.lower()}--{function}--{name}"] = with_answer(answer, function, source)
    target = hostile.graded_functions(answer)[0]
    for case, build in hostile.CORE_CASES.items():
        students[f"hostile--{target}--{case}"] = build(answer, target)
    return students


def _grade_lesson(lesson, root):
    from nbgrader.api import Gradebook

    nbgrader(root, "generate_assignment", lesson, "--force")
    students = _submissions(lesson)
    submitted = root / "submitted"
    for student, nb in students.items():
        folder = submitted / student / lesson
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lesson}.ipynb")
    before = _tree_digest(submitted)
    # 10 s a cell (30 s in the course's config): every solution cell takes well under that here,
    # and the infinite-loop submissions wait less.
    done = nbgrader(root, "autograde", lesson, "--force", "--Execute.timeout=10", check=False)
    scores = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "attention") as gb:
        for student in students:
            notebook = gb.find_submission_notebook(lesson, lesson, student)
            scores[student] = {g.name: (g.score, g.max_score) for g in notebook.grades
                               if not g.needs_manual_grade}
    autograded = {p.parts[-3]: nbformat.read(p, as_version=4)
                  for p in (root / "autograded").glob(f"*/{lesson}/{lesson}.ipynb")}
    notes = {p.parts[-3]: json.loads(p.read_text())
             for p in (root / "autograded").glob(f"*/{lesson}/grading-notes.json")}
    # Feedback for a correct, a wrong and a hostile submission (not one that names our files in
    # its own code: feedback shows learners their own code).
    first_wrong = next(s for s in students if s.startswith("wrong--"))
    hostile_one = next(s for s in students if s.endswith("--patched_helpers"))
    for student in ("solution", first_wrong, hostile_one):
        nbgrader(root, "generate_feedback", lesson, "--student", student, "--force")
    feedback = {p.parts[-3]: p.read_text() for p in (root / "feedback").rglob("*.html")}
    return {"scores": scores, "autograded": autograded, "log": done.stdout, "notes": notes,
            "feedback": feedback, "root": root,
            "submitted_unchanged": before == _tree_digest(submitted)}


@pytest.fixture(scope="session")
def graded(request, tmp_path_factory):
    """Autograde the catalogue of every lesson the selected tests need, four lessons at a time.

    A grader mostly waits on its kernel, so four at once keep two cores busy.
    """
    wanted = sorted({item.callspec.params["lesson"] for item in request.session.items
                     if "graded" in getattr(item, "fixturenames", ())
                     and "lesson" in getattr(getattr(item, "callspec", None), "params", {})})
    roots = {lesson: copy_course(tmp_path_factory.mktemp(f"grade-{lesson}")) for lesson in wanted}
    with ThreadPoolExecutor(4) as pool:
        futures = {lesson: pool.submit(_grade_lesson, lesson, roots[lesson]) for lesson in wanted}
        return {lesson: future.result() for lesson, future in futures.items()}


def _test_cells(lesson):
    return functions_of_tests(nbformat.read(solution_path(lesson), as_version=4))


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_solution_gets_full_marks_and_runs_cleanly(lesson, graded):
    """The solution scores every point of every test cell, and no cell shows an error."""
    scores = graded[lesson]["scores"]["solution"]
    lost = {gid: s for gid, s in scores.items() if s[0] != s[1]}
    assert not lost, f"the solution lost points: {lost}\n{graded[lesson]['log'][-3000:]}"
    assert set(_test_cells(lesson)) <= set(scores)
    errors = [(c.source[:80], o.get("ename")) for c in graded[lesson]["autograded"]["solution"].cells
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_untouched_release_scores_zero(lesson, graded):
    """Submitting the release as it is earns nothing."""
    scores = graded[lesson]["scores"]["untouched"]
    assert scores and all(score == 0 for score, _ in scores.values()), scores


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_wrong_answers_lose_points_on_their_own_exercise_only(lesson, graded):
    """Each catalogued mistake costs points on its function's tests and nowhere else."""
    owners = _test_cells(lesson)
    wrong = {s: v for s, v in graded[lesson]["scores"].items() if s.startswith("wrong--")}
    if catalogue.load(lesson) is None:
        pytest.fail(f"lesson {lesson} has no catalogue of learner answers in tests/catalogue/")
    problems, killed = [], 0
    for student, scores in wrong.items():
        function = student.split("--")[1]
        own = [gid for gid, owner in owners.items() if owner == function]
        assert own, f"{student}: no test cells follow the solution cell {function!r}"
        if any(scores[gid][0] < scores[gid][1] for gid in own):
            killed += 1
        else:
            problems.append(f"{student} kept full marks on {own}")
        others = {gid: scores[gid] for gid in scores if gid in owners and gid not in own
                  and scores[gid][0] != scores[gid][1]}
        if others:
            problems.append(f"{student} also lost points elsewhere: {others}")
    print(f"\n{lesson}: kill rate {killed}/{len(wrong)} wrong answers caught "
          f"({catalogue.size(lesson, 'WRONG')} in the catalogue)")
    assert len(wrong) >= 3 * len(set(owners.values())), "fewer than three wrong answers per function"
    assert not problems, "\n".join(problems)


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_correct_answers_written_differently_get_full_marks(lesson, graded):
    """Loops, einsum, scipy, or code that warns and writes to stderr: full marks all the same."""
    correct = {s: v for s, v in graded[lesson]["scores"].items() if s.startswith("correct--")}
    assert len(correct) >= 2, "fewer than two correct variants in the catalogue"
    lost = {s: {g: v for g, v in scores.items() if v[0] != v[1]} for s, scores in correct.items()}
    lost = {s: v for s, v in lost.items() if v}
    assert not lost, lost


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_grading_never_modifies_submitted(lesson, graded):
    """nbgrader autograde reads submitted/ and writes only autograded/."""
    assert graded[lesson]["submitted_unchanged"]


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_hostile_submissions_get_their_defined_outcome(lesson, graded):
    """Reaching for the reference, patching the checks, crashing, editing test cells: see README."""
    owners = _test_cells(lesson)
    problems = []
    for student, scores in graded[lesson]["scores"].items():
        if not student.startswith("hostile--"):
            continue
        _, target, case = student.split("--")
        notes = graded[lesson]["notes"].get(student, {})
        target_cells = [g for g, owner in owners.items() if owner == target]
        other_cells = [g for g, owner in owners.items() if owner != target]
        lost_elsewhere = {g: scores[g] for g in other_cells if scores[g][0] != scores[g][1]}
        if hostile.EXPECTED[case] == "zero":
            if any(scores[g][0] > 0 for g in target_cells):
                problems.append(f"{student}: {target} kept points {[scores[g] for g in target_cells]}")
        elif any(scores[g][0] != scores[g][1] for g in target_cells):
            problems.append(f"{student}: a correct answer lost points {[scores[g] for g in target_cells]}")
        if lost_elsewhere:
            problems.append(f"{student}: other exercises lost points {lost_elsewhere}")
        if case in hostile.FLAGGED and not (notes.get("flags") and target in notes.get("zeroed_exercises", [])):
            problems.append(f"{student}: not flagged in grading-notes.json: {notes}")
        if case not in hostile.FLAGGED and notes.get("flags"):
            problems.append(f"{student}: flagged without cause: {notes['flags'][:3]}")
        if case == "kernel_crash" and not notes.get("crashed_cells"):
            problems.append(f"{student}: the crash is not named in grading-notes.json")
        if case == "chatty_correct_with_retyped_test":
            size = len(nbformat.writes(graded[lesson]["autograded"][student]))
            if size > 1_000_000:
                problems.append(f"{student}: its printout was not cut ({size} bytes graded)")
    for student in ("solution",) + tuple(s for s in graded[lesson]["scores"] if s.startswith("correct--")):
        if graded[lesson]["notes"].get(student, {}).get("flags"):
            problems.append(f"{student}: an honest submission was flagged: {graded[lesson]['notes'][student]['flags'][:3]}")
    assert not problems, "\n".join(problems)


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_feedback_shows_verdicts_but_no_hidden_test(lesson, graded):
    """generate_feedback: each check's docstring and diagnosis, never hidden code, reference code or paths."""
    feedback = graded[lesson]["feedback"]
    assert len(feedback) == 3, sorted(feedback)
    for student, html in feedback.items():
        assert not leaks.found_in(html, graded[lesson]["root"]), student
        assert "hidden tests run here" in html
    wrong = next(html for student, html in feedback.items() if student.startswith("wrong--"))
    assert "On " in wrong and ("HiddenTestFailure" in wrong or "CheckFailed" in wrong)
