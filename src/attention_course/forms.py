"""The form a graded function's answer must take, in the words both the visible checks and the
hidden tests use: a tuple of the named values, NumPy arrays of the right shape, ``float64``
numbers (booleans for a mask). A hidden test that rejects an answer for its form says it in the
same sentence as the visible check that rejected it first.

Each function returns ``None`` when the form is right, else the sentence that says what is wrong.
"""
import numpy as np


def describe(value):
    """What a value is, in a few words (never its numbers)."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} value{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"a dict with the keys {', '.join(map(str, value))}"
    if value is None:
        return "None (did you forget to return?)"
    if isinstance(value, (bool, int, float, np.number)):
        return f"the {type(value).__name__} {value!r}"
    return f"an object of type {type(value).__name__}"


def returns_problem(function, value, names):
    """Why ``value`` is not the tuple of ``names`` that ``function`` returns, or None."""
    if isinstance(value, tuple) and len(value) == len(names):
        return None
    what = f"a tuple of {len(names)} values ({', '.join(names)})"
    hint = (": return them as a tuple, `return " + ", ".join(names) + "`"
            if isinstance(value, list) and len(value) == len(names) else "")
    return f"{function} should return {what}, but it returned {describe(value)}{hint}."


def order_problem(function, value, names, shapes, close=None):
    """When the arrays of ``value`` are those of ``names`` in one other order, and in no other, the
    sentence that says the order is swapped; else None. The shapes (one per name) tell the order
    first; with ``close`` (``close(k, array)``: is ``array`` the right value of ``names[k]``?), values
    of one shape returned in another order are told so too (dgamma and dbeta swapped)."""
    from itertools import permutations

    if not isinstance(value, (tuple, list)) or len(value) != len(names) or len(shapes) != len(names):
        return None
    got = [tuple(v.shape) if isinstance(v, np.ndarray) else None for v in value]
    wanted = [tuple(s) for s in shapes]

    def orders(fits):
        return [order for order in permutations(range(len(names)))
                if all(fits(k, at) for k, at in enumerate(order))]

    if got != wanted:
        by_shape = orders(lambda k, at: got[at] == wanted[k])
        if len(by_shape) == 1:
            return _order_sentence(function, names, by_shape[0], "by their shapes")
    if close is None:
        return None

    def right(k, at):
        try:
            return got[at] == wanted[k] and bool(close(k, value[at]))
        except Exception:                       # a value that cannot even be compared is not right
            return False

    n = len(names)
    if all(right(k, k) for k in range(n)):
        return None                             # every value in its place
    fits = [[right(k, at) for at in range(n)] for k in range(n)]     # each comparison made once
    by_value = orders(lambda k, at: fits[k][at])
    if len(by_value) == 1:
        return _order_sentence(function, names, by_value[0], "by their values")
    return None


def _order_sentence(function, names, order, told):
    """``order[k]``: the position that holds ``names[k]``."""
    held = [names[order.index(at)] for at in range(len(names))]    # the name each position holds
    moved = sum(at != k for k, at in enumerate(order))
    swapped = "swapped" if moved == 2 else "mixed up"
    return (f"{function} returns its values in the order ({', '.join(held)}), {told}; the order is "
            f"{swapped}: return them as ({', '.join(names)}), `return {', '.join(names)}`.")


def array_problem(what, value, shape=None, boolean=False):
    """Why ``value`` is not an array of ``shape`` (None: any) holding float64 numbers (booleans
    with ``boolean``), or None. ``what`` names the value ("A", "Your `O`")."""
    if not isinstance(value, np.ndarray):
        shaped = f" of shape {tuple(shape)}" if shape is not None else ""
        return f"{what} should be a NumPy array{shaped}, but it is {describe(value)}."
    if shape is not None and value.shape != tuple(shape):
        return f"{what} has shape {value.shape}, but it should have shape {tuple(shape)}."
    if boolean:
        if value.dtype != bool:
            return f"{what} should be a boolean array (True = may attend), not dtype {value.dtype}."
        return None
    if value.dtype != np.float64:
        return (f"{what} has dtype {value.dtype}; the course works in float64 throughout "
                "(np.asarray(x, dtype=float) promotes integer input).")
    return None


def float_problem(function, value):
    """Why ``value`` is not the one float ``function`` returns, or None (a NumPy float counts)."""
    if isinstance(value, (float, np.floating)) and not isinstance(value, np.ndarray):
        return None
    return (f"{function} should return one float, but it returned {describe(value)}: "
            "return float(...) of the statistic.")


def token_problem(function, value):
    """Why ``value`` is not the one token id ``function`` returns (an int; a NumPy integer counts),
    or None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return None
    return f"{function} should return one token id as an int (int(...)), but it returned {describe(value)}."


def _times(count):
    return {0: "not at all", 1: "once", 2: "twice"}.get(count, f"{count} times")


def calls_problem(function, required, counts):
    """Why ``function`` does not build on the earlier functions it is asked to call (``required``:
    ``{name: at least how many times}``), given how often it called each (``counts``), or None."""
    missing = [name for name, least in required.items() if counts.get(name, 0) < least]
    if not missing:
        return None
    wanted = " and ".join(f"{name} ({'at least ' if least > 1 else ''}{_times(least)})"
                          for name, least in required.items())
    made = ", ".join(f"{name} {_times(counts.get(name, 0))}" for name in missing)
    return f"{function} should call your {wanted}; it called {made}: build it from them, as the exercise asks."
