"""The grading report: ``grading-report/index.html`` (PNG plots) and ``grading-report/summary.md``.

Built from the result model (``results.GradingResult`` of every graded submission: what the
grader saw), the rows of grades.csv (the gradebook's final scores: manual grades and late
penalties included) and the intake's problems: per lesson the autograded figures (maximum, mean
and median over the autograded checks only: written answers, graded by hand, are not in them)
beside the final mean; histograms of autograded points with a bar on each whole score; the pass
rate of every exercise and of every check, the most frequent diagnosed mistakes (the judge's
diagnoses, as data); submissions flagged for review (kernel deaths, hangs, restarts, broken
protocol) and ungradable ones. Built by ``attention_grading.cli.grade``; both files are rendered from
Jinja2 templates (``templates/report``), the page with autoescaping on.
"""
import functools
import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..results import CHECK_AWAITING, CHECK_PASSED, GRADED, NEEDS_MANUAL, NotebookNotes


def pass_rates(results):
    """([(lesson · exercise, rate)], [(lesson · check, rate)]) over the autograded checks."""
    per_check, per_exercise = defaultdict(list), defaultdict(lambda: defaultdict(list))
    for result in results:
        for check in result.checks:
            if check.status == CHECK_AWAITING or check.kind == "written":
                continue
            passed = check.status == CHECK_PASSED
            per_check[f"{result.lesson} · {check.exercise} · {check.grade_id}"].append(passed)
            per_exercise[f"{result.lesson} · {check.exercise}"][result.student].append(passed)
    exercises = [(k, sum(all(p) for p in v.values()) / len(v)) for k, v in per_exercise.items() if v]
    checks = [(k, sum(v) / len(v)) for k, v in per_check.items() if v]
    return exercises, checks


def left_blank(result):
    """Nothing attempted: every check failed with no point and no written answer awaits the
    instructor (written answers left as released are scored 0 by nbgrader), and either the lesson
    has written answers or every failure is the release's ``NotImplementedError``. Such a
    notebook's failures say nothing about a mistake: the report lists it apart."""
    if result.status not in (GRADED, NEEDS_MANUAL) or not result.checks:
        return False
    if any(c.status != "failed" or (c.points or 0.0) > 0 for c in result.checks):
        return False
    auto = [c for c in result.checks if c.kind != "written"]
    return len(auto) < len(result.checks) or all("NotImplementedError" in (c.message or "") for c in auto)


def mistakes(results):
    """Counters of (lesson, check, diagnosis) and of (lesson, check) of failed checks with no
    diagnosis (one entry per check: each submission draws its own cases, so one bug's messages
    differ in their numbers), notebooks left blank left out; {key: [learners]} of both; and
    {(lesson, check): a message}."""
    named, other, who, example = Counter(), Counter(), defaultdict(list), {}
    for result in results:
        if left_blank(result):
            continue
        for check in result.checks:
            if check.status != "failed" or check.kind == "written":
                continue
            where = (result.lesson, f"{check.exercise} · {check.grade_id}")
            if check.diagnosis:
                named[(*where, check.diagnosis)] += 1
                who[(*where, check.diagnosis)].append(result.student)
            elif check.message:
                other[where] += 1
                who[where].append(result.student)
                example.setdefault(where, check.message.splitlines()[0][:160])
    return named, other, who, example


def diagnosed_lines(named, who, limit=15):
    """One line per diagnosed mistake, across learners: how many, where, what, and who."""
    return [f"{count} × {lesson} · {check}: {text} ({', '.join(sorted(set(who[lesson, check, text])))})"
            for (lesson, check, text), count in named.most_common(limit)]


def other_lines(other, who, example, limit=10):
    """One line per check that failed with no diagnosis: how many, who, and one of its messages."""
    return [f"{count} × {lesson} · {check} ({', '.join(sorted(set(who[lesson, check])))}), e.g.: "
            f"{example[lesson, check]}" for (lesson, check), count in other.most_common(limit)]


