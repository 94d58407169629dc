"""output_caps: every kind of output a kernel sends is kept only well-formed and within the caps
per cell and per notebook."""
import pytest

from attention_grading.kernels.output_caps import OutputBudget, TooDeep, json_size


def _message(kind, **content):
    return {"header": {"msg_type": kind}, "parent_header": {}, "content": content}


def _display(text):
    return _message("display_data", data={"text/plain": text}, metadata={})


def _budget(**caps):
    settings = dict(max_outputs=5, max_stream_chars=100, max_cell_bytes=1000, max_notebook_bytes=3000,
                    max_depth=8)
    return OutputBudget(**{**settings, **caps})


def test_json_size_measures_without_recursion():
    """Sizes add up; nesting past the limit raises TooDeep at any depth, without a RecursionError."""
    assert json_size({"a": "xy", "b": [1, 2]}, 4) > 4
    deep = []
    for _ in range(10_000):          # ten times Python's recursion limit
        deep = [deep]
    with pytest.raises(TooDeep):
        json_size(deep, 32)


@pytest.mark.parametrize("message", [
    _message("display_data", data="not a mapping", metadata=[]),
    _message("execute_result", data={"image/png": {"nested": [1]}}, metadata={}, execution_count="one"),
    _message("stream", name="stdout", text={"not": "text"}),
    _message("stream", name="elsewhere", text="x"),
    _message("error", ename=3, evalue=None, traceback={"a": 1}),
    _message("display_data", data={"text/plain": [[[[[[[[[["deep"]]]]]]]]]]}, metadata={}),
    _message("comm_open", data={}),
], ids=["data not a mapping", "bad result", "text not text", "unknown stream", "bad error", "too deep",
        "not an output"])
def test_a_malformed_output_becomes_one_note(message):
    """What nbformat does not allow is replaced by a note (once per cell), never kept or raised."""
    budget = _budget()
    first, second = budget.admit(message, 0, 0), budget.admit(message, 0, 1)
    assert first.output_type == "stream" and "cannot keep" in first.text and second is None


def test_printed_text_is_cut_per_cell():
    """Text past max_stream_chars is cut with a note; later text of the cell is dropped."""
    budget = _budget()
    first = budget.admit(_message("stream", name="stdout", text="a" * 80), 0, 0)
    second = budget.admit(_message("stream", name="stderr", text="b" * 80), 0, 1)
    assert first.text == "a" * 80 and second.text.startswith("b" * 20) and "cut by the grader" in second.text
    assert budget.admit(_message("stream", name="stdout", text="c"), 0, 2) is None
    assert budget.admit(_message("stream", name="stdout", text="d"), 1, 0).text == "d"


def test_every_output_counts_against_the_cell_and_the_notebook():
    """Display data past a cell's bytes, or the notebook's, or past max_outputs, is dropped with one
    note per cell."""
    budget = _budget()
    assert budget.admit(_display("x" * 600), 0, 0).output_type == "display_data"
    note = budget.admit(_display("x" * 600), 0, 1)
    assert "dropped by the grader" in note.text and budget.admit(_display("y"), 0, 2) is None
    kept = [budget.admit(_display("z" * 600), cell, 0) for cell in range(1, 6)]
    assert [k.output_type for k in kept[:3]] == ["display_data"] * 3
    assert "dropped" in kept[3].text and budget.notebook_bytes <= 3000
    crowded = _budget()
    outs = [crowded.admit(_display("w"), 9, n) for n in range(7)]
    assert [o.output_type for o in outs[:5]] == ["display_data"] * 5 and "dropped" in outs[5].text


def test_clip_keeps_strings_short():
    """An error's fields from a kernel are clipped to the printed-text cap."""
    budget = _budget()
    assert budget.clip("e" * 500).startswith("e" * 100) and len(budget.clip("e" * 500)) < 200
    assert budget.clip(None) == "None"
