"""The visible checks, measured on the catalogue of answers, and the behaviours they promise.

Every WRONG entry of tests/catalogue/ runs through the visible checks of its function, in this
process (tests/visible_checks.py): it must be caught (a check fails) and named (the message holds
the words of its true mistake, ``DIAGNOSES`` in the catalogue, and not those of another mistake).
The figures are printed (``pytest -s tests/test_visible_checks.py``) and recorded in the learner's
guide (docs/learner-guide.md).
Every CORRECT entry must pass, except the few a check rightly rejects (``VISIBLE_COMPLAINTS``,
each with its reason); a correct later function is never blamed for an earlier one's mistake.
"""
import linecache
import re

import numpy as np
import pytest

import background
import catalogue
from conftest import ROOT, fresh_python, lesson_ids
from visible_checks import Outcome, layout, named, run_visible_checks, run_visible_checks_alone

FIGURES_START, FIGURES_END = "<!-- visible-checks:start -->", "<!-- visible-checks:end -->"


def catalogue_table():
    """What the visible checks say about every catalogue entry, and about every correct later
    function beside each mistake of an earlier one it calls (``_calling_pairs``), in this process:
    ``{"WRONG": {lesson: [(function, entry, outcome)]}, "CORRECT": likewise, "later": {lesson:
    [(later, its entry, earlier, its mistake, outcome)]}}``, outcomes as dicts."""
    from dataclasses import asdict

    table = {"WRONG": {}, "CORRECT": {}, "later": {}}
    for lesson in lesson_ids():
        for kind in ("WRONG", "CORRECT"):
            for function, entries in getattr(catalogue.load(lesson), kind).items():
                for name, source in entries.items():
                    outcome = asdict(run_visible_checks(lesson, function, source))
                    table[kind].setdefault(lesson, []).append((function, name, outcome))
    for lesson, later, name, earlier, mistake in _calling_pairs():
        outcome = asdict(run_visible_checks(lesson, later, _correct(lesson, later, name),
                                            earlier={earlier: _wrong(lesson, earlier, mistake)}))
        table["later"].setdefault(lesson, []).append((later, name, earlier, mistake, outcome))
    return table


@background.fixture()
def catalogue_outcomes(folder, session):
    """``catalogue_table()`` with ``Outcome``s: minutes of CPU, in the background, in a child Python
    (the checks redirect their process's output and set its environment)."""
    table = background.in_a_child(folder, "test_visible_checks", "catalogue_table")
    return {kind: {lesson: [(*key, Outcome(**outcome)) for *key, outcome in rows] for lesson, rows in lessons.items()}
            for kind, lessons in table.items()}


@pytest.fixture(scope="session")
def wrong_outcomes(catalogue_outcomes):
    """``{lesson: [(function, entry, outcome, diagnosis words)]}`` for every WRONG entry."""
    return {lesson: [(function, name, outcome, catalogue.diagnoses(lesson).get(function, {}).get(name, ()))
                     for function, name, outcome in catalogue_outcomes["WRONG"].get(lesson, [])]
            for lesson in lesson_ids()}


def _figures(outcomes):
    total = len(outcomes)
    caught = sum(o.failed for _, _, o, _ in outcomes)
    right = sum(named(o, words) for _, _, o, words in outcomes)
    return total, caught, right


def _table(wrong_outcomes):
    lines = ["| lesson | wrong answers | caught by the visible checks | named correctly |", "|---|---|---|---|"]
    for lesson, outcomes in wrong_outcomes.items():
        total, caught, right = _figures(outcomes)
        lines.append(f"| {lesson} | {total} | {caught} ({caught / total:.0%}) | {right} ({right / total:.0%}) |")
    return "\n".join(lines)


def test_every_wrong_entry_has_the_words_of_its_diagnosis():
    for lesson in lesson_ids():
        wrong, words = catalogue.load(lesson).WRONG, catalogue.diagnoses(lesson)
        for function, entries in wrong.items():
            missing = sorted(set(entries) - set(words.get(function, {})))
            assert not missing, f"{lesson}: DIAGNOSES lacks {function}: {missing}"
            stale = sorted(set(words.get(function, {})) - set(entries))
            assert not stale, f"{lesson}: DIAGNOSES names entries that do not exist: {function}: {stale}"


def test_figures_are_printed_and_match_the_learners_guide(wrong_outcomes):
    table = _table(wrong_outcomes)
    print("\nVisible checks on the catalogue's wrong answers:\n" + table)
    guide = (ROOT / "docs" / "learner-guide.md").read_text()
    recorded = guide[guide.index(FIGURES_START) + len(FIGURES_START):guide.index(FIGURES_END)].strip()
    assert recorded == table, f"docs/learner-guide.md records other figures; paste these between the markers:\n{table}"


