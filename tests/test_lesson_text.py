"""What a lesson says is what it computes.

Every number a markdown cell quotes must be printed or displayed by the notebook when it runs,
or typed in one of its code cells (a parameter the text refers to), or be a figure the course
quotes from a source article (``attention_course.examples``), or be allowed below with a reason.
The solution notebooks run once for the whole session (hidden test cells left out: they print
nothing the text quotes, and they need the grader; lesson 09's, minutes of training, in the full
tier only); the same run checks that every figure has a
title and labelled axes. Claims made in words ("larger", "collapses", "reads *cat* most") are
checked against the values the notebook computed (``CLAIMS``), and a lesson that trains runs a
second time as another machine's rounding would: no figure it quotes may depend on the run
(``ANOTHER_RUN``). And no learner-facing text names a worked example "seed 00N": the examples are
named by what they are.
"""
import inspect
import json
import re
from concurrent.futures import ThreadPoolExecutor

import nbformat
import numpy as np
import pytest

import catalogue
from conftest import ROOT, lesson_ids, quick_tier_keeps
from notebook_tools import execute, is_test

#: Numbers a lesson may quote without printing them, and why: {lesson: {number as written: reason}}.
#: Keep it short.
_HIDDEN_LENGTHS = ("the ranges the hidden memory test draws its lengths from, stated as a requirement; "
                   "tests/test_requirements.py checks them against the spec")
ALLOWED = {"08_long_context": {"640": _HIDDEN_LENGTHS, "3,072": _HIDDEN_LENGTHS}}

NUMBER = re.compile(r"""
    (?<![\w.])                                   # not inside a word, an index or a longer number
    (?P<mantissa>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)
    (?:\s*(?:×|\\times)\s*10\^\{?(?P<power>[-−]?\d+)\}?|e(?P<exp>[-+]?\d+))?
    (?P<percent>\s*%)?
    (?![\w])                                     # not the start of a word (8B, 3rd, x1)
""", re.VERBOSE)
#: In prose, a number after one of these words names a thing (lesson 03, head 2, Llama 3), it measures nothing.
NAMING = re.compile(r"\b(lesson|section|exercise|question|step|article|chapter|llama|head|row|position|layer|"
                    r"column|seed)\s*$", re.IGNORECASE)
SMALL = 16                                       # counts and indices up to this are not measurements
PROGRESS = re.compile(r"\d+/\d+ \[")                # a tqdm progress bar: 600/600 [01:02<00:00, 9.6it/s]


def _numbers(text, prose=False):
    """``[(as written, value, half of the last significant unit)]`` of the numbers in ``text``."""
    found = []
    for match in NUMBER.finditer(text):
        if prose and NAMING.search(text[max(0, match.start() - 12):match.start()]):
            continue
        written = match.group(0).strip()
        mantissa = match.group("mantissa").replace(",", "")
        value = float(mantissa)
        if "." in mantissa:
            unit = 10.0 ** -len(mantissa.split(".")[1])
        else:
            zeros = len(mantissa) - len(mantissa.rstrip("0")) if value else 0
            unit = 10.0 ** zeros
        power = match.group("power") or match.group("exp")
        if power:
            scale = 10.0 ** int(power.replace("−", "-"))
            value, unit = value * scale, unit * scale
        if match.group("percent"):
            value, unit = value / 100, unit / 100
        found.append((written, value, unit / 2))
    return found


def _prose(source):
    """Markdown without code spans, code blocks, links' targets and the subscripts of formulas."""
    text = re.sub(r"```.*?```", " ", source, flags=re.DOTALL)
    text = re.sub(r"^#+\s*[\d.]+", "#", text, flags=re.MULTILINE)      # section numbers of headings
    text = text.replace("{,}", ",")                                    # LaTeX's thousands separator
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"_\{[^}]*\}|_\w", " ", text)                 # x_{i+1}, e_ij: indices
    text = re.sub(r"(?<!10)\^\{[^}]*\}|(?<!10)\^\w", " ", text)  # T^2, e^{20}: powers, not quantities
    return text


