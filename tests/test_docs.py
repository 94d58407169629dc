"""The documentation site (``make docs``) and what its pages promise.

One build of the site, with warnings as errors (``-W --keep-going``: Sphinx's own reference
warnings, MyST's cross-references, formulas MathML cannot read), serves the tests that read it:
every internal link and anchor of every page resolves, every lesson page holds no line of a
solution or of a hidden test. The quick tier runs lesson 01's solution for its page's figures
(seconds) and builds the other lesson pages without outputs; the full tier runs every lesson
(lesson 09 trains for minutes) into the repository's own cache (``docs/_build/lesson-outputs``,
git-ignored), so a later ``make docs`` reuses it. Both build every page from the same sources.

The Markdown is checked as GitHub shows it too (relative links and anchors between pages and to
files of the repository), the commands the guides show exist (``make -n <target>``, nbgrader's own
subcommands and options, ``--help``), the documented nbgrader commands work with a ``PATH`` that
lacks the course environment, and the README stays short.
"""
import functools
import html
import os
import re
import shlex
import subprocess
import sys
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

import background
from conftest import ROOT, copy_course, full_tier, lesson_ids

DOCS = ROOT / "docs"
QUICK_LESSONS = ("01_context_vectors",)
GUIDES = [DOCS / "instructor-guide.md", DOCS / "learner-guide.md", ROOT / "README.md"]
MARKDOWN = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts) + [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]


def sphinx_build(folder, lessons_run, cache):
    """``sphinx-build -W --keep-going`` of docs/ into ``folder/html``: (exit status, its log)."""
    folder = Path(folder)
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-d", str(folder / "doctrees"),
               "-D", f"lesson_outputs_cache={cache}", "-D", f"lesson_outputs_run={','.join(lessons_run)}",
               str(DOCS), str(folder / "html")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    return done.returncode, done.stdout + done.stderr


@background.fixture()
def site(folder, session):
    """The site built once with warnings as errors: (exit status, log, the html folder). Quick tier:
    lesson 01's figures; full tier: every lesson's (its cache the repository's)."""
    if full_tier(session.config):
        lessons, cache = lesson_ids(), DOCS / "_build" / "lesson-outputs"
    else:
        lessons, cache = QUICK_LESSONS, Path(folder) / "lesson-outputs"
    status, log = sphinx_build(folder, lessons, cache)
    return status, log, str(Path(folder) / "html")


# ---------------------------------------------------------------- reading built pages

class _Page(HTMLParser):
    """A built page's text (scripts and styles left out), its ids, and its links and pictures."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.ids, self.links, self._skip = [], set(), [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img" and attrs.get("src"):
            self.links.append(attrs["src"])

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def read_page(path):
    page = _Page()
    page.feed(Path(path).read_text())
    return page


def _flat(text):
    return " ".join(text.split())


def broken_links(html_root):
    """Every internal link or picture of every built page whose file, or whose anchor in it, is
    missing: ``["page -> href: why"]``."""
    html_root = Path(html_root)
    pages = {path.resolve(): read_page(path) for path in html_root.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for href in page.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I):      # http:, https:, mailto:, data:
                continue
            target, _, anchor = html.unescape(href).partition("#")
            file = (path.parent / target).resolve() if target else path
            name = f"{path.relative_to(html_root.resolve())} -> {href}"
            if not file.is_file():
                broken.append(f"{name}: no such file")
            elif anchor and file.suffix == ".html" and anchor not in pages.get(file, page).ids:
                broken.append(f"{name}: no anchor #{anchor}")
    return broken


def test_the_link_check_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    """The checker itself can fail: a link to a page that is not there, and to an anchor that is not."""
    (tmp_path / "a.html").write_text('<h1 id="top">A</h1><a href="b.html#nowhere">b</a><a href="c.html">c</a>'
                                     '<a href="#top">up</a><a href="https://example.org/x">x</a>')
    (tmp_path / "b.html").write_text('<h1 id="here">B</h1><a href="a.html#top">a</a>')
    assert broken_links(tmp_path) == ["a.html -> b.html#nowhere: no anchor #nowhere", "a.html -> c.html: no such file"]


# ---------------------------------------------------------------- what must never reach a page

def _lines(text):
    return [_flat(line) for line in text.splitlines() if len(_flat(line)) >= 8]


@functools.lru_cache(maxsize=None)
def released_text():
    """Every lesson's release, whitespace folded: what learners receive anyway (a later lesson
    gives an earlier lesson's answer as code of its own: lesson 02 gives ``softmax``)."""
    return _flat("\n".join(cell.source for lesson in lesson_ids() for cell in nbformat.read(
        ROOT / "notebooks" / lesson / f"{lesson}.ipynb", as_version=4).cells))


