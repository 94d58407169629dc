"""nbgrader configuration installed with the course's learner package, in
``<environment>/etc/jupyter/`` (one of the folders nbgrader reads).

A learner validates a lesson in a folder of their own, without the course's configuration, and
nbgrader warns when it finds no configuration file at all. Learners need no settings: this file
is that configuration. An instructor's course folder has its own ``nbgrader_config.py``, read
after this one, which sets everything the course needs.
"""
