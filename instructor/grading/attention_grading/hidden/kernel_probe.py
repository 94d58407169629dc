"""The only grading code that ever runs in a learner's kernel: call a function, report what it did.

The grader sends this file's text into the kernel for each hidden test (nothing is imported from
the grading package there, which the kernel cannot even read). It asks the grader, over the
kernel's own stdin channel, for calls to make: which learner function to call on which inputs
(a loop of calls, such as a training run, is driven by the grader one batch at a time: no
course code in the kernel, which the learner could rebind, takes part). It returns each call's output, whether the call changed its
inputs, and the warnings the grader asked it to watch (memory is measured by the grader, outside
the kernel: ``kernels.sandbox.meter``). Earlier graded functions that the
tested one may call are replaced, for the duration, by stand-ins that ask the grader too (the
grader computes them outside and decides whether to answer). Nothing here knows a case, a seed,
an expected value or the reference: a kernel that tampers with this code can only misreport its
own outputs, which it chose anyway.

Also imported by the grader for the wire format (``encode``, ``decode``, ``digest``): JSON with
base64 arrays, never pickle, so that nothing a kernel sends can run code in the grader.
"""
import base64
import hashlib
import json
import numbers
import sys
import time
import warnings

import numpy as np

MAGIC = "attention-probe/1 "


# ------------------------------------------------------------------ the wire format

def _memory(value):
    """``(bytes, layout)``: an array's elements as they sit in memory, and what the receiver needs
    to rebuild the same view of them (``{}`` for C order, ``{"order": "F"}``, or the strides and
    offset of any other view within the bytes it spans), so that a function meets the memory
    order its caller built (a transposed matrix stays a transposed view)."""
    if value.flags.c_contiguous:
        return value.tobytes(order="C"), {}
    if value.flags.f_contiguous:
        return value.tobytes(order="F"), {"order": "F"}
    from numpy.lib.array_utils import byte_bounds

    low, high = byte_bounds(value)
    broadcast = any(step == 0 and n > 1 for step, n in zip(value.strides, value.shape))
    if broadcast or high - low > 4 * value.nbytes + (1 << 20):
        return value.tobytes(order="C"), {}       # a broadcast, or a sparse view of a large array
    import ctypes

    return ctypes.string_at(low, high - low), {"strides": list(value.strides),
                                               "offset": int(value.ctypes.data - low)}


def _rebuild(raw, dtype, shape, blob):
    """The array ``_memory`` described, in a buffer of its own (writable, as the sender's was)."""
    if "strides" in blob:
        strides = tuple(int(s) for s in blob["strides"])
        return np.ndarray(shape, dtype, buffer=bytearray(raw), offset=int(blob["offset"]), strides=strides)
    order = "F" if blob.get("order") == "F" else "C"
    flat = np.frombuffer(raw, dtype=dtype)
    return flat.reshape(shape[::-1]).T.copy(order="F") if order == "F" else flat.reshape(shape).copy()


def generator_state(rng):
    """A numpy Generator's PCG64 state as plain integers (what the wire carries), or None for
    any other bit generator."""
    state = rng.bit_generator.state
    if state.get("bit_generator") != "PCG64":
        return None
    return {"state": int(state["state"]["state"]), "inc": int(state["state"]["inc"]),
            "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"])}


def _generator(state):
    """A PCG64 Generator in ``state`` (checked by numpy), or Opaque."""
    try:
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = {"bit_generator": "PCG64",
                                   "state": {"state": int(state["state"]), "inc": int(state["inc"])},
                                   "has_uint32": int(state["has_uint32"]), "uinteger": int(state["uinteger"])}
        return rng
    except (KeyError, TypeError, ValueError, OverflowError):
        return Opaque("a malformed random generator")


def encode(value):
    """Arrays (with their dtype, shape and memory order), tuples/lists, dicts of str keys,
    scalars, strings, None and numpy Generators (by their PCG64 state); anything else is
    described, not sent."""
    if isinstance(value, np.random.Generator):
        state = generator_state(value)
        return {"generator": state} if state is not None else {"other": "a Generator other than PCG64"}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            return {"other": f"an array of dtype {value.dtype}"}
        raw, layout = _memory(value)
        return {"array": base64.b64encode(raw).decode("ascii"), "dtype": value.dtype.str,
                "shape": list(value.shape), **layout}
    if isinstance(value, (tuple, list)):
        return {"sequence": [encode(v) for v in value], "kind": type(value).__name__}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"mapping": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, (bool, np.bool_)):
        return {"scalar": bool(value), "type": "bool"}
    if isinstance(value, (numbers.Integral, np.integer)):
        return {"scalar": int(value), "type": type(value).__name__}
    if isinstance(value, (numbers.Real, np.floating)) and not isinstance(value, complex):
        return {"scalar": float(value), "type": type(value).__name__}
    if isinstance(value, str):
        return {"text": value}
    if value is None:
        return {"none": True}
    return {"other": type(value).__name__}


