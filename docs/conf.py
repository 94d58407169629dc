"""Sphinx configuration of the course's documentation site (``make docs``: docs/_build/html).

Pages are MyST Markdown, readable on GitHub as they are; lesson pages are the learners' releases
with the figures of a solved run (``_ext/lesson_pages.py``); formulas are MathML written into the
pages (``_ext/mathml.py``), so the site needs no network, to build or to read.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "How a token reads its context"
author = "the course's authors"
copyright = "the course's authors (MIT licence)"

extensions = ["myst_nb", "mathml", "lesson_pages", "repo_links"]
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
# Headings get GitHub's anchors, so that `page.md#a-heading` works on GitHub and in the site.
myst_heading_anchors = 4

# Lesson pages: each docs/lessons/<id>.lesson is read as a notebook by lesson_pages.read; nothing
# is executed by myst-nb (lesson_pages runs the solutions, once, and caches their outputs).
nb_custom_formats = {".lesson": ["lesson_pages.read", {}, False]}
nb_execution_mode = "off"
nb_merge_streams = True

html_theme = "furo"
html_title = "How a token reads its context"
html_math_renderer = "mathml"
html_static_path = []
html_show_sourcelink = False

# Two lessons' notebooks go from a title to a third-level heading; the lessons are not this
# site's to change.
suppress_warnings = ["myst.header"]
html_copy_source = False    # the pages are the site; their Markdown is in the repository