@pytest.mark.parametrize("lesson", lesson_ids())
def test_every_mistake_is_named_by_its_own_cause_and_no_other(lesson, wrong_outcomes):
    """Each catalogued mistake fails a visible check whose message holds the words of its own cause,
    and not the words of another mistake of the same function (unless its own words hold them)."""
    words = catalogue.diagnoses(lesson)
    problems = []
    for function, name, outcome, own in wrong_outcomes[lesson]:
        if not named(outcome, own):
            problems.append(f"{function}.{name} is not named by {own}: {outcome.message[:300] or 'it passed'}")
            continue
        mine = " ".join(own).lower()
        for other, theirs in words.get(function, {}).items():
            if other != name and not all(w.lower() in mine for w in theirs) and named(outcome, theirs):
                problems.append(f"{function}.{name} is also named as {other} {theirs}: {outcome.message[:300]}")
    assert not problems, "\n".join(problems)


def _calling_pairs():
    """``(lesson, later, its CORRECT entry, earlier, its WRONG entry)`` for every correct answer of a
    later function that calls an earlier graded function, with every catalogued mistake of that one."""
    import re

    pairs = []
    for lesson in lesson_ids():
        functions = list(layout(lesson)[1])
        module = catalogue.load(lesson)
        for position, later in enumerate(functions):
            for name, source in module.CORRECT.get(later, {}).items():
                for earlier in functions[:position]:
                    if re.search(rf"\b{earlier}\s*\(", source.split("\n", 2)[-1]):
                        pairs += [(lesson, later, name, earlier, mistake) for mistake in module.WRONG.get(earlier, {})]
    return pairs


@pytest.mark.parametrize("lesson", lesson_ids())
def test_a_later_check_never_blames_the_later_function_for_an_earlier_mistake(lesson, catalogue_outcomes):
    """A correct later function that calls a wrong earlier one passes its checks (they do not reach
    the mistake) or is told that the earlier one is wrong, never that it is wrong itself."""
    problems = []
    for later, name, earlier, mistake, outcome in catalogue_outcomes["later"].get(lesson, []):
        if outcome.failed and f"calls your {earlier}" not in outcome.message:
            problems.append(f"{later}.{name} with {earlier}.{mistake}: {outcome.message[:300]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson", lesson_ids())
def test_correct_answers_pass_the_visible_checks(lesson, catalogue_outcomes):
    """Every CORRECT entry passes its function's visible checks, except those VISIBLE_COMPLAINTS lists."""
    complaints = catalogue.visible_complaints(lesson)
    outcomes = catalogue_outcomes["CORRECT"].get(lesson, [])
    assert len(outcomes) == catalogue.size(lesson, "CORRECT")
    for function, name, outcome in outcomes:
        if name in complaints.get(function, {}):
            assert outcome.failed, f"{function}.{name} is listed in VISIBLE_COMPLAINTS but passes"
        else:
            assert not outcome.failed, f"{function}.{name} is correct, yet: {outcome.message}"


# ---------------------------------------------------------------- a mistake is blamed where it is made

def _wrong(lesson, function, name):
    return catalogue.load(lesson).WRONG[function][name]


def _correct(lesson, function, name):
    return catalogue.load(lesson).CORRECT[function][name]


@pytest.mark.parametrize("lesson, later, calling, earlier, mistake, where", [
    ("01_context_vectors", "contextualize", "einsum", "softmax", "wrong_axis", "Exercise 1"),
    ("02_queries_keys_values", "self_attention", "calls_project_and_einsum", "project", "transposed_weights",
     "Exercise 1"),
    ("04_causal_masking", "causal_self_attention", "einsum_with_own_helpers", "causal_mask",
     "strict_lower_triangle", "Exercise 1"),
    ("04_causal_masking", "causal_self_attention", "einsum_with_own_helpers", "masked_softmax",
     "mask_after_softmax", "Exercise 2"),
    ("05_gradients", "self_attention_backward", "reuses_attention_backward", "attention_backward",
     "dV_not_transposed", "Exercise 3"),
    ("06_multi_head", "multi_head_attention", "uses_split_and_merge", "split_heads", "interleaved_columns",
     "Exercise 1"),
    ("06_multi_head", "multi_head_attention", "uses_split_and_merge", "merge_heads", "interleaves_heads",
     "Exercise 2"),
    ("09_small_gpt", "transformer_block", "helpers_and_where_relu", "layer_norm", "eps_outside_sqrt", "Exercise 2"),
])
def test_a_wrong_earlier_function_is_blamed_not_the_later_one(lesson, later, calling, earlier, mistake, where):
    outcome = run_visible_checks(lesson, later, _correct(lesson, later, calling),
                                 earlier={earlier: _wrong(lesson, earlier, mistake)})
    assert outcome.failed and f"calls your {earlier}" in outcome.message and where in outcome.message, outcome


