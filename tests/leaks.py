"""What feedback must never show a learner: hidden test code, the reference's code, our paths."""
import json

from conftest import ROOT

MARKERS = ["BEGIN HIDDEN TESTS", "attention_grading", "attention_reference", "/instructor/",
           "hidden.check", "_private_reference"]


def reference_lines():
    """Distinctive lines of the reference implementation (long enough not to occur by chance).

    A line that a model solution also contains may be the learner's own code, shown back to them.
    """
    lines = set()
    for path in [*(ROOT / "instructor" / "reference" / "attention_reference").glob("*.py"),
                 *(ROOT / "instructor" / "lessons").glob("*/reference.py")]:
        lines |= {line.strip() for line in path.read_text().splitlines()
                  if len(line.strip()) > 40 and not line.strip().startswith(("#", '"""', "from ", "import "))}
    solutions = "".join(p.read_text() for p in (ROOT / "solutions").rglob("*.ipynb"))
    return {line for line in lines if json.dumps(line)[1:-1] not in solutions}


def found_in(html, course_root):
    """The leaks present in one feedback file (empty when it is clean)."""
    return ([m for m in MARKERS + [str(course_root)] if m in html]
            + [line for line in reference_lines() if line in html])