@functools.lru_cache(maxsize=None)
def forbidden_lines(lesson):
    """Lines a lesson page must never hold: every line of the lesson's answers (code between
    nbgrader's solution markers, written answers' model text) and of its hidden tests, except
    text a release holds."""
    source = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
    found = set()
    for cell in source.cells:
        text = cell.source
        role = cell.metadata.get("nbgrader", {})
        if role.get("solution") and cell.cell_type == "markdown":
            found.update(_lines(text))
        for begin, end in (("### BEGIN SOLUTION", "### END SOLUTION"), ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")):
            for block in re.findall(re.escape(begin) + r"(.*?)" + re.escape(end), text, re.DOTALL):
                found.update(_lines(block))
    released = released_text()
    return sorted(line for line in found if line not in released)


def leaked_lines(page_text, lesson):
    text = _flat(page_text)
    return [line for line in forbidden_lines(lesson) if line in text]


def test_the_leak_check_finds_an_answer_and_a_hidden_test():
    """The checker itself can fail: a page quoting a line of lesson 01's solution, or of its hidden
    tests, is reported; the release's own text is not."""
    lines = forbidden_lines("01_context_vectors")
    hidden = next(line for line in lines if "check(" in line)
    answer = next(line for line in lines if "softmax" not in line and "check" not in line)
    release = "\n".join(c.source for c in nbformat.read(
        ROOT / "notebooks" / "01_context_vectors" / "01_context_vectors.ipynb", as_version=4).cells)
    assert leaked_lines(release, "01_context_vectors") == []
    assert set(leaked_lines(f"{release}\n<pre>{answer}</pre>\n{hidden}", "01_context_vectors")) == {answer, hidden}


# ---------------------------------------------------------------- the built site

def test_the_site_builds_with_warnings_as_errors(site):
    status, log, _ = site
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert status == 0 and not warnings, "\n".join(warnings) or log[-3000:]


def test_every_page_is_in_the_site(site):
    """Each Markdown page of docs/ and each lesson has its built page."""
    html_root = Path(site[2])
    expected = [p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    expected += [Path("lessons") / f"{lesson}.html" for lesson in lesson_ids()]
    assert [str(p) for p in expected if not (html_root / p).is_file()] == []


def test_every_internal_link_and_anchor_resolves(site):
    assert broken_links(site[2]) == []


def test_no_lesson_page_holds_a_solution_or_a_hidden_test(site):
    """No line of any lesson's answers or hidden tests is on any lesson page (the other pages
    describe the form of a hidden test cell, ``check("softmax")``, on purpose)."""
    html_root = Path(site[2])
    texts = {path.relative_to(html_root): "".join(read_page(path).text)
             for path in (html_root / "lessons").glob("*.html")}
    leaks = [f"{page}: {line}" for lesson in lesson_ids() for page, text in texts.items()
             for line in leaked_lines(text, lesson)]
    assert not leaks, "\n".join(leaks)


def test_a_lesson_page_is_the_release_with_the_solved_runs_figures(site):
    """Lesson 01's page shows its stubs and, under the other cells, the figures and printed results
    of the solved run; the note under its title says what the page is."""
    page = read_page(Path(site[2]) / "lessons" / "01_context_vectors.html")
    text = _flat("".join(page.text))
    assert "raise NotImplementedError()" in text and "as a learner receives it" in text
    pictures = [link for link in page.links if link.endswith(".png")]
    assert len(pictures) >= 2, "lesson 01's page shows no figure"
    assert "<math" in (Path(site[2]) / "lessons" / "01_context_vectors.html").read_text(), "no formula as MathML"


def test_a_lesson_page_is_built_without_outputs_when_none_are_cached(tmp_path):
    """A lesson whose solution has not run (``lesson_outputs=cache``, an empty cache) is its release
    as it is, and its note says the figures are missing."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import lesson_pages
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    nb = lesson_pages.page("02_queries_keys_values", lesson_pages.cached_outputs(tmp_path, "02_queries_keys_values"))
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")
    assert "built without running the lesson" in nb.cells[1].source



def test_a_lesson_run_whose_reply_never_came_is_run_again_once(tmp_path, monkeypatch):
    """A lesson run given up on a cell's timeout (a reply the kernel never sent) is run again once
    and its outputs cached; a second loss stops the build."""
    from nbclient.exceptions import CellTimeoutError

    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import lesson_pages
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    runs = []

    def run_solution(lesson):
        runs.append(lesson)
        if len(runs) == 1 or lesson == "03_scaling":
            raise CellTimeoutError("A cell timed out while it was being executed, after 180 seconds.")
        return {"cell": {"source": "digest", "outputs": []}}

    monkeypatch.setattr(lesson_pages, "run_solution", run_solution)
    assert lesson_pages.fill_cache(tmp_path, ["02_queries_keys_values"], workers=1) == ["02_queries_keys_values"]
    assert runs == ["02_queries_keys_values"] * 2
    assert lesson_pages.cached_outputs(tmp_path, "02_queries_keys_values") == {"cell": {"source": "digest", "outputs": []}}
    with pytest.raises(CellTimeoutError):
        lesson_pages.fill_cache(tmp_path, ["03_scaling"], workers=1)

# ---------------------------------------------------------------- the Markdown, as GitHub shows it

def github_anchor(heading):
    """GitHub's (and MyST's ``myst_heading_anchors``) anchor of a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def markdown_anchors(path):
    text = re.sub(r"```.*?```", "", Path(path).read_text(), flags=re.DOTALL)
    return {github_anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", text, re.M)}


def test_every_relative_link_of_the_markdown_resolves():
    """Each relative link of docs/, the README and CONTRIBUTING points at a file of the repository,
    and an anchor at a heading of the page it names."""
    broken = []
    for path in MARKDOWN:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            if not resolved.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in markdown_anchors(resolved):
                broken.append(f"{path.relative_to(ROOT)}: {target}: no heading #{anchor}")
    assert not broken, "\n".join(broken)


def test_every_lesson_has_a_page():
    """Each lesson of source/ has its page (``docs/lessons/<id>.lesson``, holding its id) and a row
    in the lessons page's table."""
    assert sorted(p.stem for p in (DOCS / "lessons").glob("*.lesson")) == lesson_ids(), \
        "a lesson without docs/lessons/<id>.lesson (a file holding its id), or a page without a lesson"
    index = (DOCS / "lessons" / "index.md").read_text()
    assert all(f"]({lesson}.lesson)" in index for lesson in lesson_ids())


def test_the_readme_is_short_and_points_into_the_site():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for page in ("docs/learner-guide.md", "docs/instructor-guide.md", "docs/trust.md", "docs/testing.md"):
        assert f"]({page}" in readme, page
    assert "make lab" in readme and "make test" in readme


def test_the_contract_lists_every_graded_signature():
    """The course contract names each graded function with the signature its lesson gives it, and
    each written answer's grade_id."""
    contract = (DOCS / "course-contract.md").read_text()
    missing = []
    for lesson in lesson_ids():
        nb = nbformat.read(ROOT / "source" / lesson / f"{lesson}.ipynb", as_version=4)
        graded = {c.metadata["attention_course"]["spec"] for c in nb.cells if "BEGIN HIDDEN" in c.source}
        for cell in nb.cells:
            role = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and role.get("solution") and role.get("grade_id") in graded:
                signature = re.search(r"^def (\w+\(.*\)):", cell.source, re.M).group(1)
                if f"`{signature}`" not in contract:
                    missing.append(f"{lesson}: {signature}")
            elif cell.cell_type == "markdown" and role.get("solution") and f"`{role['grade_id']}`" not in contract:
                missing.append(f"{lesson}: written answer {role['grade_id']}")
    assert not missing, "\n".join(missing)


# ---------------------------------------------------------------- the commands the guides show

def shown_commands(path):
    """Every command line of a page's ``bash`` blocks: (program, its arguments), comments and
    leading ``VAR=value`` assignments left out."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", Path(path).read_text(), re.DOTALL):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words and re.match(r"^[A-Z_]+=", words[0]):
                words.pop(0)
            if words:
                commands.append((words[0], words[1:]))
    return commands


def _options(words):
    return [w.split("=", 1)[0] for w in words if w.startswith("--")]


def _nbgrader_app(words):
    """The nbgrader application class a command line names (``db student import`` → its class),
    and the rest of the line."""
    from traitlets.utils.importstring import import_item

    from nbgrader.apps import NbGraderApp

    def subcommands(app):
        return app.subcommands if isinstance(app.subcommands, dict) else {}    # else a trait: none

    app = NbGraderApp
    while words and words[0] in subcommands(app):
        entry = subcommands(app)[words[0]][0]
        app = import_item(entry) if isinstance(entry, str) else entry
        words = words[1:]
    return app, words


def _make_variables(words):
    return dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("-"))


def test_every_command_the_guides_show_exists():
    """Each ``make`` target a guide shows exists (``make -n``), with the options it passes through
    ``GRADE_ARGS`` (the grading command's ``--help``) and ``LAB_ARGS`` (JupyterLab's); each
    ``nbgrader`` command is one of nbgrader's, with options it takes; each ``dask`` command's
    options are in its ``--help``."""
    problems, helps = [], {}

    def help_of(*command):
        if command not in helps:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
            helps[command] = done.stdout + done.stderr if done.returncode == 0 else None
        return helps[command]

    for path in GUIDES:
        for program, words in shown_commands(path):
            line = f"{path.name}: {program} {' '.join(words)}"
            if program == "make":
                target = words[0]
                dry = subprocess.run(["make", "-n", target], capture_output=True, text=True, cwd=ROOT)
                if dry.returncode != 0:
                    problems.append(f"{line}: make -n {target} failed: {dry.stderr.strip()}")
                    continue
                variables = _make_variables(words[1:])
                if "GRADE_ARGS" in variables:
                    grading = next(shlex.split(l) for l in dry.stdout.splitlines() if " -m " in l)
                    text = help_of(sys.executable, *grading[1:3], "--help") or ""
                    problems += [f"{line}: {o} is not an option of make {target}"
                                 for o in _options(shlex.split(variables["GRADE_ARGS"])) if o not in text]
                if "LAB_ARGS" in variables:
                    text = help_of(sys.executable, "-m", "jupyterlab", "--help-all") or ""
                    problems += [f"{line}: {o} is not an option of JupyterLab"
                                 for o in _options(shlex.split(variables["LAB_ARGS"])) if o not in text]
            elif program in ("nbgrader", ".venv/bin/nbgrader"):
                app, rest = _nbgrader_app(words)
                if app.__name__ == "NbGraderApp":
                    problems.append(f"{line}: no such nbgrader command")
                    continue
                known = set(app.aliases or {}) | {f for f in (app.flags or {})}
                problems += [f"{line}: nbgrader {app.name} takes no {o}" for o in _options(rest)
                             if o[2:] not in known and "." not in o[2:]]
            elif program == "dask":
                text = help_of(str(Path(sys.executable).parent / "dask"), words[0], "--help")
                if text is None:
                    problems.append(f"{line}: no such dask command")
                    continue
                problems += [f"{line}: {o} is not an option" for o in _options(words) if o not in text]
            elif program == "source":
                continue
            else:
                problems.append(f"{line}: a command this test does not know how to check")
    assert not problems, "\n".join(problems)


def test_the_command_check_finds_a_wrong_command(tmp_path):
    """The check itself can fail: an nbgrader command or option that does not exist is found."""
    app, rest = _nbgrader_app(["db", "assignment", "add", "01", "--duedate=x"])
    assert app.__name__ == "DbAssignmentAddApp" and "duedate" in app.aliases
    assert _nbgrader_app(["grade_everything"])[0].__name__ == "NbGraderApp"
    assert "no-such-option" not in set(_nbgrader_app(["collect"])[0].aliases or {})
    page = tmp_path / "page.md"
    page.write_text('```bash\nATTENTION_X=1 make grade GRADE_ARGS="--wait"   # a comment\n```\n')
    assert shown_commands(page) == [("make", ["grade", "GRADE_ARGS=--wait"])]


def test_each_timestamp_form_the_guide_shows_is_read_as_it_says():
    """The ``timestamp.txt`` forms of the instructor's guide, read by nbgrader's own parser: each is
    the time the guide says it is (1 November 2026, UTC), the form nbgrader misreads included."""
    from nbgrader.utils import parse_utc

    guide = (DOCS / "instructor-guide.md").read_text()
    rows = re.findall(r"^\s*\| `([^`]+)`[^|]*\| (\d\d):(\d\d)(?::(\d\d))? UTC", guide, re.M)
    assert len(rows) >= 5, rows
    said = {form: datetime(2026, 11, 1, int(h), int(m), int(s or 0)) for form, h, m, s in rows}
    assert {form: parse_utc(form) for form in said} == said


# ---------------------------------------------------------------- without activating the environment

@background.fixture()
def documented_commands_without_path(folder, session):
    """The instructor's guide's nbgrader steps on a lesson-01 course copy, each run as
    ``.venv/bin/nbgrader`` with a PATH that lacks the course environment's ``bin/``: a new
    gradebook (nbgrader runs ``alembic`` to make it), a roster, a due date, the release, a submission
    graded, its feedback and the export. ``[(command, exit status, output)]`` and grades.csv."""
    from grading_helpers import LESSON, notebook, submit

    root = copy_course(Path(folder) / "course", lessons=[LESSON])
    (root / "roster.csv").write_text("id,first_name,last_name,email\nalice,Alice,Ng,alice@uni.example\n")
    submit(root, "alice", notebook("correct"), timestamp="2026-11-01 16:59:00 UTC")
    tools = Path(sys.executable).parent
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
           "PYTHONPATH": str(root / "instructor" / "grading")}
    steps = [["db", "student", "import", "roster.csv"],
             ["db", "assignment", "add", LESSON, "--duedate", "2026-11-01 17:00:00 UTC"],
             ["generate_assignment", LESSON, "--force"],
             ["autograde", LESSON],
             ["generate_feedback", LESSON],
             ["export"]]
    runs = []
    for step in steps:
        done = subprocess.run([str(tools / "nbgrader"), *step], cwd=root, env=env, capture_output=True, text=True,
                              timeout=900)
        runs.append((" ".join(step), done.returncode, done.stdout + done.stderr))
        if done.returncode:
            break
    grades = (root / "grades.csv").read_text() if (root / "grades.csv").exists() else ""
    return runs, grades


def test_the_documented_commands_work_without_activating_the_environment(documented_commands_without_path):
    """Every step exits 0, and alice's correct notebook gets its points in grades.csv."""
    import csv
    import io

    runs, grades = documented_commands_without_path
    failed = [f"nbgrader {command}: exit {status}\n{output[-2000:]}" for command, status, output in runs if status]
    assert not failed, "\n".join(failed)
    assert len(runs) == 6
    (row,) = [r for r in csv.DictReader(io.StringIO(grades)) if r["student"] == "alice"]
    # every check passed (6 points); the two written answers wait for an instructor
    assert row["status"] == "needs manual grading" and float(row["raw_score"]) == 6.0, row
    assert row["first_name"] == "Alice"
