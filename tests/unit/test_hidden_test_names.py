"""Which hidden test a test cell runs is named in its metadata (``attention_course.spec``), never
parsed from its source: every lesson's source notebook names one for each hidden block, the same
its instructor's ``check("...")`` call runs, and ``make release`` refuses a lesson that names none
or one no lesson folder registers."""
import copy
import re

import nbformat
import pytest

from attention_grading.cells import split_hidden
from attention_grading.cli.release import check_hidden_tests_named
from attention_grading.errors import UnnamedHiddenTest
from attention_grading.hidden import registry
from attention_grading.paths import COURSE_ROOT as ROOT

from . import factories

LESSONS = sorted(p.name for p in (ROOT / "source").iterdir() if p.is_dir())


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_hidden_block_names_its_registered_hidden_test_in_metadata(lesson):
    """Each hidden block's cell names a registered hidden test, the one its ``check`` call runs when
    the instructor runs the source notebook."""
    nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    named = check_hidden_tests_named(ROOT, lesson)
    assert named and set(named.values()) <= set(registry.load())
    for index, name in named.items():
        called = re.findall(r'check\("(\w+)"\)', split_hidden(nb.cells[index].source)[1])
        assert called == [name], (lesson, index, name, called)


def test_a_lesson_whose_hidden_test_is_unnamed_or_unknown_is_not_released(tmp_path):
    """No ``attention_course.spec``, or one no lesson folder registers: refused, naming the cell or
    the name."""
    nb = factories.lesson(functions=("softmax",))
    folder = tmp_path / "source" / "01_context_vectors"
    folder.mkdir(parents=True)
    path = folder / "01_context_vectors.ipynb"
    unnamed = copy.deepcopy(nb)
    for cell in unnamed.cells:
        cell.metadata.pop("attention_course", None)
    nbformat.write(unnamed, path)
    with pytest.raises(UnnamedHiddenTest, match="'softmax_matches_reference' has hidden tests but its metadata names none"):
        check_hidden_tests_named(tmp_path, "01_context_vectors")
    unknown = copy.deepcopy(nb)
    for cell in unknown.cells:
        if "attention_course" in cell.metadata:
            cell.metadata["attention_course"]["spec"] = "no_such_test"
    nbformat.write(unknown, path)
    with pytest.raises(UnnamedHiddenTest, match="no lesson folder's spec.py registers: no_such_test"):
        check_hidden_tests_named(tmp_path, "01_context_vectors")
    nbformat.write(nb, path)
    assert list(check_hidden_tests_named(tmp_path, "01_context_vectors").values()) == ["softmax"]
