"""No file of the repository keeps a merge's conflict markers (one did, inside a docstring, where
nothing else would notice)."""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".git", ".venv", "_build", "node_modules", "__pycache__", ".pytest_cache"}
TEXT = {".py", ".md", ".ipynb", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".html", ".j2", ".css", ".js"}
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)


def text_files():
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in SKIP]
        for name in files:
            path = Path(folder) / name
            if path.suffix in TEXT or name == "Makefile":
                yield path


def test_no_file_keeps_conflict_markers():
    """A merge left no ``<<<<<<<``, ``=======`` or ``>>>>>>>`` line in any text file."""
    found = [str(path.relative_to(ROOT)) for path in text_files()
             if MARKER.search(path.read_text(errors="replace"))]
    assert not found, f"conflict markers in {found}"
