"""``make new-lesson NAME=09_example [FUNCTION=centre_rows]``: the files of a new lesson, ready to
release, validate and grade, which the lesson's author then rewrites.

It writes, from the templates in ``scaffold_templates/`` (the same files CONTRIBUTING.md
describes, cell by cell), the lesson's notebook and its folder, and nothing else but the site's
page of it:

- ``source/<id>/<id>.ipynb``: title and goals, the locked setup cell, one graded function (its
  answer cell, a visible check, a hidden-test cell of 3 points whose nbgrader cell names its
  hidden test in ``metadata.attention_course.spec``), a written answer, a recap;
- ``instructor/lessons/<id>/`` (the lesson's folder, PrairieLearn's question folder):
  ``spec.py``, the function's hidden test (cases drawn from the generator it is given,
  catalogued mistakes), found by ``hidden/specs`` by its folder; ``reference.py``, its reference,
  which the reference package finds by its folder too; ``catalogue.py``, wrong answers (with the
  words that name each mistake) and correct ones written differently; ``claims.py``, the
  lesson's claims in words and the values that back them (none yet);
- ``docs/lessons/<id>.lesson`` (the site's page of the lesson: the file holds its id) and the
  lesson's row in the table of ``docs/lessons/index.md``.

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
    folder = root / "instructor" / "lessons" / lesson
    places = {
        "lesson.ipynb": root / "source" / lesson / f"{lesson}.ipynb",
        "spec.py": folder / "spec.py",
        "reference.py": folder / "reference.py",
        "catalogue.py": folder / "catalogue.py",
        "claims.py": folder / "claims.py",
    }
    if (root / "docs" / "lessons" / "index.md").is_file():         # a course with the site
        places["page.lesson"] = root / "docs" / "lessons" / f"{lesson}.lesson"
    return places


def add_to_the_lessons_table(root, lesson, function, title):
    """The lesson's row, after the last row of the table in ``docs/lessons/index.md``."""
    index = Path(root) / "docs" / "lessons" / "index.md"
    lines = index.read_text().splitlines(keepends=True)
    rows = [k for k, line in enumerate(lines) if line.startswith("| ") and ".lesson)" in line]
    if not rows:
        raise ScaffoldError(f"{index} has no table of lessons to add {lesson} to")
    row = (f"| {lesson[:2]} | [{lesson}]({lesson}.lesson): {title.lower()} | `{function}` | "
           f"[notebook](../../notebooks/{lesson}/{lesson}.ipynb) |\n")
    lines.insert(rows[-1] + 1, row)
    index.write_text("".join(lines))
    return index


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
    existing = [str(path) for path in [*places.values(), places["spec.py"].parent] if path.exists()]
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
    if "page.lesson" in places:
        index = add_to_the_lessons_table(root, lesson, function, title)
        log(f"added {lesson} to {index.relative_to(root)}")
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
