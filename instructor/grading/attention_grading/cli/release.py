"""``make release``: regenerate notebooks/ (learners) and solutions/ from source/.

Usage: python -m attention_grading.cli.release [--root DIR] [LESSON ...]
"""
import argparse
import logging
import sys
from pathlib import Path

from ..course import environment_tools_on_path, lesson_ids, load_config
from ..errors import GradebookError, UnnamedHiddenTest, exit_status
from ..paths import COURSE_ROOT


def check_hidden_tests_named(root, lesson):
    """Every hidden-test cell of the lesson's source notebook names, in its metadata
    (``attention_course.spec``), a hidden test a lesson folder registers: else
    ``UnnamedHiddenTest`` says which, before anything is released."""
    import nbformat

    from ..cells import CellPlan
    from ..hidden import registry

    nb = nbformat.read(Path(root) / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    named = CellPlan(nb.cells).hidden                 # raises for a hidden block that names none
    unknown = sorted(set(named.values()) - set(registry.load()))
    if unknown:
        raise UnnamedHiddenTest(f"source/{lesson}: its hidden-test cells name hidden tests that no lesson folder's "
                                f"spec.py registers: {', '.join(unknown)}")
    return named


def release(root=None, lessons=None, log=print):
    """Run nbgrader's generate_assignment and generate_solution for each lesson."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.converters import GenerateSolution

    root = Path(root or COURSE_ROOT).resolve()
    config = load_config(root)
    config.CourseDirectory.root = str(root)
    api = NbGraderAPI(config=config)
    api.log.setLevel(logging.WARNING)
    lessons = lessons or lesson_ids(root)
    for lesson in lessons:
        check_hidden_tests_named(root, lesson)
        result = api.generate_assignment(lesson, force=True)
        if not result["success"]:
            raise GradebookError(f"generate_assignment failed for {lesson}:\n{result['log']}{result.get('error', '')}")
        api.coursedir.assignment_id = lesson
        solution = GenerateSolution(coursedir=api.coursedir, parent=api, force=True)
        solution.log.setLevel(logging.WARNING)
        solution.start()
        log(f"released {lesson}: notebooks/{lesson}/ and solutions/{lesson}/")
    return lessons


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson ids (default: every lesson in source/)")
    parser.add_argument("--root", default=None, help="course folder (default: this course)")
    args = parser.parse_args(argv)
    environment_tools_on_path()
    return exit_status(lambda: release(args.root, args.lessons or None), "make release")


if __name__ == "__main__":
    sys.exit(main())
