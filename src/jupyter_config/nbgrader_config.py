"""nbgrader configuration installed with the course's learner package, in
``<environment>/etc/jupyter/`` (one of the folders nbgrader reads).

A learner validates a lesson in a folder of their own, without the course's configuration, and
nbgrader warns when it finds no configuration file at all: this file is that configuration. An
instructor's course folder has its own ``nbgrader_config.py``, read after this one, which sets
everything the course needs.
"""
c = get_config()  # noqa: F821 (defined when nbgrader loads this file)

# nbgrader's Validate fails a notebook when the kernel has not said "idle" within 4 seconds of a
# cell's reply. On a busy laptop or a shared Binder that happens to cells that are right, and the
# learner can do nothing about it; the grader waits 30 seconds (GuardedExecute.iopub_timeout).
c.Execute.iopub_timeout = 30
