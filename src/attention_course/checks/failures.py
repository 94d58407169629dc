"""A failed check: ``CheckFailed``, its message, and which frames of a traceback are the learner's."""
import contextlib
import io
import linecache
import os
import sysconfig
import tempfile
import textwrap
import warnings

import numpy as np


# ---------------------------------------------------------------- failures and where they happened

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # attention_course/, not checks/
_LIBRARY_DIRS = tuple(sorted({os.path.abspath(sysconfig.get_paths()[key])
                              for key in ("stdlib", "platstdlib", "purelib", "platlib")}))


def _is_ours(filename):
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def _is_library(filename):
    if filename.startswith("<"):
        return filename.startswith(("<frozen", "<__array_function__", "<string>"))
    return os.path.abspath(filename).startswith(_LIBRARY_DIRS)


def _learner_frames(tb):
    """``[(function name, line number, code)]`` of the frames of ``tb`` that are the learner's.

    The learner's frames are those of notebook cells (and any other file that is neither this
    package nor an installed library), outermost first.
    """
    found = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_ours(code.co_filename) and not _is_library(code.co_filename):
            text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            found.append((code.co_name, tb.tb_lineno, text))
        tb = tb.tb_next
    return found


def _callee(tb, name):
    """``(callee name, [(parameter, value)])`` of the learner's own function that the learner's
    function ``name`` called when ``tb`` was raised inside it (a helper such as ``masked_softmax``),
    its arguments as they stood then; or None when the error was raised in ``name`` itself."""
    caller = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if caller is not None and not _is_ours(code.co_filename) and not _is_library(code.co_filename) \
                and not code.co_name.startswith("<"):          # a comprehension or lambda is still fn's own code
            parameters = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            return code.co_name, [(p, tb.tb_frame.f_locals.get(p)) for p in parameters]
        if caller is None and code.co_name == name:
            caller = tb
        tb = tb.tb_next
    return None


def _learner_line(tb):
    """The deepest of ``_learner_frames(tb)``, or None."""
    frames = _learner_frames(tb)
    return frames[-1] if frames else None


class CheckFailed(AssertionError):
    """A visible check failed; the message explains why.

    In a notebook it renders as its message, the line of your function that raised (when your
    code raised an error) and the line of the check, instead of a traceback through the helpers.
    """

    #: ``[(function name, line number, code)]`` in the learner's code, when their code raised:
    #: the line that raised, then (if it was in another of their functions) the line that called it.
    raised_at = ()
    #: True when the message already names the learner's function to fix (``check_attempted``,
    #: ``check_earlier``): a cell that fails with it is shown as it is.
    names_the_function = False

    def _render_traceback_(self):
        lines = _wrapped("CheckFailed", str(self))
        for k, (name, number, code) in enumerate(self.raised_at):
            lines.append(f"  {'raised' if k == 0 else 'called from'} in your {name}, line {number}: {code}")
        where = _learner_line(self.__traceback__)
        if where and where[2]:
            lines.append(f"  (checked at line {where[1]} of this cell: {where[2]})")
        return lines


def _wrapped(kind, message, width=80):
    """``kind: message`` as lines of at most ``width`` characters (nbgrader validate cuts longer lines),
    the kind in red as in a traceback."""
    lines = textwrap.wrap(f"{kind}: {message}", width=width, break_long_words=False, break_on_hyphens=False)
    return [f"\x1b[1;31m{kind}\x1b[0m" + lines[0][len(kind):]] + lines[1:]


@contextlib.contextmanager
def _stderr_discarded():
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _name_of(fn):
    return getattr(fn, "__name__", "this function")


def _not_implemented(fn):
    return CheckFailed(f"{_name_of(fn)} is not implemented yet: replace "
                       "`raise NotImplementedError()` with your code.")


@contextlib.contextmanager
def _silenced():
    """Warnings, NumPy floating-point complaints and stderr discarded for the duration."""
    with _stderr_discarded(), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _quietly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with its warnings and stderr discarded."""
    with _silenced():
        return fn(*args, **kwargs)
