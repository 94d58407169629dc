"""Call learner code without letting its warnings or stderr fail a test cell.

nbgrader scores a test cell 0 when it writes to stderr, and a correct answer must
not lose points because it warned; correctness is judged on values alone.
"""
import contextlib
import io
import os
import sys
import tempfile
import warnings

import numpy as np


@contextlib.contextmanager
def silenced_stderr():
    """Discard stderr (Python-level and file-descriptor-level) and Python-level stdout for the duration."""
    sys.stderr.flush() if hasattr(sys.stderr, "flush") else None
    with tempfile.TemporaryFile() as sink:
        saved_fd = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                yield
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)


def call_quietly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with warnings ignored, numpy errors silenced and stderr discarded."""
    with silenced_stderr(), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)
