"""One submission autograded in a scratch folder, with no gradebook: the course's nbgrader steps
applied to its notebook as nbgrader's own ``Autograde`` applies them.

``Autograde`` does three things: it lays the submission out (its files, then the lesson's own
files from ``source/``, in ``autograded/``), runs the notebook through two lists of steps
(``Autograde.sanitize_preprocessors``, then ``Autograde.autograde_preprocessors`` under
``NBGRADER_EXECUTION=autograde``), and writes the gradebook along the way. Here the first two
happen exactly so, with nbconvert's ``NotebookExporter`` as nbgrader uses it and the lists the
course's configuration names; the gradebook is left to the store: the steps that read the lesson
from a gradebook read it from the job instead (``resources[LESSON_KEY]``, ``store.lessons``),
and the steps that write one (``SaveAutoGrades`` and ``AssignLatePenalties``, and the course's
subclasses of them) are the store's (``store.grades.apply``). What comes out is data: the
autograded folder's files and the notes (``resources[NOTES_KEY]``: every verdict).
"""
import os
import shutil
from pathlib import Path

import nbformat

from ..results import LESSON_KEY, NOTES_KEY


def gradebook_steps():
    """The steps that write a gradebook: never in a job (``store.grades.apply`` does their work)."""
    from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

    return (SaveAutoGrades, AssignLatePenalties)


def steps(config, name):
    """The classes of ``Autograde.<name>`` (the course's list, else nbgrader's default)."""
    from nbgrader.converters import Autograde
    from traitlets.utils.importstring import import_item

    listed = config.Autograde[name] if name in config.Autograde else Autograde.class_traits()[name].default()
    return [import_item(step) if isinstance(step, str) else step for step in listed]


def lay_out(submitted, autograded, lesson_files, config):
    """``autograded`` as ``Autograde`` lays it out: every file handed in but notebooks and what the
    course ignores, then the lesson's own files over them (``Autograde.exclude_overwriting`` kept)."""
    from nbgrader.utils import find_all_files

    lesson = autograded.name
    ignore = list(config.CourseDirectory.get("ignore", [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]))
    autograded.mkdir(parents=True, exist_ok=True)
    for path in find_all_files(str(submitted), ignore + ["*.ipynb"]):
        target = autograded / os.path.relpath(path, submitted)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    kept = set(config.Autograde.get("exclude_overwriting", {}).get(lesson, []))
    for name, data in lesson_files.items():
        if name in kept:
            continue
        target = autograded / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.unlink()
        target.write_bytes(data)


def _resources(student, lesson, folder, book):
    return {"unique_key": lesson, "output_files_dir": f"{lesson}_files",
            "nbgrader": {"student": student, "assignment": lesson, "notebook": lesson, "db_url": None},
            "metadata": {"name": lesson, "path": str(folder)}, LESSON_KEY: book}


def _run(step_classes, text, resources, config, log):
    """The notebook ``text`` through the steps, as nbgrader's exporter runs them: (text, resources)."""
    from nbconvert.exporters import NotebookExporter

    exporter = NotebookExporter(config=config)
    exporter.log = log
    for step in step_classes:
        exporter.register_preprocessor(step)
    return exporter.from_notebook_node(nbformat.reads(text, as_version=4), resources)


def autograde(text, student, lesson, scratch, files, lesson_files, book, config, log):
    """Autograde the notebook ``text`` of ``student``'s ``lesson`` (``files``: everything handed in
    beside it, ``lesson_files``: the lesson's own files, ``book``: its cells as the gradebook
    holds them) in ``scratch``; returns ({file: bytes} of the autograded folder, the notes)."""
    import copy

    from nbgrader.utils import setenv

    config = copy.deepcopy(config)
    config.Exporter.default_preprocessors = []            # as nbgrader's converters have it
    submitted = Path(scratch) / "submitted" / student / lesson
    autograded = Path(scratch) / "autograded" / student / lesson
    for name, data in files.items():
        (submitted / name).parent.mkdir(parents=True, exist_ok=True)
        (submitted / name).write_bytes(data)
    lay_out(submitted, autograded, lesson_files, config)
    sanitized, _ = _run(steps(config, "sanitize_preprocessors"), text,
                        _resources(student, lesson, submitted, book), config, log)
    (autograded / f"{lesson}.ipynb").write_text(sanitized, encoding="utf-8")
    skipped = gradebook_steps()
    graded = [step for step in steps(config, "autograde_preprocessors") if not issubclass(step, skipped)]
    with setenv(NBGRADER_EXECUTION="autograde"):
        output, resources = _run(graded, sanitized, _resources(student, lesson, autograded, book), config, log)
    (autograded / f"{lesson}.ipynb").write_text(output, encoding="utf-8")
    out = {str(p.relative_to(autograded)): p.read_bytes() for p in sorted(autograded.rglob("*")) if p.is_file()}
    return out, resources.get(NOTES_KEY) or {}