def test_a_later_function_that_does_not_call_the_earlier_one_is_judged_on_its_own():
    lesson = "02_queries_keys_values"
    outcome = run_visible_checks(lesson, "self_attention", _correct(lesson, "self_attention", "scipy_softmax_chatty"),
                                 earlier={"project": _wrong(lesson, "project", "transposed_weights")})
    assert not outcome.failed, outcome.message


# ---------------------------------------------------------------- what a failure looks like

def _learner_function(source, name):
    """Define ``name`` from ``source`` as a notebook cell would (its lines readable by linecache)."""
    filename = f"<cell defining {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def test_a_failed_check_renders_its_message_and_the_learners_line_not_the_helpers():
    from attention_course import checks

    fn = _learner_function("def attend(Q, K):\n    scores = Q @ K.T\n    return scores\n", "attend")
    with pytest.raises(checks.CheckFailed) as failure:
        checks.call(fn, np.ones((2, 3, 4)), np.ones((2, 5, 4)))
    lines = failure.value._render_traceback_()
    message = [line for line in lines if not line.startswith("  ")]
    assert "np.swapaxes" in " ".join(message) and all(len(line) <= 80 + 11 for line in message), lines
    assert "raised in your attend, line 2: scores = Q @ K.T" in lines[len(message)]
    assert not any("attention_course" in line for line in lines) and len(lines) <= len(message) + 2, lines


@pytest.mark.parametrize("source, args, words", [
    ("def f(x):\n    return x - np.max(x, axis=-1)\n", (np.ones((3, 4)),), "keepdims=True"),
    ("def f(Q, K):\n    return Q @ K.T\n", (np.ones((2, 3, 4)), np.ones((2, 5, 4))), "np.swapaxes(M, -1, -2)"),
    ("def f(S, mask):\n    return np.where(mask, S, -np.inf)\n", (np.ones((2, 3, 4, 4)), np.ones((2, 4, 4), bool)),
     "mask[..., None, :, :]"),
    ("def f(X):\n    return X.reshape(*X.shape[:-1], 2, 3).transpose(1, 0, 2)\n", (np.ones((2, 3, 6)),),
     "np.swapaxes(M, -1, -2)"),
    ("def f(X, W):\n    return np.einsum('td,dk->tk', X, W)\n", (np.ones((2, 3, 4)), np.ones((4, 5))), "'...'"),
])
def test_raw_numpy_errors_say_what_to_change(source, args, words):
    from attention_course import checks

    with pytest.raises(checks.CheckFailed) as failure:
        checks.call(_learner_function(source, "f"), *args)
    assert words in str(failure.value), str(failure.value)


def test_nan_without_evidence_gets_no_fixed_cause():
    from attention_course import checks

    with pytest.raises(checks.CheckFailed) as failure:
        checks.cmp("weights", np.array([[np.nan, 0.5], [0.5, 0.5]]), [[0.5, 0.5], [0.5, 0.5]])
    message = str(failure.value)
    assert "in row 0 (1 of 2)" in message and "overflow" not in message, message


def test_inputs_changed_in_place_are_reported_before_any_check_uses_them():
    lesson = "03_scaling"
    outcome = run_visible_checks(lesson, "scaled_dot_product_attention",
                                 _wrong(lesson, "scaled_dot_product_attention", "scales_Q_in_place"))
    assert "changed its argument Q in place" in outcome.message and "not scaled" not in outcome.message


# ---------------------------------------------------------------- lesson 08: memory that does not grow like T²

def _solution(lesson, function):
    from visible_checks import layout

    cells, functions = layout(lesson)
    return cells[functions[function][0]].source


# The memory checks run in a fresh interpreter (``run_visible_checks_alone``), as in a learner's kernel.


def test_a_correct_tiled_attention_that_copies_its_inputs_passes_the_memory_check():
    solution = _solution("08_long_context", "tiled_attention")
    view = "(np.asarray(a, dtype=float) for a in (Q, K, V))"
    assert view in solution
    copying = solution.replace(view, "(np.array(a, dtype=float) for a in (Q, K, V))")   # harmless copies
    outcome = run_visible_checks_alone("08_long_context", "tiled_attention", copying)
    assert not outcome.failed, outcome.message


