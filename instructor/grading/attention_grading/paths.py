"""Where the instructor-only code lives, found from this file (never from the working directory)."""
from pathlib import Path

GRADING_DIR = Path(__file__).resolve().parents[1]        # instructor/grading
INSTRUCTOR_DIR = GRADING_DIR.parent                      # instructor/
REFERENCE_DIR = INSTRUCTOR_DIR / "reference"             # instructor/reference
LESSONS_DIR = INSTRUCTOR_DIR / "lessons"                 # instructor/lessons/<id>/: one folder a lesson
COURSE_ROOT = INSTRUCTOR_DIR.parent
