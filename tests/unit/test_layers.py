"""The grading package is a house of floors (docs/architecture.md): a module imports only modules
of its own floor or lower ones, no import goes round in a circle, and no module is over 400 lines.
Read from the source with ``ast`` (nothing is imported); every import counts, those inside
functions too."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "instructor" / "grading" / "attention_grading"
LEARNER_PACKAGE = ROOT / "src" / "attention_course"

#: The floors, bottom to top: the one place that says which package may import which.
FLOORS = {
    "attention_grading": 0,                      # results, errors, paths, course, cells, learner_text
    "attention_grading.hidden": 1,               # what a hidden test is and how it is judged
    "attention_grading.kernels.sandbox": 1,      # the operating system's walls
    "attention_grading.kernels": 2,              # kernels, their time, their outputs, a notebook's run
    "attention_grading.steps": 3,                # the nbgrader steps
    "attention_grading.store": 4,                # the gradebook and what is made from it
    "attention_grading.run": 5,                  # plan and run jobs
    "attention_grading.cli": 6,                  # the command lines
}
MAX_LINES = 400
#: Modules over MAX_LINES that other work splits (each fails here, strictly, once it is split).
KNOWN_LONG = {}
#: One folder a lesson: its spec modules belong to ``hidden/specs`` (the finder there imports
#: ``instructor/lessons/NN_name/spec.py`` as ``attention_grading.hidden.specs.lessonNN_name``, another
#: module ``rest.py`` of the folder as ``lessonNN_rest``); its catalogue and claims are the tests'.
LESSONS = ROOT / "instructor" / "lessons"
NOT_MODULES = ("catalogue.py", "claims.py", "reference.py")    # the tests', the reference's


def modules(folder=PACKAGE):
    """{dotted name: (path, is a package)} of every module of the package in ``folder``."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        if "scaffold_templates" in path.parts:        # templates of files for a new lesson, not modules
            continue
        parts = [folder.name, *path.relative_to(folder).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    if folder == PACKAGE:
        for path in sorted(LESSONS.glob("[0-9][0-9]_*/*.py")):
            if path.name not in NOT_MODULES:
                number = path.parent.name[:2]
                name = path.parent.name if path.stem == "spec" else f"{number}_{path.stem}"
                found[f"attention_grading.hidden.specs.lesson{name}"] = (path, False)
    return found


MODULES = modules()
#: The learner's package (no floors: it has none of the grader's layers), checked for circles.
LEARNER_MODULES = modules(LEARNER_PACKAGE)


def floor(module):
    package = max((name for name in FLOORS if module == name or module.startswith(name + ".")), key=len)
    return FLOORS[package]


def imports(module, table=MODULES):
    """The modules of ``table``'s package that ``module`` imports (a package's ``__init__`` only
    when the package itself is what is imported)."""
    top = next(iter(table)).split(".")[0]
    path, package = table[module]
    here = module.split(".") if package else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == top}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*here[:len(here) - node.level + 1], *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == top:
                base = node.module
            else:
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in table else base)
    unknown = sorted(name for name in found if name not in table)
    assert not unknown, f"{module} imports modules that do not exist: {unknown}"
    return found - {module}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_floor(module):
    """Data flows one way: plan and run above the store, the store above the steps, the steps above
    the kernels, the kernels above the hidden tests and the sandbox, everything above the root's
    records."""
    higher = sorted(f"{name} (floor {floor(name)})" for name in imports(module) if floor(name) > floor(module))
    assert not higher, f"{module} (floor {floor(module)}) imports {', '.join(higher)}"


def test_every_package_has_a_floor():
    """A new package gets its place in FLOORS (and in docs/architecture.md) before it gets modules."""
    packages = sorted(name for name, (_, package) in MODULES.items() if package)
    assert all(any(p == f or p.startswith(f + ".") for f in FLOORS) for p in packages)
    assert {f for f in FLOORS} <= set(packages)


@pytest.mark.parametrize("table", [MODULES, LEARNER_MODULES], ids=["attention_grading", "attention_course"])
def test_no_import_goes_round_in_a_circle(table):
    """No module imports, however indirectly, a module that imports it (in the grader's package and
    in the learner's, whose visible checks are packages of modules too)."""
    graph = {module: imports(module, table) for module in table}
    circles, state = [], {}

    def visit(module, path):
        state[module] = "open"
        for name in sorted(graph[module]):
            if state.get(name) == "open":
                circles.append(path[path.index(name):] + [name])
            elif name not in state:
                visit(name, path + [name])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(" -> ".join(circle) for circle in circles)


def _long_modules():
    for folder in (PACKAGE, LEARNER_PACKAGE):
        for path in sorted(folder.rglob("*.py")):
            yield str(path.relative_to(ROOT))
    for path in sorted(LESSONS.glob("[0-9][0-9]_*/*.py")):
        if path.name not in NOT_MODULES:
            yield str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=KNOWN_LONG[p])) if p in KNOWN_LONG else p
    for p in _long_modules()])
def test_no_module_is_over_400_lines(path):
    """Small modules with one job: at most 400 lines each, the learner's visible checks and each
    lesson's hidden tests (``instructor/lessons/<id>/``) too (a known exception would be listed in
    KNOWN_LONG, and fail this test as soon as it is split)."""
    lines = len((ROOT / path).read_text().splitlines())
    assert lines <= MAX_LINES, f"{path} has {lines} lines (at most {MAX_LINES})"
