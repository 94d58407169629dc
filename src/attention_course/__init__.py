"""Shared helpers for the lessons of "How a token reads its context".

- ``examples``: the worked examples of the source articles, as fresh arrays.
- ``checks``: visible checks that say *why* an answer is wrong.
- ``plots``: heatmaps, bar charts and vector pictures with labelled axes.
- ``widgets``: interactive explorers (ipywidgets) that also run headless.
- ``heads``: lesson 06's hand-built three-head example on the "it" sentence.

Nothing here knows the answers to the exercises: the reference implementation
and the hidden tests stay with the instructor.
"""
__version__ = "0.1.0"


def autograding():
    """True while nbgrader runs the notebook to grade it or to validate it (the Validate button):
    nbgrader sets ``NBGRADER_EXECUTION`` to ``autograde`` or ``validate`` then.

    A few long demonstrations do less work then: nobody reads their output, every submission of
    a class runs them, and nbgrader stops any cell that runs longer than its timeout (30 s).
    """
    import os

    return os.environ.get("NBGRADER_EXECUTION") in ("autograde", "validate")
