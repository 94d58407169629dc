"""The wire form of a record that crosses machines: JSON for its fields, raw bytes for its files.

A grading job's outcome comes back from a Dask worker (``cluster``) as bytes the grader parses,
never as an object it unpickles: a worker could be compromised, and unpickling runs whatever the
bytes say. ``encode`` writes any dataclass: a field typed ``dict[str, bytes]`` (files) travels as
blobs after the JSON, every other field as JSON. ``decode`` rebuilds it from the class's type hints
and checks each value against them (nested dataclasses, ``list[...]``, ``Optional[...]``), within
size limits; anything else is a ``WireError``. A field added to the record later (typed) travels
with no change here.

Layout: ``MAGIC``, the JSON header's length (8 bytes, big-endian), the header
(``{"fields": {...}, "files": [[field, name, length], ...]}``), then the files' bytes in order.
"""
import dataclasses
import json
import types
import typing

MAGIC = b"attention-grading-record/1\n"
_LENGTH = 8


class WireError(ValueError):
    """Bytes that are not a well-formed record of the expected class."""


def _is_files(hint):
    return typing.get_origin(hint) is dict and typing.get_args(hint) == (str, bytes)


def _hints(cls):
    return typing.get_type_hints(cls)


def _plain(value):
    """A JSON-ready copy of ``value`` (dataclasses as dicts)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def encode(record):
    """``record`` (a dataclass instance) as bytes."""
    hints = _hints(type(record))
    fields, files, blobs = {}, [], []
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if _is_files(hints[f.name]):
            for name, data in value.items():
                files.append([f.name, name, len(data)])
                blobs.append(bytes(data))
        else:
            fields[f.name] = _plain(value)
    header = json.dumps({"fields": fields, "files": files}, separators=(",", ":")).encode()
    return b"".join([MAGIC, len(header).to_bytes(_LENGTH, "big"), header, *blobs])


def decode(cls, data, max_bytes, max_header_bytes):
    """The ``cls`` record in ``data`` (bytes from elsewhere), checked against ``cls``'s type
    hints; ``WireError`` when it is not one, or is larger than the limits."""
    if not isinstance(data, (bytes, bytearray)):
        raise WireError(f"expected bytes, got {type(data).__name__}")
    if len(data) > max_bytes:
        raise WireError(f"{len(data):,} bytes, more than the {max_bytes:,} allowed")
    if not data.startswith(MAGIC):
        raise WireError("not a grading record (unknown format)")
    start = len(MAGIC) + _LENGTH
    size = int.from_bytes(data[len(MAGIC):start], "big")
    if size > max_header_bytes or start + size > len(data):
        raise WireError(f"a header of {size:,} bytes (at most {max_header_bytes:,}, within the record)")
    try:
        header = json.loads(bytes(data[start:start + size]))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"its header is not JSON: {type(exc).__name__}") from None
    if not (isinstance(header, dict) and isinstance(header.get("fields"), dict)
            and isinstance(header.get("files"), list)):
        raise WireError("its header has no fields and files")
    hints = _hints(cls)
    values = dict(header["fields"])
    file_fields = {name for name, hint in hints.items() if _is_files(hint)}
    for name in file_fields:
        values[name] = {}
    offset = start + size
    for entry in header["files"]:
        if not (isinstance(entry, list) and len(entry) == 3 and entry[0] in file_fields
                and isinstance(entry[1], str) and isinstance(entry[2], int) and not isinstance(entry[2], bool)
                and 0 <= entry[2] <= len(data) - offset):
            raise WireError(f"a file entry that does not fit: {str(entry)[:200]}")
        field, name, length = entry
        values[field][name] = bytes(data[offset:offset + length])
        offset += length
    if offset != len(data):
        raise WireError(f"{len(data) - offset:,} bytes beyond its files")
    return parse(cls, values)


def parse(hint, value, where="record"):
    """``value`` (from JSON) as ``hint`` says: a dataclass, ``list[X]``, ``dict[str, X]``,
    ``Optional[X]``, str, int, float, bool, ``list``, ``dict``; ``WireError`` otherwise."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise WireError(f"{where}: expected an object, got {type(value).__name__}")
        hints = _hints(hint)
        known = {f.name: f for f in dataclasses.fields(hint)}
        kwargs = {}
        for name, item in value.items():
            if name not in known:
                raise WireError(f"{where}: unknown field {str(name)[:80]!r}")
            kwargs[name] = parse(hints[name], item, f"{where}.{name}")
        missing = [name for name, f in known.items() if name not in kwargs and f.default is dataclasses.MISSING
                   and f.default_factory is dataclasses.MISSING]
        if missing:
            raise WireError(f"{where}: missing {', '.join(missing)}")
        return hint(**kwargs)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return parse(option, value, where)
            except WireError:
                continue
        raise WireError(f"{where}: {type(value).__name__} is none of {hint}")
    if hint is type(None):
        if value is None:
            return None
        raise WireError(f"{where}: expected null")
    if origin is list or hint is list:
        if not isinstance(value, list):
            raise WireError(f"{where}: expected a list, got {type(value).__name__}")
        return [parse(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise WireError(f"{where}: expected an object, got {type(value).__name__}")
        if args and args[1] is bytes:
            if not all(isinstance(k, str) and isinstance(v, bytes) for k, v in value.items()):
                raise WireError(f"{where}: expected files")
            return value
        return {k: parse(args[1], v, f"{where}.{k}") for k, v in value.items()} if args else value
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hint is typing.Any or hint is object:
        return value
    raise WireError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {type(value).__name__}")
