"""nbgrader configuration for the course; every nbgrader command run from this folder reads it,
and ``make grade`` reads it once per run. It sets values, and changes one thing besides: the
course environment's ``bin/`` goes first on ``PATH`` when it is not there (nbgrader creates a
gradebook by running the ``alembic`` it finds on ``PATH``), so that ``.venv/bin/nbgrader ...``
works without activating the environment. No import path, no other variable, no folder.

Layout: lessons are authored in source/<id>/<id>.ipynb; `nbgrader generate_assignment`
writes the learners' release to notebooks/ and `nbgrader generate_solution` the solved
notebooks to solutions/. Autograding runs every kernel in an operating-system sandbox and drives
the hidden tests from the grader (instructor/grading/attention_grading, installed into the course
environment by `make`), which holds the reference (instructor/reference); neither ever enters a
learner's kernel. Every grading setting is a trait with its help text
(`python -m attention_grading.cli.settings` lists them; the settings page, docs/settings.md, is made
from that list); set them here as `c.<Class>.<name> = value`.
"""
import os
import sys
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

# nbgrader runs the `alembic` executable found on PATH when it creates a gradebook: the one of the
# environment running nbgrader, whether or not that environment was activated.
_tools = os.path.dirname(sys.executable)
if _tools not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(filter(None, [_tools, os.environ.get("PATH", "")]))

c.CourseDirectory.course_id = "attention"
c.CourseDirectory.root = str(COURSE_ROOT)
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.solution_directory = "solutions"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
# The grader's own files beside an autograded notebook (scores, notes, what its feedback page was
# made from) are never copied into feedback/: a learner receives the page only.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "grading-*.json"]
# SQLite by default; a PostgreSQL URL (postgresql+psycopg2://...) for several graders.
c.CourseDirectory.db_url = os.environ.get(
    "ATTENTION_GRADEBOOK_URL", f"sqlite:///{COURSE_ROOT / 'gradebook.db'}"
)

# A local exchange serves a single machine (`make formgrader` and `make release` create it).
c.Exchange.root = os.environ.get("ATTENTION_EXCHANGE", str(COURSE_ROOT / ".exchange"))
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
# steps/execute.py: sandboxed kernels, hidden tests driven by the grader, a verdict for every graded
# cell, crash recovery, output caps, time limits); learners' HTML and JavaScript outputs are
# sanitised before anything stores or shows them; then the verdicts become the only outputs that
# can score (steps/verdicts.py: ApplyVerdicts runs after every step that changes outputs) and the
# scores are the verdicts (SaveVerdicts, nbgrader's SaveAutoGrades scored by the grader). make grade
# applies the same steps in its jobs and leaves the two that write the gradebook to its store.
c.Autograde.autograde_preprocessors = [
    "attention_grading.steps.execute.GuardedExecute",
    "attention_grading.steps.well_formed_text.WellFormedText",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "attention_grading.steps.sanitize.SanitizeLearnerHTML",
    "attention_grading.steps.remove_handed_in_files.RemoveHandedInFiles",
    "attention_grading.steps.verdicts.ApplyVerdicts",
    "attention_grading.steps.verdicts.SaveVerdicts",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# A stuck cell is interrupted after 30 s of the kernel's own time (time spent waiting for a CPU that
# other processes held does not count; GuardedExecute.time_stretch) and scores 0; a whole notebook
# gets at most 600 s.
c.Execute.timeout = 30
c.GuardedExecute.notebook_timeout = 600
# make grade on a Dask cluster's workers instead of this machine (see docs/instructor-guide.md).
c.DaskCluster.scheduler = os.environ.get("ATTENTION_DASK_SCHEDULER", "")
# Restore deleted or altered test cells, and every graded cell's nbgrader metadata, from the
# gradebook instead of "needs manual grading" (steps/restore.py; make grade's jobs read the lesson's
# cells from the job); metadata nbgrader cannot read is dropped first. Before anything, every lone
# UTF-16 surrogate a notebook's JSON may hold becomes U+FFFD (steps/well_formed_text.py), and again
# once the kernel added its outputs: any text is graded.
c.Autograde.sanitize_preprocessors = [
    "attention_grading.steps.well_formed_text.WellFormedText",
    "nbgrader.preprocessors.ClearOutput",
    "attention_grading.steps.restore.DropUnreadableMetadata",
    "nbgrader.preprocessors.DeduplicateIds",
    "attention_grading.steps.restore.RestoreKernelspec",
    "attention_grading.steps.restore.RestoreCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.RestoreCells.add_missing_cells = True
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 60

# Feedback names each check, its points and its diagnosis, never the hidden test source.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "attention_grading.steps.label_cells.LabelGradedCells",
    "attention_grading.steps.hide_hidden_tests.HideHiddenTests",
    "attention_grading.steps.sanitize.SanitizeLearnerHTML",
    "attention_grading.steps.figure_outputs.FigureOutputs",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# The feedback page names each check and shows unmarked written answers as awaiting manual
# grading (templates/attention_feedback), formulas as MathML (no script: it reads offline); set
# on GenerateFeedback only, so the formgrader keeps its own pages.
c.GenerateFeedback.exporter_class = "attention_grading.steps.feedback_exporter.FeedbackExporter"

# Late submissions: each lesson's due date is nbgrader's own (`nbgrader db assignment add <lesson>
# --duedate "2026-11-01 17:00:00 UTC"`, or the formgrader's Manage Assignments), extensions are
# nbgrader's (Gradebook.grant_extension). `make grade` applies the penalty as `nbgrader autograde`
# does, with nbgrader's AssignLatePenalties and this plugin: "none" (the default) or "zero", or
# set c.AssignLatePenalties.plugin_class to a LateSubmissionPlugin of your own.
c.LateSubmissionPlugin.penalty_method = "none"

# `nbgrader export` and `make grade` write the same grades.csv and grades-by-learner.csv (the file
# for a learning-management system): the gradebook's final scores, names from the roster
# (`nbgrader db student import roster.csv`), why a submission could not be graded.
c.ExportApp.plugin_class = "attention_grading.cli.export.CourseGradesExport"
