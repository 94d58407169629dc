"""What a kernel's outputs may add to a graded notebook: well-formed outputs, within caps.

``OutputBudget`` is kept by ``GuardedExecute`` for one notebook. Every output a kernel sends
(printed text, display data, results, errors, an update of an earlier display, widget messages)
is measured before it is kept, without trusting its shape:

- an output that is malformed (not what nbformat allows) or nested deeper than ``max_depth`` is
  replaced by a note;
- printed text past ``max_stream_chars`` per cell is cut;
- an output that would take a cell past ``max_cell_bytes``, or the notebook past
  ``max_notebook_bytes``, and every output past ``max_outputs`` in a cell, is dropped, with one
  note per cell saying so.

Everything received counts, kept or not (cleared outputs included), so the autograded notebook,
its feedback page and the grader's memory stay bounded whatever a submission prints.
"""
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import output_from_msg

CUT = "\n[... further output cut by the grader ...]\n"


class TooDeep(ValueError):
    """A value nested deeper than allowed."""


def json_size(value, max_depth):
    """About how many bytes ``value`` (JSON-like) takes, measured without recursion; ``TooDeep``
    past ``max_depth`` levels of nesting."""
    size, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise TooDeep(f"nested deeper than {max_depth} levels")
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict):
            size += 2
            for key, child in item.items():
                size += len(str(key)) + 4
                stack.append((child, depth + 1))
        elif isinstance(item, (list, tuple)):
            size += 2
            stack.extend((child, depth + 1) for child in item)
        else:
            size += 8
    return size


def note(text):
    """An output the grader adds to say what it did to the kernel's outputs (never scores)."""
    return NotebookNode(output_type="stream", name="stdout", text=f"[{text}]\n")


class OutputBudget:
    """The caps of one notebook's outputs (see the module docstring)."""

    def __init__(self, max_outputs, max_stream_chars, max_cell_bytes, max_notebook_bytes, max_depth):
        self.max_outputs, self.max_stream_chars = max_outputs, max_stream_chars
        self.max_cell_bytes, self.max_notebook_bytes = max_cell_bytes, max_notebook_bytes
        self.max_depth = max_depth
        self.notebook_bytes = 0
        self.cell_bytes, self.printed, self.noted, self.full = {}, {}, set(), set()

    def admit(self, msg, cell_index, kept):
        """The output ``msg`` becomes in cell ``cell_index`` (which holds ``kept`` outputs): an
        output node, a note, or None (dropped)."""
        if cell_index in self.full:
            return None
        try:
            size = json_size(msg.get("content"), self.max_depth)
            if msg.get("header", {}).get("msg_type") == "stream":
                return self._stream(msg, cell_index, kept, size)
            output = output_from_msg(msg)          # nbformat's shape, checked
        except Exception as exc:     # TooDeep, or not an output nbformat allows (several kinds)
            return self._once(cell_index, f"an output the grader cannot keep was dropped ({type(exc).__name__})")
        if kept >= self.max_outputs or not self.spend(cell_index, size):
            self.full.add(cell_index)
            return self._once(cell_index, "further outputs of this cell dropped by the grader "
                                          f"(at most {self.max_outputs} outputs, {self.max_cell_bytes:,} bytes "
                                          f"per cell and {self.max_notebook_bytes:,} per notebook)")
        return output

    def _stream(self, msg, cell_index, kept, size):
        content = msg["content"]
        text, name = content.get("text"), content.get("name")
        if not isinstance(text, str) or name not in ("stdout", "stderr"):
            raise ValueError("a stream output that is not text")
        used = self.printed.get(cell_index, 0)
        if used >= self.max_stream_chars:
            return None
        self.printed[cell_index] = used + len(text)
        if used + len(text) > self.max_stream_chars:
            text = text[: self.max_stream_chars - used] + CUT
        if kept >= self.max_outputs or not self.spend(cell_index, min(size, len(text) + 64)):
            self.full.add(cell_index)
            return self._once(cell_index, "further output of this cell dropped by the grader")
        return NotebookNode(output_type="stream", name=name, text=text)

    def spend(self, cell_index, size):
        """Count ``size`` bytes against the cell and the notebook; False (nothing counted) when
        either cap would be passed."""
        cell = self.cell_bytes.get(cell_index, 0)
        if cell + size > self.max_cell_bytes or self.notebook_bytes + size > self.max_notebook_bytes:
            return False
        self.cell_bytes[cell_index] = cell + size
        self.notebook_bytes += size
        return True

    def measure(self, value):
        """The size of ``value`` if it may be kept at all, else None (too deep, or larger than a
        cell may hold)."""
        try:
            size = json_size(value, self.max_depth)
        except TooDeep:
            return None
        return size if size <= self.max_cell_bytes else None

    def _once(self, cell_index, text):
        if cell_index in self.noted:
            return None
        self.noted.add(cell_index)
        return note(text)

    def clip(self, text, limit=None):
        """A string a kernel sent (an error's message, a traceback line), at most ``limit``
        characters (default: the printed-text cap)."""
        limit = self.max_stream_chars if limit is None else limit
        text = text if isinstance(text, str) else repr(text)
        return text if len(text) <= limit else text[:limit] + CUT