def written_answers(results):
    """Per lesson, its written answers: how many, graded by hand (their mean of the maximum),
    awaiting the instructor, left as released (scored 0), as the grader last recorded them."""
    lines = []
    for lesson in dict.fromkeys(r.lesson for r in results):
        answers = [c for r in results if r.lesson == lesson and r.status in (GRADED, NEEDS_MANUAL)
                   for c in r.checks if c.kind == "written"]
        if not answers:
            continue
        awaiting = [c for c in answers if c.status == CHECK_AWAITING]
        blank = [c for c in answers if c.status != CHECK_AWAITING and not c.points]
        graded = [c for c in answers if c.status != CHECK_AWAITING and c.points]
        mean = (f", mean {statistics.fmean(c.points for c in graded):.2f} of "
                f"{statistics.fmean(c.max_points for c in graded):g}" if graded else "")
        lines.append(f"{lesson}: {len(answers)} written answer(s): {len(graded)} with points{mean}; "
                     f"{len(awaiting)} awaiting manual grading; {len(blank)} with no point (left as released or "
                     f"graded 0)")
    return lines


def autograded_points(result):
    """(points, maximum) of a submission's autograded checks (written answers left out)."""
    auto = [c for c in result.checks if c.kind != "written"]
    return sum(c.points or 0.0 for c in auto), sum(c.max_points for c in auto)


@dataclass
class LessonFigures:
    lesson: str
    graded: int                    # submissions with a grade in the gradebook
    autograded_max: float
    autograded_mean: float
    autograded_median: float
    final_mean: float              # the gradebook's final scores (grades.csv)
    final_max: float
    ungradable: int
    awaiting: int                  # still needing manual grading (the gradebook says)


def lesson_summary(rows, results, lesson):
    """The figures of one lesson: autograded ones from the grader's results, final ones and the
    counts from grades.csv's ``rows`` (the gradebook)."""
    graded_rows = [r for r in rows if r["lesson"] == lesson and r["status"] in (GRADED, NEEDS_MANUAL)]
    graded = {r["student"] for r in graded_rows}
    auto = [autograded_points(r) for r in results
            if r.lesson == lesson and r.status in (GRADED, NEEDS_MANUAL) and (not rows or r.student in graded)]
    points = [p for p, _ in auto]
    finals = [float(r["score"]) for r in graded_rows]
    return LessonFigures(
        lesson, len(graded_rows), max([top for _, top in auto] or [0.0]),
        statistics.fmean(points) if points else 0.0, statistics.median(points) if points else 0.0,
        statistics.fmean(finals) if finals else 0.0, max([float(r["max_score"]) for r in graded_rows] or [0.0]),
        sum(1 for r in rows if r["lesson"] == lesson and r["status"] == "ungradable"),
        sum(1 for r in graded_rows if r["status"] == NEEDS_MANUAL))


def review_flags(results):
    """["student / lesson: why"] of the submissions an instructor should look at: kernel deaths,
    cells that hung, kernel restarts, kernels that broke the grading protocol."""
    lines = []
    for result in sorted(results, key=lambda r: (r.student, r.lesson)):
        notes = NotebookNotes.from_dict(result.notes or {})
        why = [f.why for f in result.flags[:3]]
        why += [f"the kernel died in cell {c.get('cell')} ({c.get('grade_id') or c.get('starts_with') or 'code'})"
                for c in notes.crashed_cells]
        why += [f"cell {c.get('cell')} ({c.get('grade_id') or c.get('starts_with') or 'code'}) hung and was "
                f"interrupted" for c in notes.hung_cells]
        if notes.kernel_restarts:
            why.append(f"{notes.kernel_restarts} kernel restart(s)")
        if why:
            lines.append(f"{result.student} / {result.lesson}: " + "; ".join(why))
    return lines


