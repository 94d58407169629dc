"""Visible checks: each one either passes quietly with a tick or says *why* it failed.

In the spirit of d2l's ``check_shape`` and Karpathy's ``cmp``: a failed check names
what was compared, where it differs, and the cause when the evidence points at one (a
known wrong answer that matches exactly, the rows that are wrong, a constant factor).
A hint that the evidence does not support is worse than none, so most hints are
conditional.

A failed check shows its message, the line of your code that raised (if any) and the
line of the check, not the helpers' own traceback (see ``CheckFailed``).
"""
import ast
import contextlib
import inspect
import io
import linecache
import os
import re
import sysconfig
import tempfile
import textwrap
import warnings

import numpy as np

from . import forms


# ---------------------------------------------------------------- failures and where they happened

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
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


# ---------------------------------------------------------------- calling the learner's function

def _named_arguments(fn, args, kwargs):
    """``[(parameter name, value)]`` for a call of ``fn``; positions when the signature is unknown."""
    try:
        signature = inspect.signature(fn)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return [(f"argument {i + 1}", a) for i, a in enumerate(args)] + list(kwargs.items())
    named = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named += list(value.items())
        else:
            named.append((name, value))
    return named


def _arrays(named):
    """Every NumPy array among the arguments, including the values of a dict argument."""
    for name, value in named:
        if isinstance(value, np.ndarray):
            yield name, value
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, np.ndarray):
                    yield f"{name}[{key!r}]", item


def _describe_change(before, after):
    """A short account of how an array changed in place."""
    if before.shape != after.shape:
        return f"its shape went from {before.shape} to {after.shape}"
    old, new = before.astype(float).ravel(), after.astype(float).ravel()
    usable = (old != 0) & np.isfinite(old) & np.isfinite(new)
    if usable.any():
        ratio = new[usable] / old[usable]
        if np.allclose(ratio, ratio[0], rtol=1e-9) and not np.isclose(ratio[0], 1.0) and \
                np.allclose(new[~usable], 0.0):
            return (f"every entry was multiplied by {ratio[0]:.4g} (divided by {1 / ratio[0]:.4g}), "
                    "as an in-place `*=` or `/=` does")
    where = tuple(int(i) for i in np.unravel_index(
        int(np.argmax(~np.isclose(before, after, equal_nan=True))), before.shape))
    return f"at index {where} it held {before[where]:.6g} before the call and {after[where]:.6g} after"


def _check_not_mutated(fn, snapshots):
    changed = [(name, before, after) for name, after, before in snapshots
               if not np.array_equal(before, after, equal_nan=True)]
    if not changed:
        return
    names = " and ".join(name for name, _, _ in changed)
    name, before, after = changed[0]
    raise CheckFailed(
        f"{_name_of(fn)} changed its argument{'s' if len(changed) > 1 else ''} {names} in place: "
        f"{'for ' + name + ', ' if len(changed) > 1 else ''}{_describe_change(before, after)}. "
        "The caller's arrays must stay as they were: `x /= c`, `x -= m`, `x[...] = ...` or "
        "`np.exp(x, out=x)` write into the array you were given (and np.asarray does not copy a "
        "float64 array). Compute into a new array (`x = x / c`), or copy first (`np.array(x, dtype=float)`).")


def _shapes(named):
    shown = [f"{name} {value.shape}" for name, value in named if isinstance(value, np.ndarray)]
    return f" on {', '.join(shown)}" if shown else ""


def _explain_error(exc, fn, named):
    """A message for an error raised inside the learner's function, with what to change when the
    error and the line that raised it say what went wrong."""
    text = str(exc).strip()
    frames = _learner_frames(exc.__traceback__)
    raised_at = frames[-1:]
    own = [f for f in frames if f[0] == _name_of(fn)]
    if own and frames[-1][0] != _name_of(fn):
        raised_at.append(own[-1])                # the error came from a function that fn called
    code = " ".join(f[2] for f in raised_at)
    batched = any(isinstance(v, np.ndarray) and v.ndim > 2 for _, v in _arrays(named))
    hint = ""
    square = re.findall(r"\((\d+),\1\)", text)
    batch_sizes = {v.shape[0] for _, v in _arrays(named) if v.ndim > 2}
    if "could not be broadcast" in text and any(int(n) in batch_sizes for n in square):
        hint = (f"A ({square[0]}, {square[0]}) array meets the scores here, and {square[0]} is the batch size: "
                "T was read from the wrong axis. Take it from the end, T = X.shape[-2], so batch axes in "
                "front do not shift it.")
    elif "could not be broadcast" in text:
        if re.search(r"\b(sum|max|min|mean|logsumexp)\(", code) and "keepdims" not in code:
            hint = ("A sum or max along an axis drops that axis, so its result no longer lines up with "
                    "the array it came from: pass keepdims=True (np.max(x, axis=axis, keepdims=True)).")
        elif "mask" in code:
            hint = ("The mask's axes do not line up with the scores'. Broadcasting matches axes from the "
                    "right: give the mask an axis of length 1 wherever the scores have one it lacks "
                    "(mask[..., None, :, :] adds one just before the last two).")
        else:
            hint = "These shapes do not broadcast: print the shapes on that line and line their axes up from the right."
    elif "mismatch in its core dimension" in text or "shapes not aligned" in text:
        if re.search(r"\.T\b", code):
            hint = (".T reverses every axis, the batch axes included: swap only the last two with "
                    "np.swapaxes(M, -1, -2).")
        elif "transpose(" in code:
            hint = ("transpose(...) with explicit axes reorders the axes by position: with batch axes in "
                    "front, swap only the last two with np.swapaxes(M, -1, -2).")
        else:
            hint = ("For A @ B the last axis of A must match the second-to-last axis of B, "
                    "(..., n, k) @ (..., k, m): check which operand you transposed.")
    elif "axes don't match array" in text:
        hint = ("transpose(1, 0, 2) and the like name one axis per dimension, so they break when the number "
                "of axes changes (with or without a batch): use np.swapaxes(M, -1, -2) for the last two.")
    elif isinstance(exc, np.exceptions.AxisError):
        hint = "Count axes from the end (axis=-1 is the last one) so that leading batch axes do not shift them."
    elif isinstance(exc, IndexError) and "too many indices" in text:
        hint = "Index the last axes with an ellipsis, M[..., i, :], so any batch axes in front are kept."
    elif "must be 1- or 2-d" in text:
        hint = ("np.diag and np.outer handle one row at a time (1-D): work on whole arrays along the last axis "
                "instead (sums with keepdims=True), so any number of rows and batch axes work.")
    elif "subscripts" in text and "einstein sum" in text:
        hint = ("einsum names every axis of its operands: let leading batch axes through with '...', "
                "as in np.einsum('...td,dk->...tk', X, W).")
    elif "cannot reshape" in text:
        hint = ("Take the sizes from the input (*batch, T, width = X.shape) instead of fixed numbers, so any "
                "batch and any width work.")
    elif "values to unpack" in text and batched:
        hint = "With leading batch axes, unpack the shape as *batch, T, d = X.shape."
    elif "number sections must be larger than 0" in text:
        hint = ("np.array_split(x, T // block_size) asks for 0 parts when block_size > T, where one block must hold "
                "every key: cut the blocks by position instead, from start to min(start + block_size, T).")
    elif "could not broadcast input array" in text:
        hint = ("The array written into has fewer leading (batch) axes than what is written: make it with the "
                "batch shape every input broadcasts to, np.broadcast_shapes of their shapes without the last two axes.")
    callee = _callee(exc.__traceback__, _name_of(fn))
    if callee is not None and callee[0] != _name_of(fn):
        helper, given = callee
        passed = ", ".join(f"{p} of shape {v.shape}" if isinstance(v, np.ndarray) else f"{p}={v!r}"
                           for p, v in given if isinstance(v, (np.ndarray, bool, int, float, str)))
        where = (f"{_name_of(fn)}{_shapes(named)} called your {helper} with {passed or 'these arguments'}, "
                 f"and {helper} raised {type(exc).__name__}")
    else:
        where = f"{_name_of(fn)} raised {type(exc).__name__}{_shapes(named)}"
    failure = CheckFailed(f"{where}: {text.rstrip('.')}. {hint}".strip())
    failure.raised_at = tuple(raised_at)
    return failure


