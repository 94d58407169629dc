"""What ran in this notebook: the learner's functions a check has seen, and an error shown with the
cell that defined the function."""
import re

from .failures import CheckFailed, _wrapped


# ---------------------------------------------------------------- what ran in this notebook

#: The learner's graded functions seen by a check: name -> code object.
_LEARNER_FUNCTIONS = {}


def _one_line(exc):
    text = str(exc) if isinstance(exc, CheckFailed) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


class _Record:
    """The cells this kernel ran, in order (IPython's ``post_run_cell``): the functions each one
    defined, the graded functions whose ``check_attempted`` it ran, and the one-line message of
    its error, if it raised one."""

    def __init__(self):
        self.cells = []
        self.graded_now = set()

    def after_cell(self, result):
        source = getattr(getattr(result, "info", None), "raw_cell", "") or ""
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        defined = set(re.findall(r"^def\s+(\w+)\s*\(", source, re.MULTILINE))
        self.cells.append({"defined": defined, "graded": self.graded_now, "source": source,
                           "error": _one_line(error) if error is not None else None})
        self.graded_now = set()

    def failure_since_definition(self, name, other_than=None):
        """The first error of the cells run after ``name`` was last defined and before its first
        graded cell (its visible checks, in a notebook run top to bottom), or None; a cell whose
        source is ``other_than`` (the one running now, run again) does not count."""
        for index in range(len(self.cells) - 1, -1, -1):
            if name in self.cells[index]["defined"]:
                for cell in self.cells[index + 1:]:
                    if name in cell["graded"]:
                        return None
                    if cell["error"] and cell["source"] != other_than:
                        return cell["error"]
                return None
        return None


_RECORD = _Record()


def _demonstration_lines(value, tb, source):
    """A short message for an error in a demonstration (a cell that is not a check: checks open with
    a docstring) that names the learner's function to fix: the one the error came out of, one the
    cell uses whose check failed, or else one whose check failed before this cell ran. None when
    there is none, or when the message already names it."""
    if getattr(value, "names_the_function", False) or source.lstrip().startswith(("'" * 3, '"' * 3)):
        return None
    kind = type(value).__name__
    codes = {code: name for name, code in _LEARNER_FUNCTIONS.items() if code is not None}
    inside = None
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            inside = inside or (codes[tb.tb_frame.f_code], tb.tb_lineno)
        tb = tb.tb_next
    if inside:
        name, line = inside
        return _wrapped(kind, f"raised in your {name} (line {line} of its cell), which this demonstration calls: "
                        f"fix {name} (its check is the cell after its definition), then run this cell again.")
    failed = [name for name in _LEARNER_FUNCTIONS if _RECORD.failure_since_definition(name, other_than=source)]
    used = [name for name in failed if re.search(rf"\b{re.escape(name)}\b", source)]
    if used:
        return _wrapped(kind, f"this demonstration uses your {used[0]}, whose check above failed: fix {used[0]}, "
                        "then run this cell again.")
    if failed:
        return _wrapped(kind, f"this demonstration stopped after your {failed[0]} failed its check above: fix "
                        f"{failed[0]} first, then run this cell again.")
    return None


def _show_error(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for errors in a cell: one line when the error comes from the learner's
    function (or one whose check failed), the usual traceback otherwise."""
    try:
        lines = _demonstration_lines(value, tb, getattr(shell, "_attention_running_source", ""))
        if lines:
            value._render_traceback_ = lambda: lines
    except Exception:                             # never let the explanation hide the error
        pass
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)


def _follow_the_notebook():
    """Record what every cell does (for ``check_attempted``) and show demonstration errors in
    one line, when this module is imported in an IPython kernel."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or getattr(shell, "_attention_checks_followed", False):
        return
    shell._attention_checks_followed = True

    def before_cell(info):
        shell._attention_running_source = getattr(info, "raw_cell", "") or ""

    shell.events.register("pre_run_cell", before_cell)
    shell.events.register("post_run_cell", _RECORD.after_cell)
    shell.set_custom_exc((Exception,), _show_error)
