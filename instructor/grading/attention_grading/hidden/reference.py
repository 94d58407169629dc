"""The hidden reference implementation (the package ``instructor/reference/attention_reference``,
which loads each lesson's ``instructor/lessons/<id>/reference.py``), as the grader loads it: in the
grading process only, never in a learner's kernel."""
import importlib.util
import sys

from ..paths import REFERENCE_DIR

REFERENCE_PACKAGE = "attention_reference"


def reference():
    """The reference package (instructor-only), loaded once per process from
    ``instructor/reference`` without putting that folder on ``sys.path``: nothing else of it
    becomes importable, and the grading process's path is as it was."""
    loaded = sys.modules.get(REFERENCE_PACKAGE)
    if loaded is not None:
        return loaded
    init = REFERENCE_DIR / REFERENCE_PACKAGE / "__init__.py"
    spec = importlib.util.spec_from_file_location(REFERENCE_PACKAGE, init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[REFERENCE_PACKAGE] = module      # its own relative imports find it there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[REFERENCE_PACKAGE]
        raise
    return module
