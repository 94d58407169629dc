"""Every lesson through real nbgrader with real kernels.

- the release holds no solution code and no hidden test;
- ``nbgrader validate`` passes the source and ``validate --invert`` fails every test of the release;
- autograding: the solution gets full marks, the untouched release 0, every catalogued wrong
  answer loses points on its own exercise and nowhere else, every catalogued correct answer
  (loops, einsum, scipy, chatty code that warns and prints to stderr) gets full marks on its
  exercise (entries are packed: a wrong answer shares its notebook with correct answers of the
  lesson's other functions);
- ``submitted/`` is byte-for-byte unchanged by grading.
"""
import warnings

import nbformat
import pytest

import background
import catalogue
import hostile
import leaks
import lesson_grading
from conftest import closing_notes, lesson_ids, lessons_using, quick_tier_keeps
from lesson_grading import release_path, solution_path
from notebook_tools import functions_of_tests, grade_id, is_solution_code

LESSONS = lesson_ids()
#: ``nbgrader validate`` in the quick tier: the first lesson and the last (its training shortened
#: for validation); the full tier validates every lesson. The quick tier's catalogue run grades
#: every lesson's solution and untouched release through ``make grade`` all the same.
VALIDATED = quick_tier_keeps(LESSONS, (LESSONS[0], LESSONS[-1]))
HIDDEN_MARKERS = ["BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                  "attention_grading", "attention_reference"]


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


@pytest.fixture(scope="session")
@background.waits
def validation(request):
    """({notebook: report} of ``validate`` on the sources, same of ``validate --invert`` on the release)."""
    return background.result(request.session, "validation", lesson_grading.validate_all,
                             lessons_using(request.session, "validation"))


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", VALIDATED)
def test_validate_passes_the_source(lesson, validation):
    """nbgrader validate: the source notebook, solutions in place, passes every test."""
    report = validation[0][f"{lesson}.ipynb"]
    assert "Success! Your notebook passes all the tests." in report, report


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", VALIDATED)
def test_validate_invert_fails_every_test_of_the_release(lesson, validation):
    """nbgrader validate --invert: no test of the untouched release passes."""
    report = validation[1][f"{lesson}.ipynb"]
    assert "Success! The notebook does not pass any tests." in report, report


# ---------------------------------------------------------------- the catalogue, autograded

def _test_cells(lesson):
    return functions_of_tests(nbformat.read(solution_path(lesson), as_version=4))


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_every_submission_is_graded(lesson, graded, request):
    """make grade graded every submission of the lesson: none is left "could not be graded"."""
    results = graded[lesson]
    for student, why in results["second_attempts"].items():
        warnings.warn(f"{lesson} / {student}: {why}")   # "graded on a second attempt; the first failed: ..."
    for student, why in results["not_graded"].items():
        message, *log = why.splitlines()
        closing_notes(request.session).append(f"{lesson} / {student} not graded: {message}")
        closing_notes(request.session).extend(f"    {line}" for line in log[-12:])
    assert not results["not_graded"], "\n\n".join(f"{student}: {why}" for student, why
                                                   in results["not_graded"].items())
    assert sorted(results["scores"]) == results["students"]


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
def test_wrong_answers_lose_points_on_their_own_exercise_only(lesson, graded, request):
    """Each catalogued mistake costs points on its function's tests and nowhere else."""
    owners = _test_cells(lesson)
    if catalogue.load(lesson) is None:
        pytest.fail(f"lesson {lesson} has no catalogue of learner answers in tests/catalogue/")
    scores = graded[lesson]["scores"]
    wrong = {s: e for s, e in graded[lesson]["manifest"].items() if e["wrong"]}
    problems, killed, graded_mistakes = [], 0, []
    for student, entry in wrong.items():
        for function, name in entry["wrong"].items():
            graded_mistakes.append(function)
            own = [gid for gid, owner in owners.items() if owner == function]
            assert own, f"{student}: no test cells follow the solution cell {function!r}"
            if any(scores[student][gid][0] < scores[student][gid][1] for gid in own):
                killed += 1
            else:
                problems.append(f"{student}: {function}.{name} kept full marks on {own}")
        # The exercises this notebook answers correctly (or leaves as the solution) stay whole.
        others = {gid: v for gid, v in scores[student].items() if gid in owners
                  and owners[gid] not in entry["wrong"] and v[0] != v[1]}
        if others:
            riding = f" (riding with correct {entry['correct']})" if entry["correct"] else ""
            problems.append(f"{student} ({entry['wrong']}) also lost points elsewhere{riding}: {others}")
    print(f"\n{lesson}: kill rate {killed}/{len(graded_mistakes)} wrong answers caught "
          f"({catalogue.size(lesson, 'WRONG')} in the catalogue, in {len(wrong)} notebooks)")
    full = request.config.getoption("full")
    if full:
        assert len(graded_mistakes) == catalogue.size(lesson, "WRONG"), "a wrong entry was not graded"
    per_function = {f: graded_mistakes.count(f) for f in set(owners.values())}
    least = 3 if full else catalogue.LIMITS["WRONG"]
    assert min(per_function.values()) >= least, f"fewer than {least} wrong answers for a function: {per_function}"
    alone = {f for e in wrong.values() if len(e["wrong"]) == 1 for f in e["wrong"]}
    assert alone == set(owners.values()), f"no mistake of {set(owners.values()) - alone} rides alone with correct answers"
    assert not problems, "\n".join(problems)


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_correct_answers_written_differently_get_full_marks(lesson, graded, request):
    """Loops, einsum, scipy, or code that warns and writes to stderr: full marks all the same."""
    owners = _test_cells(lesson)
    scores = graded[lesson]["scores"]
    graded_entries, lost = 0, {}
    for student, entry in graded[lesson]["manifest"].items():
        for function, name in entry["correct"].items():
            graded_entries += 1
            own = {gid: scores[student][gid] for gid, owner in owners.items() if owner == function}
            dropped = {gid: v for gid, v in own.items() if v[0] != v[1]}
            if not own or dropped:
                lost[f"{function}--{name} (in {student})"] = dropped or "no test cells"
        if not entry["wrong"]:
            dropped = {gid: v for gid, v in scores[student].items() if v[0] != v[1]}
            if dropped:
                lost[student] = dropped
    print(f"\n{lesson}: {graded_entries} correct answers written differently graded "
          f"({catalogue.size(lesson, 'CORRECT')} in the catalogue)")
    if request.config.getoption("full"):
        assert graded_entries >= 2, "fewer than two correct variants in the catalogue"
        assert graded_entries == catalogue.size(lesson, "CORRECT"), "a correct entry was not graded"
    assert graded_entries >= 1, "no correct variant graded"
    assert not lost, lost


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_grading_never_modifies_submitted(lesson, graded):
    """nbgrader autograde reads submitted/ and writes only autograded/."""
    assert graded[lesson]["submitted_unchanged"]


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", [lesson if lesson == lesson_grading.QUICK_HOSTILE_LESSON else
                                    pytest.param(lesson, marks=pytest.mark.full) for lesson in LESSONS])