def call(fn, *args, **kwargs):
    """Call your function for a check, and stop with an explanation when it goes wrong.

    - Its warnings and stderr are discarded: a correct answer is judged on its values.
    - If it raises, the check says where in your code and, when the error shows it, what to change.
    - If it changes an array it was given (also one inside a dict), the check stops right there:
      every later check would otherwise compare against inputs that are no longer the ones used.
    """
    named = _named_arguments(fn, args, kwargs)
    snapshots = [(name, value, value.copy()) for name, value in _arrays(named)]
    try:
        result = _quietly(fn, *args, **kwargs)
    except NotImplementedError:
        raise _not_implemented(fn) from None
    except CheckFailed:
        raise
    except Exception as exc:
        raise _explain_error(exc, fn, named) from None
    _check_not_mutated(fn, snapshots)
    return result


def check_inputs_unchanged(fn, *args, **kwargs):
    """Call ``fn`` like ``call`` does and say so when it leaves every array it was given unchanged."""
    result = call(fn, *args, **kwargs)
    names = [name for name, _ in _arrays(_named_arguments(fn, args, kwargs))]
    print(f"✓ {_name_of(fn)} left {', '.join(names) or 'its inputs'} unchanged")
    return result


def _calls(fn, name):
    """True when the code of ``fn`` (nested functions included) reads the global ``name``."""
    stack = [getattr(fn, "__code__", None)]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        if name in code.co_names:
            return True
        stack += [c for c in code.co_consts if inspect.iscode(c)]
    return False


def _shape_words(args):
    shapes = [f"{np.shape(a)}" for a in args if isinstance(a, np.ndarray)]
    shapes += [f"a dict of {len(a)} arrays" for a in args if isinstance(a, dict)]
    settings = [repr(a) for a in args if isinstance(a, (bool, str))]
    return ", ".join(shapes + settings) if shapes else "these arguments"


def _earlier_problem(got, expected, atol, names=None):
    """Why ``got`` is not the known answer ``expected`` (an array, a tuple of them, or a function
    of the result that returns a problem or None), or None. ``names`` names the values of a tuple:
    a message calls each returned value by its name, never by its place."""
    if callable(expected):
        return expected(got)
    if isinstance(expected, tuple) and not (isinstance(got, tuple) and len(got) == len(expected)):
        return (f"it should return a tuple of {len(expected)} values ({', '.join(names)}), but it returned "
                f"{forms.describe(got)}")
    pairs = list(zip(got, expected)) if isinstance(expected, tuple) else [(got, expected)]
    for k, (ours, right) in enumerate(pairs):
        right = np.asarray(right)
        which = "result" if len(pairs) == 1 else f"`{names[k]}`"
        if not isinstance(ours, np.ndarray) or ours.shape != right.shape or ours.dtype.kind not in "biuf":
            return f"its {which} should be an array of shape {right.shape}, but it is {forms.describe(ours)}"
        if not np.allclose(ours, right, rtol=0, atol=atol):
            return f"its {which} differs from the known answer"
    return None


def check_earlier(fn, earlier, examples, where, atol=1e-9, names=None, uses=False):
    """Before judging ``fn``: if it calls your ``earlier`` function (or, with ``uses``, if this check
    itself calls it), confirm that one on examples with known answers, so that a mistake in an
    earlier exercise is not blamed on this one.

    ``examples`` is a list of ``(args, expected)``: give one for every shape of input this check
    will make ``fn`` hand to ``earlier`` (a batch, d_k ≠ d_v, ...), since an earlier function can
    be right on a matrix and wrong on a batch. ``expected`` is the known result (an array, a
    tuple of arrays) or a function of the result that says what is wrong with it (or None).
    ``where`` says where the earlier function's own check is; ``names`` names the values that
    ``earlier`` returns, so that a message says which one is wrong.
    """
    name, later = _name_of(earlier), _name_of(fn)
    if any(isinstance(expected, tuple) and (names is None or len(names) != len(expected)) for _, expected in examples):
        raise TypeError(f"check_earlier: name the values {name} returns, names=(...), one per value")
    called = _calls(fn, name)
    if not called and not uses:
        return
    for args, expected in examples:
        try:
            got = _quietly(earlier, *args)
            problem = _earlier_problem(got, expected, atol, names)
        except Exception as exc:
            problem = f"it raised {type(exc).__name__}: {exc}"
        if problem:
            who = f"{later} calls your {name}" if called else f"the check of {later} compares it with your {name}"
            failed = CheckFailed(f"{who}, and {name} is wrong on an input this check needs "
                                 f"({_shape_words(args)}): {problem}. Fix {name} first (its own check is {where}); "
                                 "then run this cell again.")
            failed.names_the_function = True
            raise failed
    how = "which" if called else "with which"
    print(f"✓ your {name}, {how} {later} {'calls' if called else 'is compared'}, gives the known answers on the "
          "inputs this check uses")


def check_returns(function, result, names, shapes=None, expected=None, atol=1e-9):
    """``result`` is the tuple ``(names...)`` that ``function`` must return; else say so, in the
    words the hidden tests use. With ``shapes`` (one per name), values returned in another order
    are told so; with ``expected`` (the right values, one per name; their shapes serve as
    ``shapes``), values of one shape returned in another order too."""
    if expected is not None:
        expected = [np.asarray(e, dtype=float) for e in expected]
        shapes = [e.shape for e in expected]

    def close(k, value):
        return np.allclose(np.asarray(value, dtype=float), expected[k], rtol=0, atol=atol)

    problem = forms.returns_problem(function, result, names) or (
        forms.order_problem(function, result, names, shapes, close=close if expected is not None else None)
        if shapes is not None else None)
    if problem:
        raise CheckFailed(problem)
    return result


# ---------------------------------------------------------------- basic comparisons

