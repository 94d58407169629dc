"""Text that came from a learner (their notebook, or their code while it ran), made safe to keep.

- ``well_formed``: a notebook's JSON may hold any code point its escapes can write, lone UTF-16
  surrogates (``"\\ud800"``) included, which no UTF-8 file, message or database can hold: each
  becomes U+FFFD, so that everything a notebook holds is graded (a cell that cannot run then
  scores 0) and never fails the grading. ``steps.well_formed_text.WellFormedText`` does it to a
  whole notebook (sources, outputs, metadata, attachments), before anything else reads it and
  after the kernel added its outputs.
- ``scrubbed``: what a learner's code says while a hidden test runs (an exception's type and
  message, a warning) reaches the verdict, and the verdict reaches the feedback. The hidden cases
  must not: the text keeps its words and small integers (an axis, a shape), loses every number
  with a decimal point or an exponent, every run of more than three digits, every long token
  (base64, hex) and all but the first few numbers, and is cut to a few lines' length.
"""
import re


REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE][-+]?\d))(?:[eE][-+]?\d+)?|(?<![\w.])[-+]?\d+[eE][-+]?\d+")
_LONG_DIGITS = re.compile(r"\d{4,}")
_LONG_TOKEN = re.compile(r"[^\s'\"(),\[\]{}:;=]{25,}")
_NUMBER = re.compile(r"\d+")
HIDDEN = "…"
MAX_NUMBERS = 8


def well_formed(text):
    """``text`` with every lone surrogate replaced by U+FFFD (it stays as it is otherwise)."""
    return _SURROGATE.sub(REPLACEMENT, text) if isinstance(text, str) else text


def well_formed_value(value):
    """A JSON-like value (dicts, lists, strings) with every string, keys included, ``well_formed``
    (changed in place where it is a dict or a list; without recursion, however deep it nests)."""
    if not isinstance(value, (dict, list)):
        return well_formed(value)
    stack = [value]
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            for key in list(container):
                item = container[key]
                fixed = well_formed(key) if isinstance(key, str) else key
                if fixed != key:
                    del container[key]
                container[fixed] = well_formed(item) if isinstance(item, str) else item
                if isinstance(item, (dict, list)):
                    stack.append(item)
        else:
            for index, item in enumerate(container):
                if isinstance(item, str):
                    container[index] = well_formed(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
    return value


def scrubbed(text, limit=200):
    """A learner's message, ``well_formed``, on one line, without anything that could carry a
    value of the hidden cases (see the module docstring), at most ``limit`` characters."""
    text = well_formed(text if isinstance(text, str) else repr(text))
    text = _CONTROL.sub(" ", text.replace("\n", " ").replace("\t", " "))
    text = _LONG_TOKEN.sub(HIDDEN, text)
    text = _FLOAT.sub(HIDDEN, text)
    text = _LONG_DIGITS.sub(HIDDEN, text)
    seen = [0]

    def keep_first_numbers(match):
        seen[0] += 1
        return match.group(0) if seen[0] <= MAX_NUMBERS else HIDDEN

    text = _NUMBER.sub(keep_first_numbers, text)
    text = re.sub(r" {2,}", " ", text).strip()
    return text if len(text) <= limit else text[:limit - 1] + HIDDEN


def scrubbed_name(name):
    """An exception's type name as a learner's code raised it: a short identifier, or "Exception"."""
    name = scrubbed(name, 60)
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) else "Exception"