def test_hostile_submissions_get_their_defined_outcome(lesson, graded):
    """Reaching for the reference, patching the checks, crashing, editing test cells: see README."""
    owners = _test_cells(lesson)
    problems = []
    assert any(s.startswith("hostile--") for s in graded[lesson]["scores"]), "no hostile case was graded"
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
        if notes.get("flags"):
            problems.append(f"{student}: flagged without cause: {notes['flags'][:3]}")
        if case == "kernel_crash" and not notes.get("crashed_cells"):
            problems.append(f"{student}: the crash is not named in grading-notes.json")
        if case == "chatty_correct_with_retyped_test":
            size = len(nbformat.writes(graded[lesson]["autograded"][student]))
            if size > 1_000_000:
                problems.append(f"{student}: its printout was not cut ({size} bytes graded)")
    for student in ("solution",) + tuple(graded[lesson]["manifest"]):
        if graded[lesson]["notes"].get(student, {}).get("flags"):
            problems.append(f"{student}: an honest submission was flagged: {graded[lesson]['notes'][student]['flags'][:3]}")
    assert not problems, "\n".join(problems)


@pytest.mark.nbgrader
@pytest.mark.parametrize("lesson", LESSONS)
def test_feedback_shows_verdicts_but_no_hidden_test(lesson, graded):
    """generate_feedback: each check's docstring and diagnosis, never hidden code, reference code or
    paths, and no "✓ ... passes its visible checks" above a verdict."""
    feedback = graded[lesson]["feedback"]
    assert "solution" in feedback and any(s.startswith("wrong--") for s in feedback), sorted(feedback)
    for student, html in feedback.items():
        assert not leaks.found_in(html, graded[lesson]["root"]), student
        assert "hidden tests run here" in html
    wrong = next(html for student, html in feedback.items() if student.startswith("wrong--"))
    assert "On " in wrong and ("HiddenTestFailure" in wrong or "CheckFailed" in wrong)
    # Under grading the graded cell's visible line prints nothing: no tick above a failed verdict.
    assert "passes its visible checks" not in wrong and "is written" not in wrong
    # The lesson's demonstrations were not run while grading, and the page says so where each was.
    assert "a demonstration of the lesson: not run while grading" in feedback["solution"]