def _is_stub(fn):
    """True when the body of ``fn`` is nothing but ``raise NotImplementedError``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    definition = next((node for node in tree.body if isinstance(node, ast.FunctionDef)), None)
    if definition is None:
        return False
    body = [node for node in definition.body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def check_attempted(fn):
    """The visible line of a graded cell: fails while ``fn`` is still the stub that raises
    ``NotImplementedError``, and, outside grading (the Validate button, a learner running the
    notebook), while the visible check of ``fn`` above it fails, with that check's message.

    It reads the function instead of calling it: whether the answer is right is for the hidden
    tests to say. When nbgrader grades the notebook, only the stub fails here: the hidden tests
    decide the points, and a check that rejects a right answer must not cost any.
    """
    if _is_stub(fn):
        raise _not_implemented(fn)
    name = _name_of(fn)
    _LEARNER_FUNCTIONS[name] = getattr(fn, "__code__", None)
    failure = _RECORD.failure_since_definition(name)
    _RECORD.graded_now.add(name)
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return                                    # the grader's verdict follows; nothing to add
    if failure:
        failed = CheckFailed(f"the check of {name} above failed: {failure}")
        failed.names_the_function = True
        raise failed
    print(f"✓ {name} passes its visible checks; the hidden tests run when the notebook is graded")


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


def check_shape(name, value, shape, boolean=False):
    """``value`` is an array of exactly ``shape`` holding float64 numbers (booleans with
    ``boolean``): the form the hidden tests require, in their words."""
    problem = forms.array_problem(name, value, shape, boolean=boolean)
    if problem:
        raise CheckFailed(problem)
    print(f"✓ {name} has shape {value.shape}")


def _distinct(a, b, least=4):
    """``a`` and ``b`` written with as few significant digits (at least ``least``) as tell them apart."""
    for digits in range(least, 18):
        x, y = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if x != y:
            return x, y
    return repr(float(a)), repr(float(b))


def _where_nan(value):
    """Where the NaNs of ``value`` are, in words: rows for a matrix, positions for a vector."""
    bad = np.isnan(value)
    if value.ndim == 0:
        return ""
    if value.ndim == 1:
        at = np.flatnonzero(bad)
        return f"at position{'s' if len(at) > 1 else ''} {', '.join(map(str, at[:6]))} of {value.size}"
    rows = np.argwhere(bad.any(axis=-1))
    shown = ", ".join(str(tuple(int(i) for i in r)) if len(r) > 1 else str(int(r[0])) for r in rows[:6])
    total = int(np.prod(value.shape[:-1]))
    return f"in row{'s' if len(rows) > 1 else ''} {shown}{' …' if len(rows) > 6 else ''} ({len(rows)} of {total})"


def cmp(name, ours, expected, atol=1e-6, hint="", nan_hint=""):
    """``ours`` equals ``expected`` to ``atol``; otherwise say where and by how much.

    ``hint`` is added when the values differ and ``nan_hint`` when ``ours`` holds NaN; give
    them only where that example points at one cause.
    """
    ours = np.asarray(ours) if not isinstance(ours, np.ndarray) else ours
    expected = np.asarray(expected, dtype=float)
    if ours.shape != expected.shape:
        raise CheckFailed(f"{name}: shape {ours.shape}, expected {expected.shape}. {hint}".strip())
    if ours.dtype.kind not in "biuf":
        raise CheckFailed(f"{name}: expected numbers, got an array of dtype {ours.dtype}.")
    if ours.dtype.kind == "f" and ours.dtype != np.float64:
        raise CheckFailed(forms.array_problem(name, ours))
    if np.isnan(ours).any():
        raise CheckFailed(f"{name} contains NaN {_where_nan(ours)}: "
                          f"{np.array2string(ours, precision=4)}. {nan_hint}".strip())
    gap = np.abs(ours.astype(float) - expected)
    if not (gap <= atol).all():
        where = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
        factor = ""
        nonzero = expected != 0
        if nonzero.any() and (ours.astype(float)[~nonzero] == 0).all():
            ratio = ours.astype(float)[nonzero] / expected[nonzero]
            if np.allclose(ratio, ratio.flat[0], rtol=1e-6) and abs(ratio.flat[0] - 1) > 1e-3:
                factor = f" Yours is {ratio.flat[0]:.4g} times the expected value everywhere."
        mine, right = _distinct(float(ours[where]), float(expected[where]), least=6)
        raise CheckFailed(
            f"{name} is off by up to {gap.max():.3g} (tolerance {atol:g}); at index {where} "
            f"you have {mine}, expected {right}.{factor} {hint}".strip())
    print(f"✓ {name} matches to {atol:g}")


def check_rows_sum_to_one(name, weights, axis=-1, nan_hint=""):
    """Each slice of ``weights`` along ``axis`` is a distribution: non-negative, summing to 1."""
    weights = np.asarray(weights, dtype=float)
    if np.isnan(weights).any():
        raise CheckFailed(f"{name} contains NaN {_where_nan(np.moveaxis(weights, axis, -1))}. {nan_hint}".strip())
    if (weights < 0).any():
        raise CheckFailed(f"{name} has negative weights; softmax weights are never negative.")
    sums = weights.sum(axis=axis)
    if not np.allclose(sums, 1.0, atol=1e-9):
        shown = np.array2string(sums.ravel()[:6], precision=2, separator=", ")
        asked = axis % weights.ndim
        other = [a for a in range(weights.ndim) if a != asked and np.allclose(weights.sum(axis=a), 1.0, atol=1e-9)]
        named = [f"{a - weights.ndim}" if a - weights.ndim == -1 else f"{a}" for a in other]
        raise CheckFailed(f"the slices of {name} along axis {axis} sum to {shown}, not 1" + (
            f", but the slices along axis {named[0]} do: it is normalised along axis {named[0]} instead of "
            f"axis {axis}. Take the max and the sum along the `axis` you are given." if other else
            ": normalise along that axis (the max and the sum both along it, with keepdims=True)."))
    print(f"✓ every slice of {name} along axis {axis} sums to 1")


def check_finite(name, value, hint=""):
    """No NaN or infinity anywhere in ``value``."""
    value = np.asarray(value, dtype=float)
    if not np.isfinite(value).all():
        raise CheckFailed(f"{name} contains NaN or inf. {hint}".strip())
    print(f"✓ {name} is finite")


def check_no_numpy_warning(what, fn, *args, hint="", **kwargs):
    """Call ``fn(*args, **kwargs)`` and fail if NumPy warns (overflow, 0/0, ...); return the result.

    ``hint`` is a string, or a dict from words of the warning ("invalid", "overflow", ...) to the
    advice that warning calls for.
    """
    named = _named_arguments(fn, args, kwargs)
    snapshots = [(name, value, value.copy()) for name, value in _arrays(named)]
    try:
        with _stderr_discarded(), warnings.catch_warnings(record=True) as caught, \
                np.errstate(divide="warn", over="warn", invalid="warn", under="ignore"):
            warnings.simplefilter("always")
            result = fn(*args, **kwargs)
    except NotImplementedError:
        raise _not_implemented(fn) from None
    except Exception as exc:
        raise _explain_error(exc, fn, named) from None
    _check_not_mutated(fn, snapshots)
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if numeric:
        message = str(numeric[0].message)
        if isinstance(hint, dict):
            hint = next((advice for word, advice in hint.items() if word in message), "")
        raise CheckFailed(f"{what} made NumPy warn: \"{message}\". {hint}".strip())
    print(f"✓ {what} ran without a NumPy warning")
    return result


# ---------------------------------------------------------------- leading batch dimensions

def _batch_item(array, k):
    """Item ``k`` of a made-up batch built from ``array``: its rows rolled by ``k`` (its entries, for
    a vector), and its last axis reversed on every other round, so that the items differ."""
    array = np.asarray(array)
    axis = -2 if array.ndim >= 2 else -1
    item = np.roll(array, k, axis=axis)
    return item[..., ::-1] if (k // max(array.shape[axis], 1)) % 2 else item


#: The batches ``check_batch_axes`` tries, in the words of the hidden tests' cases.
BATCHES = (((2,), "one batch dimension"), ((2, 3), "two batch dimensions"))


def check_batch_axes(fn, args, batched, outputs, summed=(), **kwargs):
    """``fn`` works with no, one and two leading batch dimensions: the arguments at the positions
    ``batched`` are stacked into a batch of shape (2,), then (2, 3), of items that differ (the others
    are shared by every item), and each output is, item by item, what ``fn`` returns on that item
    alone (an output named in ``summed``, a parameter's gradient, is the sum over the items).

    ``outputs`` names the returned values (a tuple of names), or the one returned array (a string).
    Run it after the checks on single items: it compares ``fn`` with itself."""
    name = _name_of(fn)
    single = isinstance(outputs, str)
    names = (outputs,) if single else tuple(outputs)

    def returned(result):
        return (result,) if single else check_returns(name, result, names)

    for shape, words in BATCHES:
        items = [[_batch_item(a, k) if i in batched else a for i, a in enumerate(args)]
                 for k in range(int(np.prod(shape)))]
        alone = [returned(call(fn, *item, **kwargs)) for item in items]
        stacked = [np.stack([np.asarray(item[i]) for item in items]).reshape(*shape, *np.shape(args[i]))
                   if i in batched else a for i, a in enumerate(args)]
        described = ", ".join(f"{param} of shape {np.shape(value)}" for k, (param, value)
                              in enumerate(_named_arguments(fn, stacked, {})) if k in batched)
        try:
            together = returned(call(fn, *stacked, **kwargs))
        except CheckFailed as failure:
            failure.args = (f"With {words}: {failure}",)
            raise
        for out, got, each in zip(names, together, zip(*alone)):
            each = [np.asarray(v, dtype=float) for v in each]
            expected = (np.sum(each, axis=0) if out in summed
                        else np.stack(each).reshape(*shape, *each[0].shape))
            problem = forms.array_problem(f"{out} for {words} ({described})", got, expected.shape)
            if problem:
                raise CheckFailed(problem + ("" if out in summed else
                                             f" Leading batch dimensions come back in front, as they went in."))
            close = np.isclose(got, expected, rtol=1e-9, atol=1e-9, equal_nan=True)
            if not close.all():
                where = tuple(int(i) for i in np.argwhere(~close)[0])
                if out in summed:
                    raise CheckFailed(
                        f"{out} for {words} ({described}) is not the sum over the batch of what {name} returns "
                        f"for each item alone (first at index {where}): one set of weights serves every item, "
                        "so its gradient adds up the gradient of each.")
                item = where[:len(shape)]
                raise CheckFailed(
                    f"{out} for {words} ({described}) differs from what {name} returns for item {item} "
                    f"alone (first at index {where}). Each item of a batch must come out as it does on its "
                    "own: work on the last axes only (np.swapaxes(M, -1, -2), sizes read from the end such as "
                    "X.shape[-1]), so that batch axes in front are carried along untouched.")
    print(f"✓ {name} gives every item of a batch with one and with two batch dimensions what it gives that "
          "item alone")


# ---------------------------------------------------------------- masks (lesson 03 and later)

def check_causal_mask(name, mask, T):
    """``mask`` is the boolean ``(T, T)`` causal mask: True on and below the diagonal, False above."""
    problem = forms.array_problem(name, mask, (T, T), boolean=True)
    if problem:
        extra = ""
        if isinstance(mask, np.ndarray) and mask.shape != (T, T):
            extra = " One row per reading position, one column per position read."
        elif isinstance(mask, np.ndarray) and mask.dtype.kind == "f" and np.isinf(mask).any():
            extra = (" It holds -inf: that is the additive form (0 where allowed, -inf where blocked) "
                     "that some texts add to the scores. Here a mask is boolean: build it with dtype=bool.")
        elif isinstance(mask, np.ndarray):
            extra = " Build it with dtype=bool."
        raise CheckFailed(problem + extra)
    i, j = np.indices((T, T))
    diagonal, future, past = mask[i == j], mask[j > i], mask[j < i]
    if T > 1 and not diagonal.any() and future.all() and not past.any():
        raise CheckFailed(f"{name} is exactly reversed: True above the diagonal, False on and below. "
                          "True must mean 'may attend', not 'blocked'.")
    if T > 1 and diagonal.all() and future.all() and not past.any():
        raise CheckFailed(f"{name} is the upper triangle (np.triu): position i could read every later "
                          "position and none of the earlier ones. Keep the lower triangle instead.")
    if not diagonal.all():
        raise CheckFailed(f"{name} is False on the diagonal: position i must be allowed to read itself "
                          "(j = i). A strict lower triangle leaves the first position with nothing "
                          "to read at all.")
    if future.any():
        where = tuple(int(v) for v in np.argwhere(mask & (j > i))[0])
        raise CheckFailed(f"{name} is True at {where}, above the diagonal: position {where[0]} "
                          f"could read the later position {where[1]}, the future.")
    if not past.all():
        where = tuple(int(v) for v in np.argwhere(~mask & (j < i))[0])
        raise CheckFailed(f"{name} is False at {where}, below the diagonal: position {where[0]} "
                          f"must be able to read the earlier position {where[1]}.")
    print(f"✓ {name} is the boolean causal mask for T = {T}")


def _row_softmax(scores, axis=-1):
    """A plain softmax for the checks' own candidate answers (-inf entries get 0, blind slices 0)."""
    scores = np.asarray(scores, dtype=float)
    top = np.max(scores, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore"):
        e = np.exp(scores - top)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _masked_mistakes(scores, mask):
    """Wrong answers a masked softmax is often mistaken for, as ``(what was done, weights)``."""
    hidden = np.where(mask, scores, -np.inf)
    return [
        ("the hidden weights are zeroed after the softmax, so the visible ones keep the old denominator "
         "(which still counts the hidden scores): mask the scores with -inf before the softmax",
         _row_softmax(scores) * mask),
        ("the softmax runs down the columns (axis=-2) instead of along each row (the last axis)",
         _row_softmax(hidden, axis=-2)),
        ("the mask is never applied", _row_softmax(scores)),
        ("the scores are multiplied by the mask: a hidden score becomes 0, which still gets weight; it "
         "must become -inf", _row_softmax(scores * mask)),
        ("the mask's polarity is reversed: True must mean 'may attend'",
         _row_softmax(np.where(mask, -np.inf, scores))),
    ] + ([("the mask is transposed (np.triu where np.tril belongs): position i reads the later positions "
           "instead of the earlier ones", _row_softmax(np.where(np.swapaxes(mask, -1, -2), scores, -np.inf)))]
         if mask.shape[-1] == mask.shape[-2] else [])


def check_masked_rows(name, weights, mask, scores=None, hint=""):
    """Weights obey a mask: 0 where it is False, rows with something visible sum to 1, rows with
    nothing visible are all 0.

    With ``scores`` (the scores the weights came from), a wrong answer that equals a known mistake
    is named. ``hint`` replaces the advice given when a hidden position gets weight.
    """
    weights = np.asarray(weights, dtype=float)
    try:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape)
    except ValueError:
        raise CheckFailed(f"{name} has shape {weights.shape}, which does not fit the mask of shape "
                          f"{np.shape(mask)}.") from None
    if scores is not None:
        scores = np.broadcast_to(np.asarray(scores, dtype=float), weights.shape)
        right = _row_softmax(np.where(mask, scores, -np.inf))
        if not np.allclose(weights, right, rtol=1e-9, atol=1e-12):
            matched = [explanation for explanation, wrong in _masked_mistakes(scores, mask)
                       if not np.allclose(wrong, right, atol=1e-12)
                       and np.allclose(weights, wrong, rtol=1e-9, atol=1e-12, equal_nan=True)]
            if len(matched) == 1:                  # two causes with the same weights name neither
                raise CheckFailed(f"{name} is exactly what you get when {matched[0]}.")
    visible = mask.any(axis=-1)                                    # (...,) rows with something to read
    if np.isnan(weights).any():
        rows = np.argwhere(np.isnan(weights).any(axis=-1))
        blind = [tuple(int(r) for r in row) for row in rows if not visible[tuple(row)]]
        first = tuple(int(r) for r in rows[0])
        if blind:
            raise CheckFailed(f"{name} contains NaN in row{'s' if len(blind) > 1 else ''} "
                              f"{', '.join(map(str, blind[:4]))}, which may read nothing: exp(-inf) is 0 "
                              "everywhere there, and 0/0 is NaN. Give such a row all-zero weights instead.")
        large = scores is not None and np.abs(scores[first][mask[first]]).max() > 700
        raise CheckFailed(f"{name} contains NaN in row {first}, which can read "
                          f"{int(mask[first].sum())} position(s)." + (
                              " Its scores are large enough for exp() to overflow: subtract the row's "
                              "max over the visible scores before exp()." if large else ""))
    blind_rows = weights[~visible]                                 # (n_blind, T_k)
    if blind_rows.size and np.abs(blind_rows).max() > 1e-12:
        uniform = np.allclose(blind_rows, 1.0 / weights.shape[-1])
        raise CheckFailed(f"a row of {name} with nothing visible has weights "
                          f"{np.array2string(blind_rows[0], precision=3)}, not zeros. " + (
                              "They are uniform: filling the masked scores with a large finite number "
                              "such as -1e9 ties them all, and softmax then spreads the row evenly over "
                              "positions it must not read." if uniform else
                              "A row that may read nothing must read nothing: all-zero weights."))
    hidden = np.where(mask, 0.0, np.abs(weights))
    if hidden.max() > 1e-12:
        where = tuple(int(v) for v in np.unravel_index(np.argmax(hidden), hidden.shape))
        flipped = np.abs(np.where(mask, weights, 0.0)).max() <= 1e-12
        square = mask.shape[-1] == mask.shape[-2] if mask.ndim >= 2 else False
        transposed = square and np.abs(np.where(np.swapaxes(mask, -1, -2), 0.0, weights)).max() <= 1e-12
        unmasked = bool((np.abs(weights)[~mask] > 0).all())
        why = ("All the weight sits where the mask is False and none where it is True: the polarity is "
               "reversed. True means 'may attend'." if flipped else
               "Every weight is 0 where the transposed mask is False: the mask was applied transposed "
               "(row i must read the columns j that row i of the mask allows)." if transposed else
               hint or ("No hidden position gets weight 0: the mask is not applied to these weights."
                        if unmasked else "Masked positions must get exactly 0."))
        raise CheckFailed(f"{name} puts weight {weights[where]:.4g} at {where}, where the mask is False. {why}")
    sums = weights.sum(axis=-1)[visible]
    empty = np.argwhere(visible & (np.abs(weights).sum(axis=-1) == 0))
    if empty.size:
        row = tuple(int(r) for r in empty[0])
        row = row[0] if len(row) == 1 else row
        diagonal = np.diagonal(weights, axis1=-2, axis2=-1) if weights.shape[-1] == weights.shape[-2] else None
        on_diagonal = diagonal is not None and np.diagonal(mask, axis1=-2, axis2=-1).all() and not diagonal.any()
        raise CheckFailed(f"row {row} of {name} is all zeros although the mask lets it read "
                          f"{int(mask[tuple(empty[0])].sum())} position(s)." + (
                              " Every weight on the diagonal is 0 too: a position must be allowed to read "
                              "itself (j ≤ i), and without the diagonal the first one has nothing to read."
                              if on_diagonal else ""))
    if not np.allclose(sums, 1.0, atol=1e-9):
        shown = np.array2string(sums[:6], precision=4, separator=", ")
        columns = weights.ndim >= 2 and np.allclose(weights.sum(axis=-2), 1.0, atol=1e-9)
        raise CheckFailed(f"rows of {name} that can see something sum to {shown}, not 1" + (
            ", but its columns sum to 1: it is normalised down the columns (axis -2) instead of along "
            "each row (the last axis)." if columns else
            ": each row must be normalised by the sum of its own visible weights."))
    print(f"✓ {name} respects the mask: hidden positions get 0, every row that sees something sums to 1"
          + (", blind rows are all 0" if (~visible).any() else ""))


# ---------------------------------------------------------------- scale and statistics (lessons 01-03)

def _softmax_scale(weights, scores):
    """The ``c`` with ``weights = softmax(c · scores)`` along each row, or None if there is none."""
    pairs = []
    for w, s in zip(weights.reshape(-1, weights.shape[-1]), scores.reshape(-1, scores.shape[-1])):
        keep = w > 0
        if keep.sum() >= 2 and np.ptp(s[keep]) > 0:
            lw, ss = np.log(w[keep]), s[keep]
            pairs.append((lw - lw.mean(), ss - ss.mean()))
    if not pairs:
        return None
    c = sum(lw @ ss for lw, ss in pairs) / sum(ss @ ss for _, ss in pairs)
    if max(float(np.abs(lw - c * ss).max()) for lw, ss in pairs) > 1e-6:
        return None
    return c


def check_score_scale(name, weights, raw_scores, d_k, width="d_k", **other_widths):
    """The rows of ``weights`` are ``softmax(raw_scores / √d_k)``; otherwise name the divisor used.

    ``width`` is what the lesson calls the width (``"d"`` in lesson 01); ``other_widths`` are
    widths one might divide by by mistake, e.g. ``d_model=3`` or ``d_v=5``.
    """
    weights = np.asarray(weights, dtype=float)
    scores = np.broadcast_to(np.asarray(raw_scores, dtype=float), weights.shape)
    if np.isnan(weights).any():
        raise CheckFailed(f"{name} contains NaN {_where_nan(weights)}.")
    root = f"√{width}"
    c = _softmax_scale(weights, scores)
    if c is None:
        swapped = np.swapaxes(scores, -1, -2)
        if np.allclose(weights, _row_softmax(scores / np.sqrt(d_k), axis=-2), atol=1e-12):
            raise CheckFailed(f"{name} is the softmax of the scores down each column (axis=-2): each "
                              "query's row must be the distribution, so take the softmax along the last axis.")
        if weights.shape[-1] == weights.shape[-2] and _softmax_scale(weights, swapped) is not None:
            raise CheckFailed(f"{name} is a softmax of the transposed scores: row i holds what every "
                              "position scores on i. The scores are Q Kᵀ (queries times keys), not K Qᵀ.")
        raise CheckFailed(f"{name} is not a softmax of the scores along each row: softmax each row "
                          f"of Q Kᵀ / {root} (the last axis) and change nothing else.")
    if np.isclose(c, 1 / np.sqrt(d_k), rtol=1e-6):
        print(f"✓ {name} = softmax(scores / {root}) with {width} = {d_k}")
        return
    divisor = 1 / c if c != 0 else np.inf
    guesses = {"1: the scores were not scaled": 1.0,
               f"{width} = {d_k} instead of {root}": float(d_k)}
    for other, value in other_widths.items():
        guesses[f"√{other} = √{value} instead of {root} = √{d_k}"] = float(np.sqrt(value))
        guesses[f"{other} = {value} instead of {root} = √{d_k}"] = float(value)
    for said, value in guesses.items():
        if np.isclose(divisor, value, rtol=1e-6):
            tokens = ""
            if said.startswith(("√T ", "T ")):       # the width read from an axis counted from the front
                tokens = (f" T = {other_widths['T']} is the number of tokens, the axis before the last: in a batch, "
                          f"X.shape[1] is T. Read {width} from the end, X.shape[-1], so that batch axes in front "
                          "do not shift it.")
            raise CheckFailed(f"{name} is what you get by dividing the scores by {said}. The scale "
                              f"is 1/{root} with {width} = {d_k}" + (
                                  " = K.shape[-1]." if width == "d_k" else ".") + tokens)
    yours, right = _distinct(divisor, float(np.sqrt(d_k)))
    raise CheckFailed(f"{name} is what you get by dividing the scores by {yours}, but the "
                      f"divisor should be {root} = {right} ({width} = {d_k}).")


def check_statistic(name, value, expected, standard_error, within=5.0, hint="", fingerprints=()):
    """A simulated ``value`` is a float within ``within`` standard errors of ``expected``.

    ``fingerprints`` are ``(what you probably computed, the value that gives)``: when ``value`` is
    off and lies within 5 % of one of them, that is named instead of ``hint``.
    """
    problem = forms.float_problem(name.split("(")[0], value)
    if problem:
        raise CheckFailed(problem)
    if not np.isfinite(value):
        raise CheckFailed(f"{name} is {value}. {hint}".strip())
    z = (float(value) - expected) / standard_error
    if abs(z) > within:
        for explanation, typical in fingerprints:
            if np.isclose(float(value), typical, rtol=0.05):
                hint = f"It is close to {typical:.4g}, which is {explanation}."
                break
        raise CheckFailed(f"{name} = {float(value):.6g}, but it should be near {expected:g}: that is "
                          f"{z:+.1f} standard errors away (one standard error is {standard_error:.3g} "
                          f"here; allowed ±{within:g}). {hint}".strip())
    print(f"✓ {name} = {float(value):.4f}, {abs(z):.1f} standard errors from {expected:g}")


def check_global_generator_untouched(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` neither reseeds NumPy's global generator nor draws from it, in the
    words of the hidden test."""
    from .randomness import GLOBAL_GENERATOR_PROBLEM, moves_the_global_generator

    named = _named_arguments(fn, args, kwargs)
    try:
        moved = _quietly(moves_the_global_generator, fn, *args, **kwargs)
    except Exception as exc:
        raise _explain_error(exc, fn, named) from None
    if moved:
        raise CheckFailed(GLOBAL_GENERATOR_PROBLEM.format(function=_name_of(fn)))
    print(f"✓ {_name_of(fn)} leaves NumPy's global generator alone")


# ---------------------------------------------------------------- known mistakes

def cmp_known_mistakes(name, ours, expected, mistakes=(), atol=1e-9, hint="", nan_hint=""):
    """``ours`` equals ``expected``; if not and it equals a known wrong answer, name that mistake.

    ``mistakes`` is a sequence of ``(what you probably did, the array that mistake produces)``;
    the explanation completes the sentence "it is exactly what you get when ...". NaN in the
    same places counts as equal, so a mistake that produces NaN can be named too.
    """
    problem = forms.array_problem(name, ours, None if isinstance(ours, np.ndarray) else np.shape(expected))
    if problem:
        raise CheckFailed(problem)
    expected = np.asarray(expected, dtype=float)
    if ours.shape == expected.shape and np.allclose(ours, expected, rtol=1e-9, atol=atol):
        print(f"✓ {name} matches to {atol:g}")
        return
    matched = []
    for explanation, wrong in mistakes:
        wrong = np.asarray(wrong, dtype=float)
        if wrong.shape == expected.shape and np.allclose(wrong, expected, rtol=1e-9, atol=atol):
            continue                                  # this example cannot tell that mistake apart
        if wrong.shape == ours.shape and np.allclose(ours, wrong, rtol=1e-9, atol=atol, equal_nan=True):
            matched.append(explanation)
    if len(set(matched)) == 1:                        # two causes with the same result name neither
        raise CheckFailed(f"{name} is not right: it is exactly what you get when {matched[0]}.")
    cmp(name, ours, expected, atol=atol, hint=hint, nan_hint=nan_hint)


# ---------------------------------------------------------------- memory (lesson 08)

def check_memory_growth(name, fn, make_inputs, lengths=(512, 1024, 2048), **kwargs):
    """Peak memory of ``fn(*make_inputs(T), **kwargs)`` must not grow like T².

    The peak (``tracemalloc``) is measured at three lengths T, 2T, 4T. A peak of the form
    a + b·T + c·T² has c = (2·p(T) − 3·p(2T) + p(4T)) / (6·T²): the bytes per (query, key)
    pair. Copies of the inputs and the output grow like T and cancel out of c; a ``(T, T)``
    array of float64 gives c ≈ 8 or more, a boolean one c ≈ 1.
    """
    T = lengths[0]
    if tuple(lengths) != (T, 2 * T, 4 * T):
        raise ValueError("lengths must be T, 2T and 4T")
    peaks = _peaks(fn, make_inputs, lengths, kwargs)
    # tracemalloc sees every thread of the process (a kernel's output thread, a widget): a
    # growth seen once is measured again, and only the smallest peak per length counts. A (T, T)
    # array shows up every time.
    for _ in range(2):
        if _per_pair(peaks, T) <= 0.25:
            break
        peaks = [min(a, b) for a, b in zip(peaks, _peaks(fn, make_inputs, lengths, kwargs))]
    per_pair = _per_pair(peaks, T)
    shown = ", ".join(f"{p / 1e6:.2f} MB at T = {t}" for p, t in zip(peaks, lengths))
    if per_pair > 0.25:
        kind = ("a (T, T) array of float64 (scores or weights)" if per_pair >= 6 else
                "a (T, T) boolean array (a mask?)" if per_pair < 2 else "a (T, T) array")
        raise CheckFailed(f"{name}: the peak memory grows like T², about {per_pair:.1f} bytes per (query, "
                          f"key) pair ({shown}), which is what {kind} costs. Build only one tile at a time: "
                          "scores, weights and mask of one block of queries against one block of keys.")
    print(f"✓ {name}: peak memory {shown}; the part that grows like T² is {max(per_pair, 0.0):.3f} bytes "
          "per (query, key) pair, so no (T, T) array is built")


def check_key_blocks(name, fn, batch=64, T_q=3, T_k=16384, d_k=2, d_v=2, block_size=16, seed=0):
    """A batch of ``batch`` sequences of ``T_q`` queries reading ``T_k`` keys that the batch shares
    (K and V without a batch axis), in blocks of ``block_size``: the output is attention, and the
    peak memory of the call (``tracemalloc``, the inputs made beforehand not counted) stays below
    half of one float64 score for every key, for one query of each sequence, which an answer that
    takes all T_k keys of a query at once holds. The hidden test measures the same from outside the
    kernel, on sizes drawn for each submission (``long_context.key_block_problem``: its words)."""
    from .long_context import key_block_problem

    g = np.random.default_rng(seed)
    Q = 2.0 * g.standard_normal((batch, T_q, d_k))                    # (batch, T_q, d_k)
    K, V = g.standard_normal((T_k, d_k)), g.standard_normal((T_k, d_v))  # shared by the batch
    O, peak = _peaks(fn, lambda _: (Q, K, V), [T_k], {"block_size": block_size}, keep=True)[0]
    problem = forms.array_problem("O", O, (batch, T_q, d_v))
    if problem:
        raise CheckFailed(f"{name}: {problem}")
    expected = np.empty((batch, T_q, d_v))
    for start in range(0, batch, 16):                                 # 16 sequences at a time: a few MB
        s = Q[start:start + 16] @ K.T / np.sqrt(d_k)                  # (16, T_q, T_k)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        expected[start:start + 16] = (w / w.sum(axis=-1, keepdims=True)) @ V
    cmp(f"{name}: O for a batch of queries reading keys the batch shares", O, expected, atol=1e-10)
    problem = key_block_problem(peak, batch, T_q, T_k, block_size, "at its peak")
    if problem:          # another thread of the kernel may have allocated beside it: measured once more
        peak = min(peak, _peaks(fn, lambda _: (Q, K, V), [T_k], {"block_size": block_size}, keep=True)[0][1])
        problem = key_block_problem(peak, batch, T_q, T_k, block_size, "at its peak")
    if problem:
        raise CheckFailed(problem)
    print(f"✓ {name}: a batch of {batch} sequences of {T_q} queries reading {T_k:,} shared keys, block_size = "
          f"{block_size}: peak memory {peak / 1e6:.2f} MB, under half the {8 * batch * T_k / 1e6:.1f} MB of one "
          "score for every key for one query of each sequence, so no query takes all its keys at once")


def _peaks(fn, make_inputs, lengths, kwargs, keep=False):
    """The peak memory of ``fn`` at each length (``keep``: with its result, as pairs)."""
    from .long_context import peak_memory

    peaks = []
    for length in lengths:
        inputs = make_inputs(length)
        try:
            result, peak = peak_memory(_quietly, fn, *inputs, **kwargs)
        except NotImplementedError:
            raise _not_implemented(fn) from None
        except Exception as exc:
            named = _named_arguments(fn, inputs, kwargs)
            raise _explain_error(exc, fn, named) from None
        peaks.append((result, peak) if keep else peak)
        del inputs, result
    return peaks


def _per_pair(peaks, T):
    return (2 * peaks[0] - 3 * peaks[1] + peaks[2]) / (6 * T * T)


# ---------------------------------------------------------------- gradients (lessons 05 and 07)

def rel_error(analytic, numeric):
    """Relative error of a gradient check, ``‖a − n‖ / max(‖a‖, ‖n‖)``; 0 when both are exactly 0."""
    analytic, numeric = np.asarray(analytic, dtype=float), np.asarray(numeric, dtype=float)
    scale = max(float(np.linalg.norm(analytic)), float(np.linalg.norm(numeric)))
    return 0.0 if scale == 0 else float(np.linalg.norm(analytic - numeric)) / scale


def _central_differences(f, x, h):
    numeric = np.zeros(x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros(x.shape)
        step[index] = h
        numeric[index] = (float(f(x + step)) - float(f(x - step))) / (2 * h)
    return numeric


def _constant_factor(analytic, numeric):
    """``k`` when ``analytic`` is ``k`` times ``numeric`` everywhere (to 1e-6), else None."""
    if not numeric.any() or not analytic.any():
        return None
    factor = float(np.vdot(analytic, numeric) / np.vdot(numeric, numeric))
    return factor if rel_error(analytic, factor * numeric) < 1e-6 else None


def check_gradient(name, analytic, f, x, tol=1e-7, h=1e-5, hint="", alternatives=(), known_factors=None):
    """``analytic`` is the gradient of the scalar function ``f`` at ``x``: central differences,
    computed here in float64, agree to a relative error below ``tol``.

    When they do not, the failure names what the evidence shows: ``known_factors`` maps a factor
    (say √d_k) to what it means when yours is that multiple of the right gradient;
    ``alternatives`` are ``(what you probably did, g)`` where ``g`` is a scalar function whose
    gradient a plausible mistake computes instead (the loss without the mask, say): if yours
    matches one, that one is named. ``hint`` is given only when nothing matched.
    """
    x = np.array(x, dtype=float)
    if not isinstance(analytic, np.ndarray):
        raise CheckFailed(forms.array_problem(name, analytic, x.shape))
    if analytic.shape != x.shape:
        why = ""
        if analytic.ndim > x.ndim and analytic.shape[analytic.ndim - x.ndim:] == x.shape:
            why = (" It has extra leading axes, one gradient per sequence: a parameter shared by the whole "
                   "batch collects the sum of them over the leading axes.")
        elif analytic.shape == x.shape[::-1]:
            why = " It is transposed: for P = X W the weight gradient is Xᵀ dP, shaped like W."
        raise CheckFailed(f"{forms.array_problem(name, analytic, x.shape)} A gradient has the shape of what it "
                          f"differentiates.{why}")
    problem = forms.array_problem(name, analytic, x.shape)
    if problem:
        raise CheckFailed(problem)
    if not np.isfinite(analytic).all():
        raise CheckFailed(f"{name} contains NaN or inf {_where_nan(np.where(np.isfinite(analytic), 0.0, np.nan))}.")
    numeric = _central_differences(f, x, h)
    error = rel_error(analytic, numeric)
    if error > tol:
        factor = _constant_factor(analytic, numeric)
        named = next((meaning for value, meaning in (known_factors or {}).items()
                      if factor is not None and np.isclose(factor, value, rtol=1e-6)), None)
        for explanation, other in alternatives:
            if named is None and rel_error(analytic, _central_differences(other, x, h)) <= max(tol, 1e-6):
                named = f"it is exactly the gradient you get when {explanation}"
        if named is not None:
            detail = f"Yours is {factor:.4g} times the right gradient: {named}." if factor is not None and \
                not named.startswith("it is") else named[0].upper() + named[1:] + "."
            hint = ""
        elif not analytic.any():
            detail = "Yours is zero everywhere, but the loss does change with it."
        elif not numeric.any():
            detail = "The loss does not change with it at all here, so its gradient is 0."
        elif factor is not None:
            detail = f"Yours is {factor:.4g} times the right gradient everywhere: a constant factor is off."
        else:
            where = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(analytic - numeric)), x.shape))
            detail = (f"The largest gap is at index {where}: yours {analytic[where]:.6g}, central "
                      f"differences {numeric[where]:.6g}.")
        raise CheckFailed(f"{name} disagrees with central differences: relative error {error:.2e}, which "
                          f"should be below {tol:g}. {detail} {hint}".strip())
    print(f"✓ {name} agrees with central differences (relative error {error:.1e} < {tol:g})")


def check_probes(function, x, points, h=None):
    """The points at which ``function`` called ``f`` (noted by the check's own ``f``) move one entry
    of ``x`` at a time by ``h`` (the default 1e-5 when None) and put every entry back exactly, in the
    words of the hidden test."""
    from .probes import probe_problem

    problem = probe_problem(function, x, points, h)
    if problem:
        raise CheckFailed(problem[0].upper() + problem[1:] if problem.startswith("with") else problem)
    print(f"✓ {function} probes one entry at a time by h = {'1e-5' if h is None else h} and puts each back exactly")


def check_zero(name, value, hint=""):
    """Every entry of ``value`` is exactly 0, not merely small."""
    value = np.asarray(value, dtype=float)
    if np.isnan(value).any():
        raise CheckFailed(f"{name} contains NaN where it should be exactly 0. {hint}".strip())
    if value.any():
        where = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(value)), value.shape))
        raise CheckFailed(f"{name} should be exactly 0, but it is {value[where]:.3g} at index {where}. "
                          f"{hint}".strip())
    print(f"✓ {name} is exactly 0")


#: The capstone's parameters in the order backpropagation reaches them (nearest the loss first).
BACKPROP_ORDER = ("W_out", "W_V", "W_Q", "W_K", "E_name", "E_attr")


def _diagnose_model_gradients(table, n_graded, d_k, embeddings=None):
    """Name the step of the capstone's backward pass that the pattern of wrong gradients points at.

    ``table[setting][name]`` is ``(relative error, constant factor or None)``; the first setting is
    the real model (softmax, scaled, causal). ``embeddings``: what the embedding gradients' errors
    single out (``_embedding_cause``), if anything.
    """
    wrong = {s: [n for n in BACKPROP_ORDER if row[n][0] > 1e-6] for s, row in table.items()}
    real = next(iter(table))
    factors = [table[s][n][1] for s in table for n in wrong[s]]
    if wrong[real] == list(BACKPROP_ORDER) and None not in factors and np.allclose(factors, factors[0], rtol=1e-6):
        factor = factors[0]
        if np.isclose(factor, n_graded, rtol=1e-6):
            return (f"every gradient is {factor:.4g} times the right one, and {n_graded} is the number of "
                    "graded positions N: the loss is a mean over them, so dZ = (softmax(z) − onehot(y)) / N.")
        return f"every gradient is {factor:.4g} times the right one: a constant factor in dZ is off."
    first = (wrong[real] or next(w for w in wrong.values() if w))[0]
    if first == "W_out":
        return ("the gradient nearest the loss, W_out's, is already wrong: dZ = (softmax(z) − onehot(y)) / N "
                "at the graded positions and 0 elsewhere, then dW_out = Oᵀ dZ summed over batch and positions.")
    if first == "W_V":
        return "W_out is right but W_V is not: dV = Aᵀ dO (transpose the weights, not dO), then dW_V = Xᵀ dV."
    if first in ("W_Q", "W_K"):
        both = [n for n in ("W_Q", "W_K") if n in wrong[real]]
        scale = [table[real][n][1] for n in ("W_Q", "W_K")]
        raw = next((s for s in table if "'raw'" in s), None)
        if all(f is not None and np.isclose(f, np.sqrt(d_k), rtol=1e-6) for f in scale):
            return (f"W_out and W_V are right, and W_Q and W_K are both √d_k = {np.sqrt(d_k):.4g} times too "
                    "large: the 1/√d_k of the forward pass belongs in dQ = c dS K and dK = c dSᵀ Q too.")
        if both == ["W_Q", "W_K"] and raw is not None and not {"W_Q", "W_K"} & set(wrong[raw]):
            return ("W_out and W_V are right, and W_Q and W_K are right with weighting='raw' (no softmax) but "
                    "wrong with the softmax: the softmax backward is off. It is dS = A ⊙ (dA − Σ_j A ⊙ dA), "
                    "the weighted sum along each row subtracted before multiplying by A.")
        if both == ["W_K"]:
            return "W_out, W_V and W_Q are right but W_K is not: dK = c · dSᵀ Q (transpose the last two axes of dS)."
        if both == ["W_Q"]:
            return "W_out, W_V and W_K are right but W_Q is not: dQ = c · dS K."
        return ("W_out and W_V are right but W_Q and W_K are not: the error is between dA and dQ, dK "
                "(the softmax backward, or the scores' step dQ = c dS K, dK = c dSᵀ Q).")
    return ("every weight matrix is right and only the embedding tables are wrong: " + (embeddings or (
        "the error is in dX = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ or in how its rows go back to the tables (each row "
        "of dX to the table rows its ids came from; np.add.at(dE, ids, dX) adds the rows of an id used "
        "several times).")))


#: The paths by which X reaches the loss, with the weight each one multiplies dX by (``_embedding_cause``).
_PATHS = (("W_Q", "the query path dQ W_Qᵀ"), ("W_K", "the key path dK W_Kᵀ"), ("W_V", "the value path dV W_Vᵀ"))


def _embedding_cause(params, data, analytic, numeric):
    """What the errors of the embedding gradients single out, in words, or None.

    ``analytic`` and ``numeric`` are ``{table: gradient}`` for "E_name" and "E_attr". The rows of ids
    used once right and only those of repeated ids wrong: the repeats are not added up. The error of
    every row a multiple of one weight matrix's columns (a subspace smaller than the width), and of no
    other's: that path is missing from dX."""
    ids = {"E_name": np.asarray(data["names"]).ravel(), "E_attr": np.asarray(data["attrs"]).ravel()}
    once_right, repeats_only = False, True
    for table, used in ids.items():
        counts = np.bincount(used, minlength=len(analytic[table]))
        wrong = ~np.isclose(analytic[table], numeric[table], rtol=1e-5, atol=1e-8).all(axis=-1)
        once_right |= bool((~wrong & (counts == 1)).any())
        repeats_only &= bool((counts[wrong] > 1).all())
    if once_right and repeats_only:
        return ("the rows of ids used once are right and only those of ids used several times are wrong: an id "
                "used several times must collect all of its gradients (np.add.at(dE, ids, dX) adds them; "
                "dE[ids] += dX keeps only one).")
    error = np.concatenate([numeric[t] - np.asarray(analytic[t], dtype=float) for t in ids])   # (rows, d_model)
    fits = []
    for name, path in _PATHS:
        W = np.asarray(params[name], dtype=float)                     # (d_model, width)
        if np.linalg.matrix_rank(W) >= W.shape[0]:
            continue                                                  # every row fits: no evidence
        coefficients = np.linalg.lstsq(W, error.T, rcond=None)[0]      # error ≈ coefficientsᵀ Wᵀ?
        if np.linalg.norm(error - (W @ coefficients).T) <= 1e-4 * np.linalg.norm(error):
            fits.append((name, path))
    if len(fits) == 1:
        (name, path), = fits
        return (f"their error is, row by row, a combination of the columns of {name} alone, which is what "
                f"{path} would add: {path} is missing from dX. X feeds the queries, the keys "
                "and the values, so dX = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ.")
    return None


def check_model_gradients(model_backward, params, data, settings, n_graded):
    """The capstone's gradient check: every parameter under every switch setting, then one diagnosis.

    All gradients are checked before anything is judged, so a failure names the step of the
    backward pass that the pattern points at (the first wrong gradient in backpropagation order,
    which switch settings are affected, a constant factor), not merely the first table checked.
    """
    table, tables = {}, {}
    for flags in settings:
        loss, grads = check_returns("model_backward", call(model_backward, params, data, **flags), ("loss", "grads"))
        if not isinstance(grads, dict):
            raise CheckFailed(f"grads should be a dict keyed like params, but it is {forms.describe(grads)}.")
        key = str(flags or "the real model")
        table[key] = {}
        print(f"--- {key}: loss {float(loss):.6f}")
        for name in BACKPROP_ORDER:
            analytic = grads.get(name) if isinstance(grads, dict) else None
            shape = np.shape(params[name])
            problem = forms.array_problem(f"grads[{name!r}]", analytic, shape)
            if problem:
                shaped = isinstance(analytic, np.ndarray) and analytic.shape != shape
                raise CheckFailed(problem + (f" A gradient has the shape of params[{name!r}]." if shaped else ""))
            if not np.isfinite(analytic).all():
                raise CheckFailed(f"grads[{name!r}] contains NaN or inf with {key}.")

            def loss_of(W, name=name):
                return model_backward({**params, name: W}, data, **flags)[0]

            try:
                with _silenced():                  # one silencing for the whole sweep, not one per call
                    numeric = _central_differences(loss_of, np.array(params[name], dtype=float), 1e-5)
            except Exception as exc:
                raise _explain_error(exc, model_backward, _named_arguments(model_backward, (params, data), flags)) from None
            error = rel_error(analytic, numeric)
            table[key][name] = (error, _constant_factor(analytic, numeric) if analytic.any() else 0.0)
            if key == next(iter(table)):                 # the real model's, for _embedding_cause
                tables.setdefault("analytic", {})[name], tables.setdefault("numeric", {})[name] = analytic, numeric
            print(f"    {name:<7} relative error {error:.1e}" + ("" if error <= 1e-6 else "   ✗"))
    if all(err <= 1e-6 for row in table.values() for err, _ in row.values()):
        print("✓ every gradient agrees with central differences (relative error < 1e-6)")
        return
    d_k = np.shape(params["W_K"])[1]
    embeddings = _embedding_cause(params, data, tables["analytic"], tables["numeric"])
    raise CheckFailed("the gradients disagree with central differences (the ✗ above): "
                      + _diagnose_model_gradients(table, n_graded, d_k, embeddings))


def _mean_cross_entropy(logits, targets):
    """The mean cross-entropy of ``logits`` over the positions whose target is >= 0."""
    logits, targets = np.asarray(logits, dtype=float), np.asarray(targets)
    graded = targets >= 0
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, np.where(graded, targets, 0)[..., None], axis=-1)[..., 0]
    return float(-picked[graded].sum() / max(int(graded.sum()), 1))


def check_loss_matches_forward(model_backward, model_forward, params, data, settings):
    """For every switch setting, the loss ``model_backward`` returns is the mean cross-entropy of the
    logits ``model_forward`` gives on the same batch. A backward pass that computes another model
    consistently (the scale left out of its loss *and* its gradients, say) passes a gradient check
    of its own loss; it does not pass this. A cause is named only when a computed alternative
    reproduces the loss exactly."""
    targets = np.asarray(data["targets"])
    n_graded, n_all = int((targets >= 0).sum()), targets.size
    for flags in settings:
        loss, _ = check_returns("model_backward", call(model_backward, params, data, **flags), ("loss", "grads"))
        logits, _ = check_returns("model_forward", call(model_forward, params, data, **flags), ("logits", "A"))
        expected = _mean_cross_entropy(logits, targets)
        loss = float(loss)
        if np.isclose(loss, expected, rtol=1e-9, atol=1e-12):
            continue
        setting = ", ".join(f"{k}={v!r}" for k, v in flags.items()) or "the real model"
        causes = []
        for switch, meaning in (("scale", "the 1/√d_k scale"), ("causal", "the causal mask")):
            other = {**flags, switch: not flags.get(switch, True)}
            other_loss = _mean_cross_entropy(_quietly(model_forward, params, data, **other)[0], targets)
            if np.isclose(loss, other_loss, rtol=1e-9, atol=1e-12):
                done = "leaves out" if flags.get(switch, True) else "applies"
                causes.append(f"the forward pass inside model_backward {done} {meaning}: its loss is the loss "
                              f"model_forward gives with {switch}={other[switch]}")
        if np.isclose(loss, expected * n_graded / n_all, rtol=1e-9):
            causes.append(f"the loss is averaged over all {n_all} positions of the batch instead of the "
                          f"{n_graded} that have a target")
        if np.isclose(loss, expected * n_graded, rtol=1e-9):
            causes.append(f"the loss is summed over the {n_graded} positions with a target instead of averaged")
        mine, right = _distinct(loss, expected)
        raise CheckFailed(f"with {setting}, model_backward returns the loss {mine}, but the mean cross-entropy of "
                          f"the logits your model_forward gives on the same batch (over the {n_graded} positions "
                          f"with a target) is {right}: the two compute different models. " + (
                              f"This is exactly what you get when {causes[0]}." if len(causes) == 1 else
                              "Your model_forward gives the known answers on every setting this check uses (checked "
                              "above), so make the forward pass inside model_backward its model, and its loss the "
                              "mean over the positions with a target."))
    print("✓ the loss of model_backward is the mean cross-entropy of model_forward's logits, for every setting")



_follow_the_notebook()
