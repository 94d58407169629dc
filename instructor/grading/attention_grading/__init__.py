"""Instructor-only grading helpers: hidden-test client, judge, feedback filter, CLI.

Never part of what learners receive. Hidden test cells call ``hidden.check(name, fn)``;
the verdict comes from ``judge``, a separate process that holds the reference.
"""
