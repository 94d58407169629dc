"""The grading report: ``grading-report/index.html`` (PNG plots) and ``grading-report/summary.md``.

What it shows: the score distribution per lesson, the pass rate of every exercise and of every
check (grade_id), the most frequent diagnosed mistakes (the judge's "This is exactly what happens
when ..." in failed hidden tests of the autograded notebooks) and the submissions that could not
be graded. Built by ``attention_grading.grade``; also ``python -m attention_grading.report``.
"""
import html
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

DIAGNOSIS = re.compile(r"This is exactly what happens when (.+?)\.(?:\s|$)", re.DOTALL)


def exercises_of(root, lesson):
    """{check grade_id: exercise}: each autograded check belongs to the solution cell before it."""
    path = Path(root) / "source" / lesson / f"{lesson}.ipynb"
    mapping, current = {}, None
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return mapping
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("solution"):
            current = meta.get("grade_id")
        elif cell.get("cell_type") == "code" and meta.get("grade"):
            mapping[meta["grade_id"]] = current or meta["grade_id"]
    return mapping


def check_results(db_url, course_id, lessons):
    """[(lesson, student, grade_id, passed)] for the autograded (code) checks in the gradebook."""
    from nbgrader.api import Gradebook

    out = []
    with Gradebook(db_url, course_id) as gb:
        for lesson in lessons:
            try:
                submissions = gb.assignment_submissions(lesson)
            except Exception:
                continue
            for submission in submissions:
                for nb in submission.notebooks:
                    for grade in nb.grades:
                        if grade.cell.cell_type != "code":
                            continue
                        score = grade.score
                        out.append((lesson, submission.student.id, grade.name,
                                    score is not None and score >= grade.max_score))
    return out


def diagnoses(root, lessons, students):
    """Counter of (lesson, check, diagnosis) and of (lesson, check, first error line)."""
    named, other = Counter(), Counter()
    for lesson in lessons:
        for student in students:
            path = Path(root) / "autograded" / student / lesson / f"{lesson}.ipynb"
            if not path.is_file():
                continue
            try:
                cells = json.loads(path.read_text())["cells"]
            except (OSError, ValueError, KeyError):
                continue
            for cell in cells:
                meta = cell.get("metadata", {}).get("nbgrader", {})
                if not meta.get("grade") or cell.get("cell_type") != "code":
                    continue
                for output in cell.get("outputs", []):
                    if output.get("output_type") != "error":
                        continue
                    text = f"{output.get('evalue', '')}"
                    match = DIAGNOSIS.search(text)
                    if match:
                        named[lesson, meta["grade_id"], " ".join(match.group(1).split())] += 1
                    else:
                        first = (text.strip().splitlines() or [output.get("ename", "error")])[0]
                        other[lesson, meta["grade_id"], f"{output.get('ename', 'Error')}: {first[:160]}"] += 1
    return named, other