def _shown(cell):
    """Everything a code cell printed or displayed, as text."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("execute_result", "display_data"):
            data = output.get("data", {})
            parts += [data[kind] for kind in ("text/markdown", "text/plain", "text/html") if kind in data]
    return "\n".join(parts)


def _quoted_figures():
    """Every number ``attention_course.examples`` holds: the figures quoted from the articles."""
    from attention_course import examples

    values = []

    def collect(item):
        if isinstance(item, (int, float, np.integer, np.floating)) and not isinstance(item, bool):
            values.append(float(item))
        elif isinstance(item, np.ndarray):
            values.extend(np.ravel(item).astype(float))
        elif isinstance(item, (tuple, list)):
            for part in item:
                collect(part)
        elif isinstance(item, dict):
            for part in item.values():
                collect(part)

    for name in dir(examples):
        item = getattr(examples, name)
        if not name.startswith("_"):
            collect(item() if inspect.isfunction(item) else item)
    return values


# Run before the lesson: after every cell, each plotted axes of every figure must have a title
# (its own or the figure's), an x label and a y label (its own, a panel's it shares the axis
# with, or the figure's; colorbars aside); what lacks one is noted.
FIGURE_AUDIT = """
import json as _json
import matplotlib.pyplot as _plt
_unlabelled, _cell = [], [0]
def _count(info=None):
    _cell[0] += 1
def _audit(result=None):
    for number in _plt.get_fignums():
        figure = _plt.figure(number)
        suptitle = figure._suptitle.get_text() if figure._suptitle else ""
        for ax in figure.axes:
            if ax.get_label() == "<colorbar>" or not (ax.lines or ax.images or ax.patches or ax.collections):
                continue
            # Panels sharing an axis may leave its label to one of them, or to the figure.
            xlabel = figure._supxlabel or any(a.get_xlabel() for a in ax.get_shared_x_axes().get_siblings(ax))
            ylabel = figure._supylabel or any(a.get_ylabel() for a in ax.get_shared_y_axes().get_siblings(ax))
            missing = [name for name, text in (("title", ax.get_title() or suptitle),
                       ("x label", xlabel), ("y label", ylabel)) if not text]
            if missing:
                _unlabelled.append([_cell[0] - 1, ax.get_title() or suptitle, missing])
    _plt.close("all")
# plt.show() keeps the cell's figures open until the end of the cell, when they are audited and closed.
from matplotlib_inline.config import InlineBackend
InlineBackend.instance().close_figures = False
get_ipython().events.register("pre_run_cell", _count)
get_ipython().events.register("post_run_cell", _audit)
"""


#: Claims in words ("larger", "collapses", "reads *cat* most") and the computed values that back
#: them: ``{lesson: [(words of the prose, an expression over the notebook's variables)]}``. The
#: words must stay in the lesson (so that a changed sentence is looked at again) and the expression
#: must hold when the notebook runs (on another machine's training run too, for lesson 07).
CLAIMS = {lesson: module.CLAIMS for lesson in sorted(p.name for p in catalogue.LESSONS_DIR.iterdir())
          if (module := catalogue.lesson_module(lesson, "claims", "lesson_claims")) is not None}

#: Lessons whose numbers depend on a training run, and how to make the run differ as another
#: machine's would: (the cell after which to insert it, code). The gradients are nudged in their
#: last bits, as another CPU's rounding would; whatever the prose quotes must be printed by both runs.
ANOTHER_RUN = {
    "07_capstone": ("def train(", """
_model_backward_here, _nudge = model_backward, np.random.default_rng(12345)
def model_backward(params, batch, **flags):
    # this run's rounding differs from the first one's: each gradient is off in its last bits
    loss, grads = _model_backward_here(params, batch, **flags)
    return loss, {k: g * (1 + 1e-13 * _nudge.standard_normal(g.shape)) for k, g in grads.items()}
"""),
    # Lesson 09's training is steadier: gradients off in their last bits print the same figures (so
    # that run would prove nothing); off by a part in a million, as another BLAS could leave them
    # after many steps, its figures differ.
    "09_small_gpt": ("def train(", """
