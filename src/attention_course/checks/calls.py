"""Calling the learner's function: its errors explained, its inputs left unchanged, earlier functions
confirmed first, an exercise not yet attempted."""
import ast
import inspect
import os
import re
import textwrap

import numpy as np

from .. import forms
from .failures import CheckFailed, _callee, _learner_frames, _name_of, _not_implemented, _quietly
from .notebook import _LEARNER_FUNCTIONS, _RECORD


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
