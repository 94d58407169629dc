"""nbgrader configuration for the course; every nbgrader command run from this folder reads it.

Layout: lessons are authored in source/<id>/<id>.ipynb; `nbgrader generate_assignment`
writes the learners' release to notebooks/ and `nbgrader generate_solution` the solved
notebooks to solutions/. Autograding runs every kernel in an operating-system sandbox and drives
the hidden tests from the grader (instructor/grading/attention_grading), which holds the
reference (instructor/reference); neither ever enters a learner's kernel.
"""
import os
import sys
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parent
GRADING_DIR = COURSE_ROOT / "instructor" / "grading"

# The grading code is importable by nbgrader here and, through PYTHONPATH, in the instructor's
# own kernels (nbgrader validate on source/ runs the hidden tests there). Graded kernels get an
# environment of their own, without it, and cannot read instructor/ at all.
if str(GRADING_DIR) not in sys.path:
    sys.path.insert(0, str(GRADING_DIR))
_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if str(GRADING_DIR) not in _paths:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(GRADING_DIR), *_paths])
# Creating the gradebook runs `alembic` from the environment's bin/, even when it is not activated.
_bin = str(Path(sys.executable).parent)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([_bin, os.environ.get("PATH", "")])

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "attention"
c.CourseDirectory.root = str(COURSE_ROOT)
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.solution_directory = "solutions"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# SQLite by default; a PostgreSQL URL (postgresql+psycopg2://...) for several graders.
c.CourseDirectory.db_url = os.environ.get(
    "ATTENTION_GRADEBOOK_URL", f"sqlite:///{COURSE_ROOT / 'gradebook.db'}"
)

# The formgrader warns until the exchange folder exists; a local one serves a single machine.
_exchange = Path(os.environ.get("ATTENTION_EXCHANGE", COURSE_ROOT / ".exchange"))
_exchange.mkdir(parents=True, exist_ok=True)
c.Exchange.root = str(_exchange)
# Submissions private between learners, each credited to the account that wrote it
# (attention_course/exchange.py; learners' images set the same `submit`).
c.ExchangeFactory.submit = "attention_course.exchange.PrivateSubmit"
c.ExchangeFactory.collect = "attention_course.exchange.OwnedCollect"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Solutions are stored unexecuted, like the release, so regenerating them is deterministic.
c.GenerateSolution.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.LockCells",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.ClearMarkScheme",
]

# Grading runs every notebook through the guarded executor (instructor/grading/attention_grading/
# execute.py: sandboxed kernels, hidden tests driven by the grader, a verdict for every graded cell,
# crash recovery, output caps, time limits); learners' HTML and JavaScript outputs are sanitised
# before anything stores or shows them; then the verdicts become the only outputs that can score
# (verdicts.py: ApplyVerdicts runs after every step that changes outputs) and the scores are saved
# from the verdicts (SaveVerdicts, nbgrader's SaveAutoGrades scored by the grader).
c.Autograde.autograde_preprocessors = [
    "attention_grading.execute.GuardedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "attention_grading.sanitize.SanitizeLearnerHTML",
    "attention_grading.sanitize.RemoveHandedInFiles",
    "attention_grading.verdicts.ApplyVerdicts",
    "attention_grading.verdicts.SaveVerdicts",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# A stuck cell is interrupted after 30 s and scores 0; a whole notebook gets at most 600 s.
c.Execute.timeout = 30
c.GuardedExecute.notebook_timeout = 600
# Restore deleted or altered test cells, and every graded cell's nbgrader metadata, from the
# gradebook instead of "needs manual grading" (restore.py); metadata nbgrader cannot read is dropped
# first.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "attention_grading.restore.DropUnreadableMetadata",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "attention_grading.restore.RestoreCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.RestoreCells.add_missing_cells = True
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 60

# Feedback names each check, its points and its diagnosis, never the hidden test source.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "attention_grading.feedback.LabelGradedCells",
    "attention_grading.feedback.HideHiddenTests",
    "attention_grading.sanitize.SanitizeLearnerHTML",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# The feedback page names each check and shows unmarked written answers as awaiting manual
# grading (templates/attention_feedback); set on GenerateFeedback only, so the formgrader keeps
# its own pages.
c.GenerateFeedback.exporter_class = "attention_grading.feedback.FeedbackExporter"