_loss_and_grads_here, _nudge = loss_and_grads, np.random.default_rng(12345)
def _nudged(g):
    if isinstance(g, dict):
        return {k: _nudged(v) for k, v in g.items()}
    if isinstance(g, list):
        return [_nudged(v) for v in g]
    return g * (1 + 1e-6 * _nudge.standard_normal(np.shape(g)))
def loss_and_grads(params, ids, targets):
    # this run's arithmetic differs from the first one's: each gradient is off by a part in a million
    loss, grads = _loss_and_grads_here(params, ids, targets)
    return loss, _nudged(grads)
"""),
}
#: The lessons whose solution the quick tier runs: the first, and lesson 07, whose training it runs
#: twice (a figure that differs from run to run must not be quoted as fact). The full tier runs
#: every lesson, lesson 09's minutes of training included.
QUICK_TIER = {"01_context_vectors", "07_capstone"}


LESSONS = quick_tier_keeps(lesson_ids(), QUICK_TIER)
ANOTHER_RUNS = quick_tier_keeps(sorted(ANOTHER_RUN), QUICK_TIER)


def _claims_cell(lesson):
    expressions = [expression for _, expression in CLAIMS.get(lesson, [])]
    return (f"def _claim(_expression):\n    try:\n        return bool(eval(_expression))\n"
            f"    except Exception as _error:\n        return f'{{type(_error).__name__}}: {{_error}}'\n"
            f"print(_json.dumps([_claim(e) for e in {expressions!r}]))")


#: How long a cell may run before the run counts it as hung. A cell that trains (it calls
#: ``train(``) does minutes of CPU work by design (lesson 09's two models: about a minute of CPU
#: each) while the catalogue is graded on the same two cores in the same session: its guard is
#: against a hang, not a measure of this machine's speed.
CELL_TIMEOUT, TRAINING_CELL_TIMEOUT = 300, 1800


def _cell_timeout(cell):
    return TRAINING_CELL_TIMEOUT if "train(" in cell.source else CELL_TIMEOUT


def _run(lesson, folder, another_run=False):
    """The solution without its test cells, in a kernel forked from the grader's warm parent (no
    sandbox: this is the instructor's own notebook), figures left undrawn: only text and the
    figures' titles and labels are read (``metadata["unlabelled_axes"]``), and the lesson's claims
    evaluated (``metadata["claims"]``). ``another_run``: as another machine's training would run."""
    from nbclient import NotebookClient

    from attention_grading.kernels.manager import SandboxedKernelManager

    nb = nbformat.read(ROOT / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    cells = [c for c in nb.cells if not is_test(c)]
    if another_run:
        after, code = ANOTHER_RUN[lesson]
        place = next(i for i, c in enumerate(cells) if after in c.source) + 1
        cells.insert(place, nbformat.v4.new_code_cell(code))
    nb.cells = [nbformat.v4.new_code_cell(FIGURE_AUDIT)] + cells + \
        [nbformat.v4.new_code_cell(_claims_cell(lesson)), nbformat.v4.new_code_cell("print(_json.dumps(_unlabelled))")]
    execute(NotebookClient(nb, timeout_func=_cell_timeout, kernel_name="python3",
                           kernel_manager_class=SandboxedKernelManager,
                           extra_arguments=["--InlineBackend.figure_formats=set()"],
                           resources={"metadata": {"path": str(folder)}}))
    nb.cells.pop(0)
    report, claims = nb.cells.pop(), nb.cells.pop()
    code = [c for c in nb.cells if c.cell_type == "code"]
    nb.metadata["unlabelled_axes"] = [
        f"code cell {n + 1} ({code[n].source.splitlines()[0][:60]!r}): {title or 'untitled'} lacks {', '.join(missing)}"
        for n, title, missing in json.loads(report.outputs[0].text)]
    nb.metadata["claims"] = json.loads(claims.outputs[0].text)
    return nb


@pytest.fixture(scope="session")
def executed(tmp_path_factory, request):
    """The solution notebook of every lesson a selected test reads, run once headless (in pairs:
    two cores), and those that train once more as another machine would (under ``(lesson,
    "another run")``). Not a background fixture: nbclient runs in this process, where a test's
    warning filters (process-wide) would reach it."""
    from conftest import lessons_using

    folder = tmp_path_factory.mktemp("lesson-text")
    lessons = lessons_using(request.session, "executed")
    with ThreadPoolExecutor(2) as pool:
        runs = {(lesson, "another run"): pool.submit(_run, lesson, folder, True) for lesson in lessons
                if lesson in ANOTHER_RUN}
        runs.update({lesson: pool.submit(_run, lesson, folder) for lesson in lessons})
        return {key: run.result() for key, run in runs.items()}


def _unbacked(nb, lesson):
    available = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            available += [v for _, v, _ in _numbers(_shown(cell))]
            available += [v for _, v, _ in _numbers(cell.source)]
    available = np.abs(np.array(available + _quoted_figures()))
    allowed = ALLOWED.get(lesson, {})
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for written, value, half_unit in _numbers(_prose(cell.source), prose=True):
            if written in allowed or (value.is_integer() and abs(value) <= SMALL and half_unit <= 0.5):
                continue
            if not (np.abs(available - abs(value)) <= half_unit * (1 + 1e-9) + 1e-12).any():
                line = next(l for l in cell.source.splitlines() if written.split()[0] in l)
                problems.append(f"{written!r} in: {line.strip()[:120]}")
    return problems


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_number_in_the_prose_is_computed_by_the_notebook(lesson, executed):
    errors = [o for c in executed[lesson].cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.output_type == "error"]
    assert not errors, f"{lesson} raised: {errors[0].ename}: {errors[0].evalue}"
    problems = _unbacked(executed[lesson], lesson)
    assert not problems, (f"{lesson}: the text quotes numbers the notebook neither prints nor computes "
                          f"(print them, refer to the printed line, or allow them with a reason):\n"
                          + "\n".join(problems))


@pytest.mark.parametrize("lesson", ANOTHER_RUNS)
def test_no_quoted_figure_depends_on_the_run(lesson, executed):
    """A number the prose quotes is printed by another machine's training run as well: a figure one
    run printed and another would not (steps to 90 %, a final accuracy) is never quoted as fact."""
    other = executed[lesson, "another run"]
    assert not _unbacked(other, lesson), ("the text quotes numbers that another run of the training does not "
                                          "print; say it in words that hold for every run:\n"
                                          + "\n".join(_unbacked(other, lesson)))


@pytest.mark.parametrize("lesson", ANOTHER_RUNS)
def test_the_other_run_trains_differently(lesson, executed):
    """The second run's training prints other figures than the first (else it would prove nothing);
    lines that time this machine ("on this machine", "runs in", a progress bar's rate) do not count."""
    def printed(nb):
        return {line for cell in nb.cells if cell.cell_type == "code" for line in re.split(r"[\r\n]", _shown(cell))
                if "on this machine" not in line and " runs in " not in line and not PROGRESS.search(line)}
    assert printed(executed[lesson]) != printed(executed[lesson, "another run"])


def _prose_of(nb):
    return " ".join("\n".join(c.source for c in nb.cells if c.cell_type == "markdown").split())


@pytest.mark.parametrize("lesson", quick_tier_keeps(sorted(CLAIMS), QUICK_TIER))
def test_every_claim_in_words_holds_in_the_numbers(lesson, executed):
    """Each "larger", "collapses", "reads X most" the prose claims is checked against the values the
    notebook computed, in every run."""
    runs = [executed[lesson]] + ([executed[lesson, "another run"]] if (lesson, "another run") in executed else [])
    prose = _prose_of(executed[lesson])
    problems = [f"the lesson no longer says {words!r}: look at the claim again and update CLAIMS"
                for words, _ in CLAIMS[lesson] if " ".join(words.split()) not in prose]
    for run in runs:
        problems += [f"{words!r} does not hold: {expression} is {held}"
                     for (words, expression), held in zip(CLAIMS[lesson], run.metadata["claims"]) if held is not True]
    assert not problems, "\n".join(problems)


def test_a_claim_the_numbers_contradict_is_reported():
    """The claims check can fail: an expression that is false, or one that raises, is reported."""
    assert _claims_cell("no lesson").endswith("for e in []]))")
    cell = _claims_cell("01_context_vectors")
    assert "A_four[0].argmax() == 0" in cell


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_figure_has_a_title_and_labelled_axes(lesson, executed):
    """Every plotted axes a lesson draws says what it shows: a title and both axis labels."""
    assert not executed[lesson].metadata["unlabelled_axes"], "\n".join(executed[lesson].metadata["unlabelled_axes"])


def test_the_number_finder_reads_what_prose_writes():
    read = {w: (v, h) for w, v, h in _numbers("about 5,900× and 0.4 GB, 56 %, 2.7 \\times 10^{14}, 1.2e-05, x1, 8B")}
    assert read["5,900×"[:5]][0] == 5900 and read["5,900×"[:5]][1] == 50
    assert read["0.4"] == (0.4, 0.05) and read["56 %"] == (0.56, 0.005)
    assert read["2.7 \\times 10^{14}"][0] == pytest.approx(2.7e14) and read["1.2e-05"][0] == pytest.approx(1.2e-5)
    assert "x1" not in read and "8B" not in read and "8" not in read


def test_a_number_nobody_printed_is_reported():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 0.25", outputs=[nbformat.v4.new_output("stream", text="share 0.612\n")]),
                nbformat.v4.new_markdown_cell("The share is 0.61 (printed), the rest 0.83, about 61 %; lesson 12.")]
    assert [p.split("'")[1] for p in _unbacked(nb, "no lesson")] == ["0.83"]


