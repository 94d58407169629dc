"""Does a change to the grader change any grade? `make grade` at two revisions, on one class, compared byte for byte.

A refactoring of the grader (the house of issue 39, a faster path of issue 40) must leave every
grade as it was. This builds one class (``grading_speed.build``: correct, buggy, blank and broken
notebooks of every lesson, the same files for both), gives both copies of the course the same
hidden-case secret (so both draw the same cases), grades each with the grader of its own revision
(``git archive`` of ``instructor/``, ``nbgrader_config.py`` and the lessons; the learner package
and the tools are this environment's), and compares ``grades.csv`` and every check's score in the
gradebooks. Not a timed test.

Usage: python benchmarks/same_grades.py BEFORE [AFTER] [--learners 4] [--lesson ID ...] [--keep]
       (AFTER defaults to the working tree; BEFORE and AFTER are any git revisions)
"""
import argparse
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
import grading_speed  # noqa: E402  (builds the class; its path set-up puts the grader on sys.path)

COURSE_FILES = ("nbgrader_config.py", "instructor", "source", "notebooks", "solutions")
SECRET = "5a" * 32


def checkout(revision, into):
    """The course's files at ``revision`` (the working tree when None) in ``into``."""
    into.mkdir(parents=True)
    if revision is None:
        for name in COURSE_FILES:
            (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, into / name)
        return
    archive = subprocess.run(["git", "archive", "--format=tar", revision, *COURSE_FILES], cwd=REPO,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def grade(root, lessons):
    """`make grade`'s command at that revision (the module moved in the house: either name)."""
    (root / "instructor" / "hidden-cases.secret").write_text(SECRET + "\n")
    for lesson in lessons:
        done = grading_speed.nbgrader(root, "generate_assignment", lesson, "--force")
        if done.returncode:
            sys.exit(done.stderr[-3000:])
    package = root / "instructor" / "grading" / "attention_grading"
    module = "attention_grading.cli.grade" if (package / "cli" / "grade.py").is_file() else "attention_grading.grade"
    done = subprocess.run([sys.executable, "-m", module, "--root", str(root), "--workers", "2", "--no-report"],
                          cwd=root, env=grading_speed.env_for(root), capture_output=True, text=True)
    print(f"  {module}: exit status {done.returncode}")
    return (root / "grades.csv").read_bytes()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after", nargs="?", default=None)
    parser.add_argument("--learners", type=int, default=4)
    parser.add_argument("--lesson", action="append", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the two graded courses")
    args = parser.parse_args(argv)
    from attention_grading.course import lesson_ids

    lessons = args.lesson or lesson_ids(REPO)
    scratch = Path(tempfile.mkdtemp(prefix="attention-same-grades-"))
    tables, scores = {}, {}
    class_ = scratch / "class"
    kinds = grading_speed.build(class_, lessons, args.learners)
    print(f"{args.learners} learners x {len(lessons)} lessons = {len(kinds)} submissions")
    for label, revision in (("before", args.before), ("after", args.after)):
        root = scratch / label
        checkout(revision, root)
        shutil.copytree(class_ / "submitted", root / "submitted")
        print(f"{label}: {revision or 'the working tree'}")
        tables[label] = grade(root, lessons)
        scores[label] = grading_speed.table(root, lessons)
    same_csv = tables["before"] == tables["after"]
    same_scores = scores["before"] == scores["after"] and len(scores["after"]) > 0
    rows = tables["after"].count(b"\n") - 1
    print(f"grades.csv byte-identical: {same_csv} ({len(tables['after'])} bytes, {rows} rows)")
    print(f"every check's score identical: {same_scores} ({len(scores['after'])} checks)")
    if not same_scores:
        keys = set(scores["before"]) | set(scores["after"])
        print("  differences (before, after):", {k: (scores["before"].get(k), scores["after"].get(k))
                                                 for k in sorted(keys) if scores["before"].get(k) != scores["after"].get(k)})
    if args.keep:
        print(f"kept: {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if same_csv and same_scores else 1


if __name__ == "__main__":
    sys.exit(main())
