"""Build learner submissions from the release and the solutions, as a learner would."""
import nbformat


def cell_role(cell):
    return cell.metadata.get("nbgrader", {})


def grade_id(cell):
    return cell_role(cell).get("grade_id")


def is_solution_code(cell):
    return cell.cell_type == "code" and cell_role(cell).get("solution")


def is_test(cell):
    meta = cell_role(cell)
    return cell.cell_type == "code" and meta.get("grade") and not meta.get("solution")


def functions_of_tests(nb):
    """Map each test cell's grade_id to the graded function (solution cell) it follows."""
    owner, mapping = None, {}
    for cell in nb.cells:
        if is_solution_code(cell):
            owner = grade_id(cell)
        elif is_test(cell):
            mapping[grade_id(cell)] = owner
    return mapping


def solved(release_path, solution_path):
    """The release with every answer cell filled in from the solution notebook."""
    release = nbformat.read(release_path, as_version=4)
    answers = {grade_id(c): c.source for c in nbformat.read(solution_path, as_version=4).cells
               if cell_role(c).get("solution")}
    for cell in release.cells:
        if cell_role(cell).get("solution"):
            cell.source = answers[grade_id(cell)]
    return release


def with_answer(nb, function, source):
    """A copy of ``nb`` whose solution cell ``function`` holds ``source``."""
    nb = nbformat.from_dict(nb)
    matches = [c for c in nb.cells if grade_id(c) == function and is_solution_code(c)]
    assert len(matches) == 1, f"no single solution cell with grade_id {function!r}"
    matches[0].source = source.strip("\n")
    return nb