def histogram(ax, scores, top):
    """A histogram of ``scores`` (0 to ``top``) with one bar centred on each whole score; returns
    the bars."""
    from matplotlib.ticker import MaxNLocator

    whole = max(1, math.ceil(top))
    _, _, bars = ax.hist(scores, bins=[k - 0.5 for k in range(whole + 2)], color="#4c72b0", edgecolor="white")
    ax.set_xlim(-0.5, whole + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return bars


def _plot_scores(results, lessons, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(4, len(lessons))
    nrows = (len(lessons) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.8 * cols, 3.0 * nrows), squeeze=False)
    for ax, lesson in zip(axes.flat, lessons):
        graded = [r for r in results if r.lesson == lesson and r.status in (GRADED, NEEDS_MANUAL)]
        top = max([autograded_points(r)[1] for r in graded] or [1.0])
        histogram(ax, [autograded_points(r)[0] for r in graded], top)
        ax.set_title(lesson, fontsize=9)
        ax.set_xlabel(f"autograded points (of {top:g})", fontsize=8)
        ax.set_ylabel("learners", fontsize=8)
    for ax in list(axes.flat)[len(lessons):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


def _plot_rates(rates, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _ in rates]
    values = [100 * value for _, value in rates]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(labels) + 1.2))
    ax.barh(range(len(labels)), values, color="#55a868")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("pass rate (%)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


UNSANDBOXED = ("WARNING: graded WITHOUT a sandbox (--unsandboxed): learner code ran with the grader's rights; "
               "these grades cannot be trusted against a hostile submission.")
FIGURES_NOTE = ("Autograded figures count the autograded checks only (written answers are graded by hand); the "
                "final mean is the gradebook's (manual grades and late penalties included), as in grades.csv.")


@functools.lru_cache(maxsize=1)
def _templates():
    """The report's Jinja2 templates (``templates/report``): the page autoescaped, the Markdown as written."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    return Environment(loader=FileSystemLoader(Path(__file__).with_name("templates") / "report"),
                       autoescape=lambda name: name.endswith(".html.j2"), undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def build_report(root, lessons, rows, problems, results, sandboxed=True, out=None):
    """Write the report; return the path of index.html."""
    root = Path(root)
    out = Path(out or root / "grading-report")
    out.mkdir(parents=True, exist_ok=True)
    students = sorted({r["student"] for r in rows})
    lessons = [l for l in lessons if any(r["lesson"] == l and r["status"] != "not submitted" for r in rows)]
    exercise_rates, check_rates = pass_rates(results)
    named, other, who, example = mistakes(results)
    blank = [f"{r.student} / {r.lesson}" for r in sorted(results, key=lambda r: (r.lesson, r.student))
             if left_blank(r)]
    by_lesson = [lesson_summary(rows, results, lesson) for lesson in lessons]

    images = []
    if results:
        _plot_scores(results, lessons, out / "scores.png")
        images.append(("Autograded points per lesson", "scores.png"))
    if exercise_rates:
        _plot_rates(exercise_rates, "Exercises: share of learners passing every check", out / "exercises.png")
        images.append(("Pass rate per exercise", "exercises.png"))
    if check_rates:
        _plot_rates(check_rates, "Checks: share of graded submissions passing", out / "checks.png")
        images.append(("Pass rate per check", "checks.png"))

    ungradable = [f"{p.student} / {p.lesson}: `{p.path}`: {p.message}" for p in problems if p.fatal]
    notes = [f"{p.student or 'submitted/'}: `{p.path}`: {p.message}" for p in problems if not p.fatal]
    service = out / "service-status.txt"        # the grading service's live table, as it last wrote it
    service_table = service.read_text().splitlines() if service.is_file() else []
    context = {
        "sandboxed": sandboxed, "unsandboxed_warning": UNSANDBOXED, "figures_note": FIGURES_NOTE,
        "students": len(students), "lessons": lessons, "by_lesson": by_lesson, "images": images,
        "pass_rates": [("Pass rate per exercise", [f"{k}: {100 * v:.0f}%" for k, v in exercise_rates],
                        "(nothing graded)"),
                       ("Pass rate per check", [f"{k}: {100 * v:.0f}%" for k, v in check_rates], "(nothing graded)")],
        "listings": [
            ("Most frequent diagnosed mistakes", diagnosed_lines(named, who), "(none)"),
            ("Other failures, by check", other_lines(other, who, example), "(none)"),
            ("Left blank (nothing attempted: not among the failures above)", blank, "(none)"),
            ("Written answers", written_answers(results), "(none)"),
            ("Could not be graded", ungradable, "(none)"),
            ("Flagged for review", review_flags(results), "(none)"),
            ("Notes on submissions", notes, "(none)"),
            ("The grading service's last table (make serve-grading)", service_table, "(no service ran on this course)")],
    }
    for name in ("summary.md", "index.html"):
        (out / name).write_text(_templates().get_template(f"{name}.j2").render(context))
    return out / "index.html"