def decode(blob, resolve=None):
    """Inverse of ``encode``; ``resolve`` turns ``{"learner": name}`` or ``{"callback": id}``
    references into objects (the kernel's functions, or stand-ins); unknown things become Opaque."""
    if not isinstance(blob, dict):
        return Opaque("malformed")
    if "array" in blob:
        dtype = np.dtype(blob["dtype"])
        if dtype.kind not in "biuf" or dtype.hasobject:
            return Opaque(f"array of dtype {dtype}")
        raw = base64.b64decode(blob["array"])
        shape = tuple(int(n) for n in blob["shape"])
        try:
            return _rebuild(raw, dtype, shape, blob)
        except (TypeError, ValueError):            # strides or sizes that do not fit the bytes sent
            return Opaque(f"array that does not fit its shape {shape}")
    if "sequence" in blob:
        items = [decode(v, resolve) for v in blob["sequence"]]
        return items if blob.get("kind") == "list" else tuple(items)
    if "mapping" in blob:
        return {str(k): decode(v, resolve) for k, v in blob["mapping"].items()}
    if "scalar" in blob:
        kind = blob.get("type", "")
        if kind == "bool":
            return bool(blob["scalar"])
        if isinstance(blob["scalar"], int) and not isinstance(blob["scalar"], bool):
            return int(blob["scalar"])
        return float(blob["scalar"])
    if "text" in blob:
        return str(blob["text"])
    if "none" in blob:
        return None
    if "generator" in blob:
        return _generator(blob["generator"]) if isinstance(blob["generator"], dict) else Opaque("malformed")
    if resolve is not None and ("learner" in blob or "callback" in blob or "shared" in blob):
        return resolve(blob)
    return Opaque(str(blob.get("other", "unknown")))


class Opaque:
    """Stands for a value that could not cross the wire (an object of an unexpected type)."""

    def __init__(self, description):
        self.description = description

    def __repr__(self):
        return f"<{self.description}>"


def digest(value):
    """A fingerprint of an argument (arrays, dicts of arrays) to tell whether a call changed it."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        h = hashlib.sha256(f"{data.dtype.str}|{data.shape}|".encode())
        h.update(data.tobytes())
        return h.hexdigest()
    if isinstance(value, dict):
        parts = {str(k): digest(v) for k, v in value.items()}
        return {k: v for k, v in parts.items() if v is not None} or None
    if isinstance(value, (list, tuple)):
        parts = [digest(v) for v in value]
        return parts if any(p is not None for p in parts) else None
    return None


# ------------------------------------------------------------------ in the kernel

class _Discard:
    """A stream that drops what a learner's function prints while the grader calls it."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


def ask_grader(message):
    """One request to the grader over the kernel's stdin channel; its JSON reply. ``message`` is
    emptied once encoded, so that what it held is freed before the reply is read (a measured
    call's figure then holds no copy of the batch before it)."""
    text = MAGIC + json.dumps(message)
    message.clear()
    answer = input(text)
    del text
    return json.loads(answer)


def _stand_in(kind, key, ask):
    """A function that asks the grader for the result (a substitute, or a function the grader
    passes as an argument, such as a loss for ``numerical_gradient``)."""

    def stand_in(*args, **kwargs):
        message = {"op": kind, "key": key, "args": [encode(a) for a in args],
                   "kwargs": {k: encode(v) for k, v in kwargs.items()}}
        reply = ask(message)
        del message
        if "error" in reply:
            raise RuntimeError(reply["error"])
        for arg, after in zip(args, reply.get("after") or []):
            if after is not None and isinstance(arg, np.ndarray):
                np.copyto(arg, decode(after))     # the grader's function changed its input
            elif after is not None and isinstance(arg, np.random.Generator):
                moved = decode(after)             # it drew numbers: the caller's generator moves on
                if isinstance(moved, np.random.Generator):
                    arg.bit_generator.state = moved.bit_generator.state
        value = decode(reply["value"])
        del reply                                 # the message is gone; what stays is the value
        return value

    stand_in.__name__ = str(key)
    stand_in.__qualname__ = str(key)
    return stand_in