def test_no_learner_facing_text_calls_an_example_seed():
    learner_facing = [*(ROOT / "notebooks").rglob("*.ipynb"), *(ROOT / "src" / "attention_course").glob("*.py")]
    offenders = [str(p.relative_to(ROOT)) for p in learner_facing
                 if re.search(r"\bseeds? ?0\d\d\b", p.read_text(), re.IGNORECASE)]
    assert not offenders, offenders


def test_memory_is_counted_in_one_kind_of_unit():
    """Every lesson counts bytes in decimal units (kB, GB, TB), as the figures it quotes do: no
    KiB, MiB or GiB, and no division by 2**30, beside them."""
    mixed = []
    for path in sorted((ROOT / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            found = re.findall(r"\b[KMGT]iB\b|2\s*\*\*\s*(?:10|20|30|40)\b", cell.source)
            if found:
                mixed.append(f"{path.name}: {sorted(set(found))} in {cell.source.strip()[:80]!r}")
    assert not mixed, "\n".join(mixed)


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_number_read_with_a_vowel_follows_a(lesson, executed):
    """Neither the prose nor what the notebook prints says "a 80 GB" (an 80, an 11, an 18)."""
    nb = executed[lesson]
    texts = [c.source for c in nb.cells if c.cell_type == "markdown"] + \
        [_shown(c) for c in nb.cells if c.cell_type == "code"]
    wrong = [m.group(0) for text in texts for m in re.finditer(r"\ba (?:8\d*|11|18|1[18]\d{2,})\b", text)]
    assert not wrong, wrong


@pytest.mark.parametrize("lesson", LESSONS)
def test_no_check_cell_shows_a_value(lesson, executed):
    """A locked cell (setup, provided code, visible checks) whose last line evaluates to a value would
    show it under the check (an ``execute_result``, such as a stray ``array([4000, 0, ...])``): none
    does, in the solution run."""
    from notebook_tools import cell_role

    shown = [f"{cell_role(cell).get('grade_id')}: {output.get('data', {}).get('text/plain', '')[:120]!r}"
             for cell in executed[lesson].cells if cell.cell_type == "code" and cell_role(cell).get("locked")
             for output in cell.get("outputs", []) if output.get("output_type") == "execute_result"]
    assert not shown, shown
