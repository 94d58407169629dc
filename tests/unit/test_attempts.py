"""Attempts (``attention_grading.hidden.attempts``): every byte handed in names a submission, the course's
ledger numbers its attempts, and each attempt draws its own hidden cases."""
import json
import multiprocessing
import os

import nbformat
import numpy as np
import pytest

from attention_grading.hidden import registry
from attention_grading.hidden.cases import case_generator
from attention_grading.hidden.attempts import AttemptLedger, LedgerError, case_key, handed_in_digest
from attention_grading.learner_text import scrubbed
from attention_grading.steps.well_formed_text import WellFormedText

LESSON = "01_context_vectors"


def hand_in(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    return folder


BASE = {f"{LESSON}.ipynb": b'{"cells": []}', "timestamp.txt": b"2026-12-01 10:00:00.000000 UTC"}


@pytest.mark.parametrize("change", [
    {"timestamp.txt": b"2026-12-01 10:00:01.000000 UTC"},
    {"answers.json": b"{}"},
    {".ipynb_checkpoints/answers.json": b"{}"},
    {"__pycache__/answers.pyc": b"\0"},
    {"a/b/c.txt": b""},
    {f"{LESSON}.ipynb": b'{"cells": [] }'},
])
def test_every_byte_handed_in_names_the_submission(tmp_path, change):
    """A file added or changed anywhere in the folder (editor leftovers and the time nbgrader wrote
    included) makes another submission; the same files, written again later, the same one."""
    first = handed_in_digest(hand_in(tmp_path / "first", BASE))
    again = hand_in(tmp_path / "again", BASE)
    os.utime(again / "timestamp.txt", (1, 1))
    assert handed_in_digest(again) == first
    assert handed_in_digest(hand_in(tmp_path / "changed", {**BASE, **change})) != first


def test_a_link_or_an_empty_folder_changes_the_submission_too(tmp_path):
    first = handed_in_digest(hand_in(tmp_path / "first", BASE))
    linked = hand_in(tmp_path / "linked", BASE)
    os.symlink("/etc/passwd", linked / "passwd")
    emptied = hand_in(tmp_path / "emptied", BASE)
    (emptied / "empty").mkdir()
    assert len({first, handed_in_digest(linked), handed_in_digest(emptied)}) == 3


def test_the_ledger_numbers_attempts_a_b_a_as_three(tmp_path):
    """The same files graded again are the same attempt; anything else is the next one, even the
    files of an earlier attempt handed in again. The ledger lives in history/, never under submitted/."""
    ledger = AttemptLedger(tmp_path)
    numbers = [ledger.record("ada", LESSON, digest).number for digest in ("A", "A", "B", "B", "A")]
    assert numbers == [1, 1, 2, 2, 3]
    path = tmp_path / "history" / "ada" / LESSON / "attempts.json"
    stored = json.loads(path.read_text())
    assert stored["format"] == 1 and [(e["attempt"], e["digest"]) for e in stored["attempts"]] == \
        [(1, "A"), (2, "B"), (3, "A")]
    assert all(e["seen"].endswith("+00:00") for e in stored["attempts"])
    assert sorted(p.name for p in path.parent.iterdir()) == [".lock", "attempts.json"]     # no temporary left
    assert [a.number for a in ledger.attempts("ada", LESSON)] == [1, 2, 3]
    assert ledger.attempts("grace", LESSON) == []


@pytest.mark.parametrize("student", ["", ".", "..", "a/b", "x\0y"])
def test_a_name_that_is_not_one_folder_is_refused(tmp_path, student):
    with pytest.raises(LedgerError, match="cannot name a folder"):
        AttemptLedger(tmp_path).record(student, LESSON, "A")


def test_an_unreadable_ledger_stops_grading_rather_than_starting_over(tmp_path):
    """Starting the count again would give a new attempt the cases of an old one."""
    path = tmp_path / "history" / "ada" / LESSON / "attempts.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(LedgerError, match="cannot be read"):
        AttemptLedger(tmp_path).record("ada", LESSON, "A")
    path.write_text('{"attempts": [{"attempt": "one"}]}')
    with pytest.raises(LedgerError, match="not a list of attempts"):
        AttemptLedger(tmp_path).record("ada", LESSON, "A")


def _record_many(root, prefix, count):
    ledger = AttemptLedger(root)
    return [ledger.record("ada", LESSON, f"{prefix}{i}").number for i in range(count)]


def test_two_graders_at_once_never_give_one_number_twice(tmp_path):
    """Two processes recording attempts of one learner at the same time (their own files each
    time): every attempt gets a number of its own, and none is lost."""
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as pool:
        runs = pool.starmap(_record_many, [(tmp_path, "x", 40), (tmp_path, "y", 40)])
    numbers = sorted(n for run in runs for n in run)
    assert numbers == list(range(1, 81))
    assert len(AttemptLedger(tmp_path).attempts("ada", LESSON)) == 80


def test_each_attempt_draws_cases_of_its_own():
    """Two submissions share cases only when they are the same attempt graded again."""
    secret = b"s" * 32

    def draw(key):
        return registry.get("softmax").cases(case_generator(secret, key, "softmax"))[0].args[0]

    first = case_key("ada", LESSON, 1, "A")
    assert np.array_equal(draw(first), draw(case_key("ada", LESSON, 1, "A")))
    for other in (case_key("ada", LESSON, 3, "A"), case_key("grace", LESSON, 1, "A"),
                  case_key("ada", "02_queries_keys_values", 1, "A"), case_key("ada", LESSON, 1, "B")):
        assert not np.array_equal(draw(first), draw(other))


def test_any_text_json_holds_becomes_text_every_file_can_hold():
    """Lone surrogates, in keys and values at any depth, become U+FFFD; the notebook can then be
    written; other text (control characters included) stays as it was."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = '\ud800'  # \x00\x1b")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="\udfff")]
    nb.metadata["\udc80"] = [{"deep": ["\udbff"] * 3}]
    with pytest.raises(UnicodeEncodeError):
        nbformat.writes(nb).encode()
    WellFormedText().preprocess(nb, {})
    text = nbformat.writes(nb)
    text.encode()
    assert nb.cells[0].source == "x = '\ufffd'  # \x00\x1b"
    assert nb.metadata["\ufffd"] == [{"deep": ["\ufffd"] * 3}] and nb.cells[0].outputs[0].text == "\ufffd"


@pytest.mark.parametrize("said, kept, gone", [
    ("could not broadcast shapes (3,4) (5,) along axis 2", "shapes (3,4) (5,) along axis 2", ()),
    ("values 0.12345 -4.5e+03 1e-05 and 123456789", "values", ("0.12345", "4.5e", "1e-05", "123456789")),
    ("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo= hex 0x3fb999999999999a", "hex", ("QUJD", "3fb99")),
    ("1 2 3 4 5 6 7 8 9 10", "1 2 3 4 5 6 7 8", ("9", "10")),
])
def test_a_learners_message_keeps_its_words_and_loses_its_values(said, kept, gone):
    text = scrubbed(said)
    assert kept in text and not any(g in text for g in gone), text
    assert len(scrubbed("word " * 200)) <= 200