_GROWTH = """
import numpy as np
from attention_course import checks

def full(Q, K, V):
    S = Q @ np.swapaxes(K, -1, -2)                             # (T, T) float64: 8 bytes per pair
    return (np.exp(S - S.max(-1, keepdims=True)) @ V)

def copies(Q, K, V):
    return np.array(Q) + np.array(K) + np.array(V)             # linear in T only

inputs = lambda T: tuple(np.random.default_rng(T).standard_normal((3, T, 8)))
for name, fn in (("full", full), ("copies", copies)):
    try:
        checks.check_memory_growth(name, fn, inputs, lengths=(128, 256, 512))
    except checks.CheckFailed as failed:
        print("failed:", failed)
    else:
        print("passed:", name)
"""


def test_the_memory_check_measures_the_part_that_grows_like_t_squared():
    lines = [line for line in fresh_python(_GROWTH).splitlines() if line.startswith(("failed:", "passed:"))]
    assert len(lines) == 2, lines
    assert re.match(r"failed: full: .*grows like T², about \d+\.\d bytes per .* array of float64", lines[0]), lines[0]
    assert lines[1] == "passed: copies", lines[1]


def test_the_capstone_gradient_check_names_a_softmax_backward_without_its_subtraction():
    # Not a catalogue entry: besides model_backward, it also costs the trained-model outcome.
    solution = _solution("07_capstone", "model_backward")
    right = "dS = A * (dA - np.sum(A * dA, axis=-1, keepdims=True))"
    assert right in solution
    outcome = run_visible_checks("07_capstone", "model_backward", solution.replace(right, "dS = A * dA"))
    assert "the softmax backward is off" in outcome.message, outcome.message


# ---------------------------------------------------------------- a diagnosis claims only what the evidence shows

def test_numbers_are_printed_to_the_digits_where_they_differ():
    """Two numbers that differ are never printed alike: a divisor of 1.414 is not "√2 = 1.414"."""
    from attention_course import checks

    scores = np.array([[0.2, 1.7, -0.4], [1.1, 0.3, 0.9]])
    weights = np.exp(scores / 1.414) / np.exp(scores / 1.414).sum(axis=-1, keepdims=True)
    with pytest.raises(checks.CheckFailed) as failure:
        checks.check_score_scale("A", weights, scores, d_k=2)
    message = str(failure.value)
    assert "dividing the scores by 1.414," in message and "√d_k = 1.4142" in message, message
    with pytest.raises(checks.CheckFailed) as failure:
        checks.cmp("shares", np.array([0.6041]), [0.6043], atol=1e-6)
    assert "you have 0.6041, expected 0.6043" in str(failure.value), str(failure.value)


def test_an_answer_in_float32_is_told_its_dtype_not_two_equal_numbers():
    """A float32 answer that rounds like the expected one is told its dtype, as the hidden test does."""
    from attention_course import checks

    with pytest.raises(checks.CheckFailed) as failure:
        checks.cmp("the shares", np.array([0.604], dtype=np.float32), [0.604], atol=1e-9)
    assert "has dtype float32" in str(failure.value) and "you have" not in str(failure.value)


def test_weights_that_follow_the_transposed_mask_are_not_told_to_use_minus_infinity():
    """np.triu where np.tril belongs: the check says the mask was applied transposed, since the
    learner did put -inf in the hidden scores."""
    from attention_course import checks

    scores = np.array([[0.3, 1.0, -0.2], [0.5, 0.1, 0.7], [1.2, -0.4, 0.0]])
    lower = np.tril(np.ones((3, 3), dtype=bool))
    upper = np.where(lower.T, scores, -np.inf)
    weights = np.exp(upper - upper.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    with pytest.raises(checks.CheckFailed) as failure:
        checks.check_masked_rows("A", weights, lower)
    assert "transposed" in str(failure.value) and "-inf" not in str(failure.value), str(failure.value)


def test_an_adam_with_eps_outside_the_root_is_not_told_to_move_it_there():
    """A slightly wrong Adam whose eps is already outside the square root gets no eps hint."""
    lesson = "07_capstone"
    answer = _solution(lesson, "adam_step").replace("eps=1e-8", "eps=1e-7")
    assert "eps=1e-7" in answer
    outcome = run_visible_checks(lesson, "adam_step", answer)
    assert outcome.failed and "eps" not in outcome.message.replace("eps=", ""), outcome.message


def test_a_mask_that_does_not_broadcast_gets_no_hint_about_heads():
    """The broadcasting hint for a mask is about axes, not about heads (lesson 04 has none yet)."""
    from attention_course import checks

    fn = _learner_function("def f(S, mask):\n    return np.where(mask, S, -np.inf)\n", "f")
    with pytest.raises(checks.CheckFailed) as failure:
        checks.call(fn, np.ones((2, 3, 4, 4)), np.ones((2, 4, 4), bool))
    assert "mask[..., None, :, :]" in str(failure.value) and "head" not in str(failure.value)
