"""Shared by the grading tests: a temporary copy of the course and a class of submissions."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import conftest

REPO = Path(__file__).resolve().parents[1]
LESSON = "01_context_vectors"
#: Execute.timeout of the catalogue's runs (30 s in the course's config): every solution cell
#: takes well under that here, and the infinite-loop submissions wait less.
CELL_TIMEOUT = 10

# instructor/lessons/01_context_vectors/catalogue.py's WRONG["contextualize"]["no_scale"]: forgets the 1/sqrt(d)
BUGGY_CONTEXTUALIZE = '''def contextualize(X):
    X = np.asarray(X, dtype=float)
    A = softmax(X @ np.swapaxes(X, -1, -2), axis=-1)
    return A @ X, A
'''


def copy_course(dest):
    """The parts of the course that grading reads, lesson 01 only (fast and stable)."""
    return conftest.copy_course(dest, lessons=[LESSON])


# Kills the grading worker that runs its kernel: the nearest ancestor that is a fork of
# multiprocessing's forkserver (the kernel's parent is the kernel zygote or the worker itself).
KILLS_ITS_GRADER = '''import os, signal
pid = os.getppid()
while pid > 1:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        if b"forkserver" in f.read():
            os.kill(pid, signal.SIGKILL)
            break
    with open(f"/proc/{pid}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
'''


def notebook(kind):
    """Text of a lesson-01 notebook: 'correct' (solution), 'blank' (release), 'buggy', 'crash'
    (the kernel exits) or 'kills_grader' (the kernel kills the grading process)."""
    if kind == "correct":
        return (REPO / "solutions" / LESSON / f"{LESSON}.ipynb").read_text()
    if kind == "blank":
        return (REPO / "notebooks" / LESSON / f"{LESSON}.ipynb").read_text()
    nb = json.loads(notebook("correct"))
    target, source = {"buggy": ("contextualize", BUGGY_CONTEXTUALIZE),
                      "crash": ("softmax", "import os\nos._exit(1)\n"),
                      "kills_grader": ("softmax", KILLS_ITS_GRADER)}[kind]
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == target:
            cell["source"] = source
    return json.dumps(nb, indent=1)


def submit(root, student, text, name=f"{LESSON}.ipynb", timestamp="2026-01-10 12:00:00.000000 UTC"):
    folder = Path(root) / "submitted" / student / LESSON
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    if timestamp:
        (folder / "timestamp.txt").write_text(timestamp)
    return folder


def _xattrs(path):
    try:
        return sorted((name, os.getxattr(path, name, follow_symlinks=False))
                      for name in os.listxattr(path, follow_symlinks=False))
    except OSError:
        return []


def tree_hash(folder):
    """One hash of every path under ``folder``: its bytes, mode, owner, extended attributes and
    times (mtime and ctime: Linux sets the ctime on every write and metadata change, and no
    process can set it back). Python's own byte-code caches, written by the grader's imports,
    aside; a folder's own times move whenever an entry is added, so folders count by mode, owner
    and attributes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if "__pycache__" not in p.parts):
        stat = path.lstat()
        digest.update(f"{path.relative_to(folder)}|{stat.st_mode}|{stat.st_uid}|{stat.st_gid}|"
                      f"{_xattrs(path)}".encode())
        if path.is_dir():
            continue
        digest.update(f"|{stat.st_mtime_ns}|{stat.st_ctime_ns}".encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def metadata_snapshot(folder):
    """{path: state} of ``folder`` and everything under it, without reading file contents (for
    large trees such as the course environment): files by (size, mode, owner, ctime, extended
    attributes), folders by (mode, owner, extended attributes); any write or metadata change
    shows in a file's ctime. Byte-code caches aside."""
    state = {}
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for path, is_dir in [(top, True), *((os.path.join(top, n), False) for n in files)]:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            state[path] = ((st.st_mode, st.st_uid, st.st_gid, _xattrs(path)) if is_dir else
                           (st.st_size, st.st_mode, st.st_uid, st.st_gid, st.st_ctime_ns, _xattrs(path)))
    return state


def snapshot_changes(before, after):
    """The paths whose state differs between two ``metadata_snapshot``s (new and gone ones too)."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def env_for(root, **extra):
    """``conftest.course_env(root)`` with ``extra`` variables."""
    return {**conftest.course_env(root), **extra}


def run_grade(root, *args, timeout=600, **env):
    return subprocess.run([sys.executable, "-m", "attention_grading.cli.grade", "--root", str(root), *args],
                          cwd=root, env=env_for(root, **env), capture_output=True, text=True, timeout=timeout)


def run_stock(root, lesson=LESSON, **env):
    """Stock nbgrader: generate_assignment (puts the lesson in the gradebook), then autograde."""
    for command in (["generate_assignment", lesson, "--force"], ["autograde", lesson]):
        done = subprocess.run([sys.executable, "-m", "nbgrader", *command], cwd=root,
                              env=env_for(root, **env), capture_output=True, text=True, timeout=1200)
        if command[0] == "generate_assignment":
            assert done.returncode == 0, done.stderr[-3000:]
    return done


def grade_table(db_url, lesson=LESSON):
    """{(student, notebook, grade_id): (auto_score, needs_manual_grade)} of a gradebook."""
    from nbgrader.api import Gradebook

    table = {}
    with Gradebook(db_url, "attention") as gb:
        for submission in gb.assignment_submissions(lesson):
            for nb in submission.notebooks:
                for grade in nb.grades:
                    table[submission.student.id, nb.name, grade.name] = (grade.auto_score,
                                                                         grade.needs_manual_grade)
    return table


def lesson_points(root, lesson=LESSON):
    """(autograded points, all points, number of grade cells) of the lesson's source notebook."""
    nb = json.loads((Path(root) / "source" / lesson / f"{lesson}.ipynb").read_text())
    cells = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    auto = sum(c["metadata"]["nbgrader"].get("points", 0) for c in cells if c["cell_type"] == "code")
    total = sum(c["metadata"]["nbgrader"].get("points", 0) for c in cells)
    return float(auto), float(total), len(cells)
