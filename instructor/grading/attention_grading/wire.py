"""A small JSON encoding of arrays, tuples and scalars between the kernel and the judge.

JSON, not pickle: the judge must never run code that a submission chose.
"""
import base64
import numbers

import numpy as np


def encode(value):
    """Encode a learner's return value; anything unexpected is described, not sent."""
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        if data.dtype.kind not in "biuf":
            return {"other": f"array of dtype {data.dtype}"}
        return {
            "array": base64.b64encode(data.tobytes()).decode("ascii"),
            "dtype": data.dtype.str,
            "shape": list(data.shape),
        }
    if isinstance(value, (tuple, list)):
        return {"sequence": [encode(v) for v in value], "kind": type(value).__name__}
    if isinstance(value, (bool, np.bool_)):
        return {"scalar": float(value), "type": "bool"}
    if isinstance(value, (numbers.Real, np.generic)) and not isinstance(value, complex):
        return {"scalar": float(value), "type": type(value).__name__}
    if value is None:
        return {"none": True}
    return {"other": type(value).__name__}


def decode(blob):
    """Inverse of ``encode`` for arrays, sequences and scalars; other things become ``Opaque``."""
    if "array" in blob:
        raw = base64.b64decode(blob["array"])
        return np.frombuffer(raw, dtype=np.dtype(blob["dtype"])).reshape(blob["shape"]).copy()
    if "sequence" in blob:
        return tuple(decode(v) for v in blob["sequence"])
    if "scalar" in blob:
        return float(blob["scalar"])
    if "none" in blob:
        return None
    return Opaque(blob.get("other", "unknown"))


class Opaque:
    """Stands for a value the kernel could not send (an object of an unexpected type)."""

    def __init__(self, description):
        self.description = description

    def __repr__(self):
        return f"<{self.description}>"
