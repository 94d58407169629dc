"""``make new-lesson NAME=09_example [FUNCTION=centre_rows]``: the files of a new lesson, ready to
release, validate and grade, which the lesson's author then rewrites.

It writes, from the templates in ``scaffold_templates/`` (the same files CONTRIBUTING.md
describes, cell by cell):

- ``source/<id>/<id>.ipynb``: title and goals, the locked setup cell, one graded function (its
  answer cell, a visible check, a hidden-test cell of 3 points), a written answer, a recap;
- ``instructor/grading/attention_grading/hidden/specs/lessonNN_<name>.py``: the function's hidden test
  (cases drawn from the generator it is given, catalogued mistakes);
- ``instructor/reference/attention_reference/lessonNN_<name>.py``: its reference, imported by the
  reference package;
- ``tests/catalogue/lessonNN.py``: wrong answers (with the words that name each mistake) and
  correct ones written differently.

It refuses an id that is not ``NN_name``, a number or a folder that exists, and a function name
another lesson already grades (hidden tests are registered by name).
"""
import argparse
import keyword
import re
import sys
from pathlib import Path

from ..errors import CourseError, exit_status
from ..paths import COURSE_ROOT

TEMPLATES = Path(__file__).with_name("scaffold_templates")
LESSON_ID = re.compile(r"^(\d\d)_([a-z][a-z0-9_]*)$")
FUNCTION = re.compile(r"^[a-z_][a-z0-9_]*$")


class ScaffoldError(CourseError):
    """The lesson cannot be scaffolded as asked (the message says why)."""

    exit_status = 2


def targets(root, lesson, number, name):
    """{template file: where it goes} for lesson ``lesson`` (``NN_name``)."""
    root = Path(root)
    return {
        "lesson.ipynb": root / "source" / lesson / f"{lesson}.ipynb",
        "spec.py": root / "instructor" / "grading" / "attention_grading" / "hidden" / "specs" / f"lesson{number}_{name}.py",
        "reference.py": root / "instructor" / "reference" / "attention_reference" / f"lesson{number}_{name}.py",
        "catalogue.py": root / "tests" / "catalogue" / f"lesson{number}.py",
    }


def _check(root, lesson, function):
    match = LESSON_ID.match(lesson)
    if not match:
        raise ScaffoldError(f"a lesson id is two digits, an underscore and a lower-case name "
                            f"(09_small_gpt), not {lesson!r}")
    number, name = match.groups()
    if not FUNCTION.match(function) or keyword.iskeyword(function):
        raise ScaffoldError(f"{function!r} is not a Python function name")
    taken = [p.name for p in (Path(root) / "source").iterdir() if p.name[:2] == number]
    if taken:
        raise ScaffoldError(f"lesson number {number} is taken by source/{taken[0]}")
    from ..hidden import registry

    if function in registry.load():
        raise ScaffoldError(f"another lesson already grades a function named {function!r} "
                            "(hidden tests are registered by name): choose another name")
    places = targets(root, lesson, number, name)
    existing = [str(path) for path in places.values() if path.exists()]
    if existing:
        raise ScaffoldError(f"{', '.join(existing)} already exist(s): nothing was written")
    return number, name, places


def scaffold(lesson, function="centre_rows", root=None, log=print):
    """Write the new lesson's files (see the module docstring); returns their paths."""
    root = Path(root or COURSE_ROOT)
    number, name, places = _check(root, lesson, function)
    title = name.replace("_", " ").capitalize()
    values = {"LESSON": lesson, "NUMBER": number, "NAME": name, "TITLE": title, "FUNCTION": function}
    for template, path in places.items():
        text = (TEMPLATES / template).read_text()
        for key, value in values.items():
            text = text.replace(f"__{key}__", value)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        log(f"wrote {path.relative_to(root)}")
    package = root / "instructor" / "reference" / "attention_reference" / "__init__.py"
    with open(package, "a") as fh:
        fh.write(f"\nfrom .lesson{number}_{name} import {function}  # noqa: E402,F401  (lesson {number})\n")
    log(f"added {function} to {package.relative_to(root)}")
    log(f"next: write the lesson in source/{lesson}/, then `make release` and `make test`")
    return list(places.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lesson", help="the new lesson's id: NN_name (09_small_gpt)")
    parser.add_argument("--function", default="centre_rows", help="its first graded function's name")
    parser.add_argument("--root", default=None, help="course folder (default: this course)")
    args = parser.parse_args(argv)
    return exit_status(lambda: scaffold(args.lesson, args.function, args.root), "make new-lesson")


if __name__ == "__main__":
    sys.exit(main())
