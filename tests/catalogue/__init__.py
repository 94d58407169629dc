"""Catalogues of learner answers, one module per lesson, used by the grading tests.

Each module defines ``WRONG`` and ``CORRECT``: ``{function name: {entry name: source}}``.
Every source replaces the solution cell of that function (it must start with the ``def``).
A WRONG entry is a mistake learners really make and must lose points on that function's
tests only; a CORRECT entry is written differently from the reference and must get full marks.

``DIAGNOSES`` gives, for every WRONG entry, the words the *visible* check's message must contain
to name the true mistake (tests/test_visible_checks.py measures how many are caught and named).
``REQUIREMENTS`` lists each requirement an exercise states, with the hidden case that tests it and
a WRONG entry that breaks it (tests/test_requirements.py). ``VISIBLE_COMPLAINTS`` (optional) lists CORRECT entries that a visible check rightly rejects
although the hidden tests give them full marks, each with the reason.

``make test-all`` (the full tier) grades every entry through real nbgrader (tests/test_lessons.py
packs each wrong answer with correct answers of the lesson's other functions, so one notebook
checks several entries); ``make test`` (the quick tier) grades a sample: the first ``LIMITS``
entries of each function, always including a correct answer that warns or writes to stderr.
"""
import importlib
import pkgutil

#: The quick tier's sample: one wrong and one correct answer per function, so that every exercise
#: is graded both ways and every lesson's run stays a few notebooks (the full tier: every entry).
LIMITS = {"WRONG": 1, "CORRECT": 1}
#: In a module's REQUIREMENTS, the measurements a hidden test judges after every case passed.
MEASUREMENTS = "the measurements made after every case"
NOISY = ("warn", "stderr", "chatty", "noisy")


def load(lesson_id):
    """The catalogue module of a lesson, or None when it has none yet."""
    name = "lesson" + lesson_id.split("_", 1)[0]
    if not any(m.name == name for m in pkgutil.iter_modules(__path__)):
        return None
    return importlib.import_module(f"{__name__}.{name}")


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

    Each WRONG entry gets its own submission, and rides with the next unused CORRECT entry of
    every other function (``functions``: the lesson's graded functions, in notebook order), so
    it must lose points on its own exercise and keep full marks everywhere else. CORRECT
    entries left over are packed one per function. Returns a list of dicts: ``id`` (a student
    id), ``wrong`` (``(function, name)`` or None), ``correct`` ``{function: name}`` and
    ``sources`` ``{function: source}``.
    """
    wrong = entries(lesson_id, "WRONG", sampled)
    correct = entries(lesson_id, "CORRECT", sampled)
    queues = {f: list(correct.get(f, {}).items()) for f in functions}
    unknown = (set(wrong) | set(correct)) - set(functions)
    if unknown:
        raise ValueError(f"catalogue of {lesson_id} names functions the lesson does not grade: {sorted(unknown)}")

    def riders(exclude):
        correct, sources = {}, {}
        for function in functions:
            if function != exclude and queues[function]:
                name, source = queues[function].pop(0)
                correct[function], sources[function] = name, source
        return correct, sources

    submissions = []
    for function in functions:
        for name, source in wrong.get(function, {}).items():
            correct, sources = riders(function)
            submissions.append({"id": f"wrong--{function}--{name}", "wrong": (function, name),
                                "correct": correct, "sources": {function: source, **sources}})
    while any(queues.values()):
        correct, sources = riders(None)
        submissions.append({"id": f"correct--{len(submissions):03d}", "wrong": None,
                            "correct": correct, "sources": sources})
    return submissions


def requirements(lesson_id):
    """``{function: [(words of the lesson, case label, WRONG entry)]}`` of a lesson."""
    module = load(lesson_id)
    return getattr(module, "REQUIREMENTS", {}) if module else {}
