"""Every grading step tested in-process, one module per step (nbgrader's own
``tests/preprocessors/test_<name>.py`` is the model): small notebooks and cells built by
``factories``, a throwaway gradebook from ``conftest``; no kernel, no subprocess, each test well
under a second, and a failure that names the step."""