def _resolver(namespace, ask, shared=()):
    def resolve(blob):
        if "learner" in blob:
            return namespace[blob["learner"]]
        if "shared" in blob:          # one object the calls of a batch share (a Generator drawn from in turn)
            index = blob["shared"]
            return shared[index] if isinstance(index, int) and 0 <= index < len(shared) else Opaque("malformed")
        return _stand_in("callback", blob["callback"], ask)
    return resolve


def _call(call, namespace, ask, shared=()):
    """Make one call; report its output (or exception), whether it changed its inputs, the
    warnings the grader asked for, and its time. ``shared``: the batch's shared arguments."""
    out = {}
    resolve = _resolver(namespace, ask, shared)
    try:
        target = decode(call["target"], resolve)
    except KeyError as exc:
        return {"raised": f"NameError: name {exc.args[0]!r} is not defined", "type": "NameError"}
    args = [decode(a, resolve) for a in call.get("args", [])]
    kwargs = {k: decode(v, resolve) for k, v in call.get("kwargs", {}).items()}
    options = call.get("options", {})
    if options.get("global_generator"):      # a fresh state from the OS: no seed the call sets can equal it
        np.random.seed(None)
        global_before = np.random.get_state()
    saved = sys.stdout, sys.stderr
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, \
            np.errstate(**({"divide": "warn", "over": "warn", "invalid": "warn", "under": "ignore"}
                           if options.get("warnings") else {"all": "ignore"})):
        warnings.simplefilter("always" if options.get("warnings") else "ignore")
        sys.stdout = sys.stderr = _Discard()
        value = None
        try:
            value = target(*args, **kwargs)
        except (Exception, SystemExit) as exc:
            out["raised"] = f"{type(exc).__name__}: {exc}"[:600]
            out["type"] = type(exc).__name__
        finally:
            sys.stdout, sys.stderr = saved
    out["seconds"] = time.perf_counter() - started
    if options.get("global_generator"):      # did it reseed or draw from NumPy's global generator?
        after = np.random.get_state()
        out["global_generator_moved"] = not (after[0] == global_before[0] and np.array_equal(after[1], global_before[1])
                                             and tuple(after[2:]) == tuple(global_before[2:]))
    if "raised" not in out:
        out["value"] = encode(value)
    if options.get("warnings"):
        out["warnings"] = [f"{w.category.__name__}: {w.message}"[:300] for w in caught
                           if issubclass(w.category, RuntimeWarning)]
    out["after"] = [digest(a) for a in args]
    return out


def _install(names, namespaces, ask):
    """Point ``names`` at stand-ins in every namespace; returns what to put back."""
    missing = object()
    saved = []
    for namespace in namespaces:
        saved.append((namespace, {n: namespace.get(n, missing) for n in names}))
        namespace.update({n: _stand_in("substitute", n, ask) for n in names})
    return saved, missing


def _restore(saved, missing):
    for namespace, before in saved:
        for name, value in before.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value


KEPT = "__attention_kept__"      # {test: {name: function}}: what each name stood for at a test's cell


def _functions(namespace, test, stand_ins):
    """Where the calls of ``test`` find the learner's functions: those kept at its cell (the
    grader's snippet there wrote them into ``namespace[KEPT]``), then the namespace itself. A name
    that has a stand-in is always the stand-in."""
    kept = namespace.get(KEPT)
    chosen = kept.get(test) if isinstance(kept, dict) and test is not None else None
    if not isinstance(chosen, dict):
        return namespace
    import collections

    return collections.ChainMap({k: v for k, v in chosen.items() if k not in stand_ins}, namespace)


def serve(namespace, ask):
    """Make the grader's calls in ``namespace`` until it says stop (``ask``: the transport)."""
    reply = ask({"op": "ready"})
    stand_ins = set(reply.get("substitutes", []))
    functions = _functions(namespace, reply.get("kept"), stand_ins)
    namespaces = [namespace]
    for name in reply.get("globals_of", []):
        space = getattr(functions.get(name), "__globals__", None)
        if isinstance(space, dict) and all(space is not s for s in namespaces):
            namespaces.append(space)
    saved, missing = _install(reply.get("substitutes", []), namespaces, ask)
    try:
        while "calls" in reply:
            shared = [decode(blob) for blob in reply.get("shared") or []]    # decoded once for the batch
            message = {"op": "results", "results": [_call(c, functions, ask, shared) for c in reply["calls"]]}
            reply = shared = None     # this batch's arguments are freed before the next batch arrives
            reply = ask(message)
    finally:
        _restore(saved, missing)


def main():
    """In a kernel: serve the grader over the stdin channel."""
    from IPython import get_ipython

    serve(get_ipython().user_ns, ask_grader)
