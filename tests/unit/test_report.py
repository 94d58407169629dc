"""report: a class whose figures are known. Autograded maxima and means over autograded checks
only (a blank written answer is not an autograded zero), the final mean from grades.csv, bars on
whole scores, kernel deaths, hangs and restarts flagged for review."""
from attention_grading.store import report
from attention_grading.results import CheckResult, GradingResult, NotebookNotes

LESSON = "01"


def result(student, hidden_points, written=None, notes=None, status="graded"):
    """Two hidden checks of 3 points (``hidden_points``) and a written answer of 2 (``written``:
    its points, or None while it awaits the instructor; 0.0 when left blank)."""
    checks = [CheckResult(f"check_{i}", f"f{i}", "hidden", 3.0, p, "passed" if p == 3 else "failed")
              for i, p in enumerate(hidden_points)]
    checks.append(CheckResult("answer", None, "written", 2.0, written,
                              "awaiting manual grading" if written is None else "failed"))
    return GradingResult(student, LESSON, status, checks=checks, notes=(notes or NotebookNotes()).as_dict())


def rows(scores):
    return [{"student": s, "lesson": LESSON, "score": v, "max_score": 8.0,
             "status": "needs manual grading" if s == "bob" else "graded"} for s, v in scores.items()]


CLASS = [result("alice", [3, 3], None), result("bob", [3, 0], 0.0),
         result("carol", [0, 0], 0.0, NotebookNotes(crashed_cells=[{"cell": 7, "grade_id": "check_0",
                                                                     "starts_with": "x"}], kernel_restarts=2)),
         result("dave", [3, 3], 2.0, NotebookNotes(hung_cells=[{"cell": 9, "grade_id": None,
                                                                 "starts_with": "while True:"}]))]
FINAL = {"alice": 6.0, "bob": 3.0, "carol": 0.0, "dave": 7.0}


def test_figures_of_a_known_class():
    """Autograded max 6 (not 8), mean (6+3+0+6)/4 = 3.75, median 4.5; final mean (6+3+0+7)/4;
    one awaiting manual grading (the gradebook's word, not the grader's)."""
    figures = report.lesson_summary(rows(FINAL), CLASS, LESSON)
    assert (figures.graded, figures.autograded_max) == (4, 6.0)
    assert (figures.autograded_mean, figures.autograded_median) == (3.75, 4.5)
    assert figures.final_mean == 4.0 and figures.final_max == 8.0
    assert (figures.ungradable, figures.awaiting) == (0, 1)


def test_flagged_for_review_names_kernel_deaths_hangs_and_restarts():
    """carol's dead kernel and restarts, dave's hung cell; nobody else."""
    lines = report.review_flags(CLASS)
    assert lines == ["carol / 01: the kernel died in cell 7 (check_0); 2 kernel restart(s)",
                     "dave / 01: cell 9 (while True:) hung and was interrupted"]


def test_histogram_bars_sit_on_whole_scores():
    """Each bar is one unit wide and centred on a whole score from 0 to the maximum."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    bars = report.histogram(ax, [6, 3, 0, 6], 6.0)
    centres = [bar.get_x() + bar.get_width() / 2 for bar in bars]
    assert centres == [float(k) for k in range(7)] and {bar.get_width() for bar in bars} == {1.0}
    assert [bar.get_height() for bar in bars] == [1, 0, 0, 1, 0, 0, 2]
    plt.close(fig)


def test_the_summary_table(tmp_path):
    """summary.md's lesson line holds those figures, and carol under "Flagged for review"."""
    report.build_report(tmp_path, [LESSON], rows(FINAL), [], CLASS, out=tmp_path / "report")
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "| 01 | 4 | 6 | 3.75 | 4.5 | 4.00 | 8 | 0 | 1 |" in summary
    assert "- carol / 01: the kernel died in cell 7" in summary.split("## Flagged for review", 1)[1]


