"""Catalogues of learner answers, one module per lesson (``instructor/lessons/<id>/catalogue.py``,
in the lesson's folder beside its spec and prose claims), used by the grading tests.

Each module defines ``WRONG`` and ``CORRECT``: ``{function name: {entry name: source}}``.
Every source replaces the solution cell of that function (it must start with the ``def``).
A WRONG entry is a mistake learners really make and must lose points on that function's
tests only; a CORRECT entry is written differently from the reference and must get full marks.

``DIAGNOSES`` gives, for every WRONG entry, the words the *visible* check's message must contain
to name the true mistake (tests/test_visible_checks.py measures how many are caught and named).
``REQUIREMENTS`` lists each requirement an exercise states, with the hidden case that tests it and
a WRONG entry that breaks it (tests/test_requirements.py). ``VISIBLE_COMPLAINTS`` (optional) lists CORRECT entries that a visible check rightly rejects
although the hidden tests give them full marks, each with the reason.

``make test-all`` (the full tier) grades every entry through real nbgrader (tests/test_lessons.py;
``packed`` puts several entries in one notebook: the first wrong answer of each function rides
with correct answers of the lesson's other functions, the rest go one of each function to a
notebook); ``make test`` (the quick tier) grades a sample: the first ``LIMITS`` entries of each
function, always including a correct answer that warns or writes to stderr.
"""
import importlib.util
import sys
from pathlib import Path

#: One folder a lesson (PrairieLearn's question folder): spec.py, catalogue.py, claims.py.
LESSONS_DIR = Path(__file__).resolve().parents[2] / "instructor" / "lessons"

#: The quick tier's sample: one wrong and one correct answer per function, so that every exercise
#: is graded both ways and every lesson's run stays a few notebooks (the full tier: every entry).
LIMITS = {"WRONG": 1, "CORRECT": 1}
#: In a module's REQUIREMENTS, the measurements a hidden test judges after every case passed.
MEASUREMENTS = "the measurements made after every case"
NOISY = ("warn", "stderr", "chatty", "noisy")


def lesson_module(lesson_id, part, package=__name__):
    """``instructor/lessons/<lesson_id>/<part>.py`` imported once as ``<package>.lesson<NN>``
    (``catalogue.lesson01``), or None when the lesson's folder has none yet."""
    name = f"{package}.lesson{lesson_id.split('_', 1)[0]}"
    if name in sys.modules:
        return sys.modules[name]
    path = LESSONS_DIR / lesson_id / f"{part}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load(lesson_id):
    """The catalogue module of a lesson, or None when it has none yet."""
    return lesson_module(lesson_id, "catalogue")


def entries(lesson_id, kind, sampled=False):
    """``{function: {name: source}}`` of one kind: all of it, or the first ``limits`` when ``sampled``."""
    module = load(lesson_id)
    table = getattr(module, kind, {}) if module else {}
    if not sampled:
        return table
    trimmed = {}
    for function, variants in table.items():
        names = list(variants)
        keep = names[: LIMITS[kind]]
        noisy = [n for n in names if any(word in n for word in NOISY)]
        if noisy and not set(noisy) & set(keep):
            keep[-1] = noisy[0]
        trimmed[function] = {name: variants[name] for name in keep}
    return trimmed


def diagnoses(lesson_id):
    """``{function: {WRONG entry: words naming its mistake}}`` of a lesson."""
    module = load(lesson_id)
    return getattr(module, "DIAGNOSES", {}) if module else {}


def visible_complaints(lesson_id):
    """``{function: {CORRECT entry: why a visible check rejects it}}`` of a lesson."""
    module = load(lesson_id)
    return getattr(module, "VISIBLE_COMPLAINTS", {}) if module else {}


def size(lesson_id, kind):
    """How many entries of one kind the catalogue holds, trimmed or not."""
    module = load(lesson_id)
    return sum(len(v) for v in (getattr(module, kind, {}) if module else {}).values())


def packed(lesson_id, functions, sampled=False):
    """The catalogue of a lesson as submissions, several entries to a notebook.

    The first WRONG entry of each function gets a submission of its own, riding with the next
    unused CORRECT entry of every other function (``functions``: the lesson's graded functions, in
    notebook order): it must lose points on its own exercise and keep full marks everywhere else,
    so a mistake that reached another exercise would show. The quick tier's sample is exactly
    these. The other WRONG entries (the full tier) go one of each function to a submission, with
    CORRECT entries for the functions whose mistakes are used up: the grader judges each exercise on
    its own (a later test calls the reference's stand-ins for earlier functions, README), so each
    must lose points on its own exercise, and the correct riders keep theirs. CORRECT entries left
    over are packed one per function. Returns a list of dicts: ``id`` (a student id), ``wrong``
    (``{function: name}``, empty for none), ``correct`` ``{function: name}`` and ``sources``
    ``{function: source}``.
    """
    wrong = entries(lesson_id, "WRONG", sampled)
    correct = entries(lesson_id, "CORRECT", sampled)
    mistakes = {f: list(wrong.get(f, {}).items()) for f in functions}
    queues = {f: list(correct.get(f, {}).items()) for f in functions}
    unknown = (set(wrong) | set(correct)) - set(functions)
    if unknown:
        raise ValueError(f"catalogue of {lesson_id} names functions the lesson does not grade: {sorted(unknown)}")

    def submission(mistaken):
        entry = {"wrong": {}, "correct": {}, "sources": {}}
        for function in functions:
            if function in mistaken:
                name, source = mistakes[function].pop(0)
                entry["wrong"][function], entry["sources"][function] = name, source
            elif queues[function]:
                name, source = queues[function].pop(0)
                entry["correct"][function], entry["sources"][function] = name, source
        if len(entry["wrong"]) == 1:
            ((function, name),) = entry["wrong"].items()
            entry["id"] = f"wrong--{function}--{name}"
        else:
            entry["id"] = f"{'wrong' if mistaken else 'correct'}--{len(submissions):03d}"
        submissions.append(entry)

    submissions = []
    for function in functions:
        if mistakes[function]:
            submission({function})
    while any(mistakes.values()):
        submission({f for f in functions if mistakes[f]})
    while any(queues.values()):
        submission(set())
    return submissions


def requirements(lesson_id):
    """``{function: [(words of the lesson, case label, WRONG entry)]}`` of a lesson."""
    module = load(lesson_id)
    return getattr(module, "REQUIREMENTS", {}) if module else {}