def _plot_scores(rows, lessons, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(lessons)
    cols = min(4, n)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols, 2.8 * nrows), squeeze=False)
    for ax, lesson in zip(axes.flat, lessons):
        graded = [r for r in rows if r["lesson"] == lesson and r["status"] in ("graded", "needs manual grading")]
        top = max([r["max_score"] for r in rows if r["lesson"] == lesson] or [1]) or 1
        scores = [r["score"] for r in graded]
        ax.hist(scores, bins=min(20, int(top) + 1), range=(0, top), color="#4c72b0", edgecolor="white")
        ax.set_title(lesson, fontsize=9)
        ax.set_xlabel(f"score (of {top:g})", fontsize=8)
        ax.set_ylabel("learners", fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_rates(rates, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _ in rates]
    values = [100 * value for _, value in rates]
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(labels) + 1.2))
    ax.barh(range(len(labels)), values, color="#55a868")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("pass rate (%)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


class _Flag:
    def __init__(self, student, lesson, path, message):
        self.student, self.lesson, self.path, self.message, self.fatal = student, lesson, path, message, True


def build_report(root, lessons, rows, problems, db_url, course_id, out=None):
    """Write the report; return the path of index.html."""
    root = Path(root)
    out = Path(out or root / "grading-report")
    out.mkdir(parents=True, exist_ok=True)
    students = sorted({r["student"] for r in rows})
    results = check_results(db_url, course_id, lessons)

    per_check = defaultdict(list)
    per_exercise = defaultdict(lambda: defaultdict(list))
    for lesson in lessons:
        owner = exercises_of(root, lesson)
        for (l, student, check, passed) in results:
            if l != lesson:
                continue
            per_check[f"{lesson} · {check}"].append(passed)
            per_exercise[f"{lesson} · {owner.get(check, check)}"][student].append(passed)
    check_rates = [(k, sum(v) / len(v)) for k, v in per_check.items() if v]
    exercise_rates = [(k, sum(all(p) for p in v.values()) / len(v)) for k, v in per_exercise.items() if v]
    named, other = diagnoses(root, lessons, students)

    images = []
    if rows:
        _plot_scores(rows, lessons, out / "scores.png")
        images.append(("Score distribution per lesson", "scores.png"))
    if exercise_rates:
        _plot_rates(exercise_rates, "Exercises: share of learners passing every check", out / "exercises.png")
        images.append(("Pass rate per exercise", "exercises.png"))
    if check_rates:
        _plot_rates(check_rates, "Checks (grade_id): share of graded submissions passing", out / "checks.png")
        images.append(("Pass rate per check", "checks.png"))

    flagged = [p for p in problems if p.fatal]
    # the course's executor may leave grading-notes.json beside a graded notebook (flags)
    for notes_file in sorted((root / "autograded").glob("*/*/grading-notes.json")):
        student, lesson = notes_file.parts[-3], notes_file.parts[-2]
        if lesson not in lessons or student not in students:
            continue
        try:
            content = json.loads(notes_file.read_text())
        except (OSError, ValueError):
            content = notes_file.read_text(errors="replace")
        if isinstance(content, dict):
            flags = content.get("flags") or []
            zeroed = content.get("zeroed_exercises") or []
            if not flags and not zeroed:
                continue
            text = "; ".join(str(f.get("why", f)) if isinstance(f, dict) else str(f) for f in flags[:3])
            text = f"{len(flags)} flag(s): {text}" + (f"; exercises scored 0: {', '.join(zeroed)}" if zeroed else "")
            flagged.append(_Flag(student, lesson, str(notes_file.relative_to(root)),
                                 f"flagged for review: {text[:300]}"))
        elif content:
            text = json.dumps(content, ensure_ascii=False) if not isinstance(content, str) else content
            flagged.append(_Flag(student, lesson, str(notes_file.relative_to(root)),
                                 f"flagged for review: {text[:300]}"))
    notes = [p for p in problems if not p.fatal]
    by_lesson = []
    for lesson in lessons:
        graded = [r for r in rows if r["lesson"] == lesson and r["status"] in ("graded", "needs manual grading")]
        scores = sorted(r["score"] for r in graded)
        top = max([r["max_score"] for r in rows if r["lesson"] == lesson] or [0])
        mean = sum(scores) / len(scores) if scores else 0.0
        median = scores[len(scores) // 2] if scores else 0.0
        by_lesson.append((lesson, len(graded), top, mean, median,
                          sum(1 for r in rows if r["lesson"] == lesson and r["status"] == "ungradable")))

    md = ["# Grading report", "", f"{len(students)} learner(s), {len(lessons)} lesson(s).", "",
          "| lesson | graded | max | mean | median | ungradable |", "|---|---|---|---|---|---|"]
    md += [f"| {l} | {n} | {t:g} | {m:.2f} | {d:g} | {u} |" for l, n, t, m, d, u in by_lesson]
    md += ["", "## Pass rate per exercise", ""]
    md += [f"- {k}: {100 * v:.0f}%" for k, v in exercise_rates] or ["- (nothing graded)"]
    md += ["", "## Pass rate per check", ""]
    md += [f"- {k}: {100 * v:.0f}%" for k, v in check_rates] or ["- (nothing graded)"]
    md += ["", "## Most frequent diagnosed mistakes", ""]
    md += [f"- {count} × {lesson} · {check}: {text}" for (lesson, check, text), count in named.most_common(15)] \
        or ["- (none)"]
    md += ["", "## Other failure messages", ""]
    md += [f"- {count} × {lesson} · {check}: {text}" for (lesson, check, text), count in other.most_common(10)] \
        or ["- (none)"]
    md += ["", "## Could not be graded", ""]
    md += [f"- {p.student} / {p.lesson}: `{p.path}`: {p.message}" for p in flagged] or ["- (none)"]
    md += ["", "## Notes on submissions", ""]
    md += [f"- {p.student or 'submitted/'}: `{p.path}`: {p.message}" for p in notes] or ["- (none)"]
    (out / "summary.md").write_text("\n".join(md) + "\n")

    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Grading report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}"
             "th{background:#eee}</style></head><body><h1>Grading report</h1>",
             f"<p>{len(students)} learner(s), {len(lessons)} lesson(s).</p>",
             "<table><tr><th>lesson</th><th>graded</th><th>max</th><th>mean</th><th>median</th>"
             "<th>ungradable</th></tr>"]
    parts += [f"<tr><td>{esc(l)}</td><td>{n}</td><td>{t:g}</td><td>{m:.2f}</td><td>{d:g}</td><td>{u}</td></tr>"
              for l, n, t, m, d, u in by_lesson]
    parts.append("</table>")
    for title, name in images:
        parts.append(f"<h2>{esc(title)}</h2><img src='{name}' alt='{esc(title)}'>")

    def listing(title, items):
        parts.append(f"<h2>{esc(title)}</h2><ul>")
        parts.extend(f"<li>{esc(item)}</li>" for item in items)
        if not items:
            parts.append("<li>(none)</li>")
        parts.append("</ul>")

    listing("Most frequent diagnosed mistakes",
            [f"{c} × {l} · {k}: {t}" for (l, k, t), c in named.most_common(15)])
    listing("Other failure messages", [f"{c} × {l} · {k}: {t}" for (l, k, t), c in other.most_common(10)])
    listing("Could not be graded", [f"{p.student} / {p.lesson}: {p.path}: {p.message}" for p in flagged])
    listing("Notes on submissions", [f"{p.student or 'submitted/'}: {p.path}: {p.message}" for p in notes])
    parts.append("</body></html>")
    (out / "index.html").write_text("\n".join(parts))
    return out / "index.html"


def main(argv=None):
    """Rebuild the report from grades.csv and the gradebook (after ``attention_grading.grade``)."""
    import argparse
    import csv

    from .course import lesson_ids, load_config
    from .grade import scan
    from .paths import COURSE_ROOT

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--root", default=None)
    args = parser.parse_args(argv)
    root = Path(args.root or COURSE_ROOT).resolve()
    config = load_config(root)
    with open(root / "grades.csv") as fh:
        rows = [dict(r, score=float(r["score"]), max_score=float(r["max_score"])) for r in csv.DictReader(fh)]
    lessons = [l for l in lesson_ids(root) if any(r["lesson"] == l for r in rows)]
    _, problems = scan(root, lessons)
    print(build_report(root, lessons, rows, problems, config.CourseDirectory.db_url,
                       config.CourseDirectory.course_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