def test_the_page_holds_the_figures_and_shows_what_learners_wrote_as_text(tmp_path):
    """index.html's lesson row holds the summary's figures; a diagnosis and a handed-in file's name
    with markup in them are shown as text (the templates escape), never as markup; the warning of
    an unsandboxed run comes first."""
    import dataclasses

    from attention_grading.run.intake import Problem

    hostile = result("eve<script>", [0, 3], None)
    hostile.checks[0] = dataclasses.replace(hostile.checks[0], diagnosis="forgot <b>the scale</b> & more")
    problems = [Problem("zed", LESSON, "x<img src=x onerror=alert(1)>.ipynb", "not a notebook")]
    page = report.build_report(tmp_path, [LESSON], rows({**FINAL, "eve<script>": 1.0}), problems, CLASS + [hostile],
                               sandboxed=False, out=tmp_path / "report").read_text()
    row = "".join(f"<td>{figure}</td>" for figure in ("01", 5, 6, "3.60", 3, "3.40", 8, 0, 1))
    assert f"<tr>{row}</tr>" in page
    assert "forgot &lt;b&gt;the scale&lt;/b&gt; &amp; more" in page and "x&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<script" not in page and "<img src=x" not in page and "<b>" not in page
    assert page.index("WARNING: graded WITHOUT a sandbox") < page.index("<h1>Grading report</h1>")


def test_a_diagnosed_mistake_is_grouped_across_learners_with_their_names():
    """One line per diagnosis: how many learners made it, and who."""
    results = [result(s, [3, 0]) for s in ("bob", "amy", "cy")]
    for r in results:
        r.checks[1].diagnosis = "the rows are not scaled"
    named, _, who, _ = report.mistakes(results)
    assert report.diagnosed_lines(named, who) == ["3 × 01 · f1 · check_1: the rows are not scaled (amy, bob, cy)"]


def test_blank_notebooks_are_left_out_of_the_failures_and_listed_apart():
    """A notebook with nothing earned and its written answers left as released (0, not awaiting)
    is blank: its failures are not counted; one that earned nothing but awaits a written answer,
    or earned a point, is not blank."""
    blank = result("erin", [0, 0], 0.0)
    blank.checks[0].message = "NotImplementedError"
    tried = result("fay", [0, 0], None)
    tried.checks[0].message = "wrong shape"
    assert report.left_blank(blank) and not report.left_blank(tried) and not report.left_blank(CLASS[1])
    _, other, who, example = report.mistakes([blank, tried])
    assert report.other_lines(other, who, example) == ["1 × 01 · f0 · check_0 (fay), e.g.: wrong shape"]


def test_one_bug_is_one_line_of_other_failures_whatever_its_cases():
    """Messages that differ in their numbers (each submission draws its own cases) are one line
    per check, with the learners' names."""
    tried = [result(s, [0, 3], 1.0) for s in ("gus", "ann")]
    tried[0].checks[0].message, tried[1].checks[0].message = "expected 0.25, got 0.5", "expected 0.75, got 1.5"
    _, other, who, example = report.mistakes(tried)
    (line,) = report.other_lines(other, who, example)
    assert line.startswith("2 × 01 · f0 · check_0 (ann, gus), e.g.: expected 0.")


def test_written_answer_statistics():
    """Per lesson: answers, those with points (mean of max), awaiting, with none."""
    assert report.written_answers(CLASS) == [
        "01: 4 written answer(s): 1 with points, mean 2.00 of 2; 1 awaiting manual grading; 2 with no point "
        "(left as released or graded 0)"]


def test_the_report_holds_the_grading_services_last_table(tmp_path):
    """The live table the grading service last wrote beside the report is in it; without a
    service, the report says none ran."""
    out = tmp_path / "report"
    report.build_report(tmp_path, [LESSON], rows(FINAL), [], CLASS, out=out)
    assert "no service ran on this course" in (out / "summary.md").read_text()
    (out / "service-status.txt").write_text("grading service: stopped   queue: 0\nalice  01  1 graded  6/8\n")
    report.build_report(tmp_path, [LESSON], rows(FINAL), [], CLASS, out=out)
    summary = (out / "summary.md").read_text()
    assert "- grading service: stopped   queue: 0" in summary and "- alice  01  1 graded  6/8" in summary
