"""The explorers of lessons 02, 03 and 09: their pure halves, and their widgets driven headless."""
import numpy as np
import pytest

import attention_reference as R
from attention_course import examples, widgets
from conftest import STRICT_WARNINGS

pytestmark = STRICT_WARNINGS


def jacobian(p):
    p = np.asarray(p, dtype=float)
    return np.diag(p) - np.outer(p, p)


def test_causal_read_by_prefixes_is_the_masked_read():
    X, W_Q, W_K, W_V, _ = examples.the_cat_sat_it()
    O, A = widgets.causal_read(R.self_attention, X, W_Q, W_K, W_V)
    O_ref, A_ref = R.causal_self_attention(X, W_Q, W_K, W_V)
    np.testing.assert_allclose(A, A_ref, atol=1e-15)
    np.testing.assert_allclose(O, O_ref, atol=1e-15)
    np.testing.assert_array_equal(np.round(A, 3), examples.IT_WEIGHTS_QUOTED)


def test_it_example_state_defaults_to_seed_004_and_follows_its_controls():
    state = widgets.it_example_state(R.self_attention)
    np.testing.assert_array_equal(np.round(state["weights"], 3), examples.IT_WEIGHTS_QUOTED[3])
    np.testing.assert_array_equal(np.round(state["output"], 3), examples.IT_OUTPUTS_QUOTED[3])
    like_sat = widgets.it_example_state(R.self_attention, (0.0, 0.0, 1.0))
    assert like_sat["weights"][2] == pytest.approx(like_sat["weights"][3])
    np.testing.assert_allclose(like_sat["output"], [0.5, 0.5], atol=1e-12)
    cat_causal = widgets.it_example_state(R.self_attention, query="cat", causal=True)
    cat_open = widgets.it_example_state(R.self_attention, query="cat", causal=False)
    assert cat_causal["weights"][2:].sum() == 0 and cat_open["weights"][2:].sum() > 0
    assert "cat 0.559" in widgets.describe_read(widgets.it_example_state(R.self_attention))


def test_saturation_state_saturates_only_without_the_scale():
    wide_raw = widgets.saturation_state(R.softmax, jacobian, 1024, scaled=False)
    wide_scaled = widgets.saturation_state(R.softmax, jacobian, 1024, scaled=True)
    assert wide_raw["max_weight"] > 0.99 and wide_raw["jacobian_norm"] < 1e-2
    assert wide_scaled["entropy"] > 0.5 and wide_scaled["divisor"] == pytest.approx(32.0)
    hot = widgets.saturation_state(R.softmax, jacobian, 64, temperature=10.0)
    assert hot["entropy"] > wide_scaled["entropy"] - 1.0
    assert widgets.entropy(np.ones(8) / 8) == pytest.approx(np.log(8))
    assert widgets.entropy([1.0, 0.0]) == 0.0


def _controls(box):
    return [w for w in _walk(box) if hasattr(w, "description") and getattr(w, "description", "")]


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_it_explorer_builds_headless_and_updates_its_text():
    box = widgets.it_explorer(R.self_attention)
    controls = {w.description: w for w in _controls(box)}
    assert {"x_it[0]", "x_it[1]", "x_it[2]", "query", "causal mask"} <= set(controls)
    line = next(w for w in _walk(box) if "it-explorer-weights" in w._dom_classes)
    first = line.value
    assert "cat 0.559" in first
    controls["x_it[1]"].value = 0.0
    controls["x_it[0]"].value = 0.0
    controls["x_it[2]"].value = 1.0
    assert line.value != first and "sat 0.402" in line.value
    controls["query"].value = "cat"
    controls["causal mask"].value = False
    assert line.value.startswith('"cat" reads (no mask)')


def test_saturation_explorer_builds_headless_and_updates_its_text():
    box = widgets.saturation_explorer(R.softmax, jacobian)
    controls = {w.description: w for w in _controls(box)}
    assert {"d_k", "temperature", "divide by √d_k"} <= set(controls)
    line = next(w for w in _walk(box) if "saturation-explorer-numbers" in w._dom_classes)
    first = line.value
    controls["divide by √d_k"].value = False
    controls["d_k"].value = 1024
    assert line.value != first and "d_k = 1024" in line.value


def _messages(box):
    return [w.value for w in _walk(box) if isinstance(getattr(w, "value", None), str)]


def test_explorers_wait_politely_for_unwritten_functions():
    def unwritten(*args, **kwargs):
        raise NotImplementedError()

    for box in (widgets.it_explorer(unwritten), widgets.saturation_explorer(unwritten, unwritten)):
        assert any("implement it in the lesson above" in m for m in _messages(box))


def test_explorers_explain_any_error_of_the_learners_function_instead_of_raising():
    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    def wrong_shape(X, W_Q, W_K, W_V):                    # returns something the plot cannot draw
        return np.zeros(3), np.zeros(3)

    for box in (widgets.it_explorer(broken), widgets.it_explorer(wrong_shape),
                widgets.saturation_explorer(R.softmax, broken)):
        shown = " ".join(_messages(box))
        assert "raised an error here" in shown and "visible" in shown and "check" in shown, shown


def test_saturation_numbers_are_averaged_over_draws_and_flat_with_the_scale():
    widths = [4, 64, 1024]
    scaled = [widgets.saturation_state(R.softmax, jacobian, d, scaled=True) for d in widths]
    unscaled = [widgets.saturation_state(R.softmax, jacobian, d, scaled=False) for d in widths]
    means = [s["mean_max_weight"] for s in scaled]
    assert max(means) - min(means) < 0.05, means                  # one draw alone varies far more
    assert unscaled[-1]["mean_max_weight"] > 0.9 > unscaled[0]["mean_max_weight"]
    text = widgets.describe_saturation(scaled[0])
    assert "one random draw" in text and f"Mean over {scaled[0]['n_draws']} draws" in text


# ---------------------------------------------------------------- lesson 09: the sampling explorer

def _model_and_vocab():
    from attention_course import small_gpt as gpt

    vocab = gpt.Vocabulary(gpt.load_text())
    return gpt.init_model(3, vocab.size, d_model=8, n_layers=1, n_heads=2, d_hidden=16), vocab


def test_sampling_state_draws_follow_the_distribution_and_the_knobs_act_as_the_formula_says():
    params, vocab = _model_and_vocab()
    plain = widgets.sampling_state(R.sample_next, R.generate, params, vocab, "Thou art")
    p, n = plain["probabilities"], plain["n_draws"]
    assert abs(p.sum() - 1) < 1e-12 and plain["kept"] == vocab.size
    assert np.all(np.abs(plain["shares"] - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1 / n)
    np.testing.assert_allclose(p, R.next_token_probabilities(plain["logits"], 1.0, None), rtol=1e-12)
    greedy = widgets.sampling_state(R.sample_next, R.generate, params, vocab, "Thou art", top_k=1)
    assert greedy["kept"] == 1 and greedy["entropy"] == 0.0 and greedy["shares"].max() == 1.0
    cool = widgets.sampling_state(R.sample_next, R.generate, params, vocab, "Thou art", temperature=0.5, top_k=5)
    np.testing.assert_allclose(cool["probabilities"], R.next_token_probabilities(plain["logits"], 0.5, 5), rtol=1e-12)
    assert cool["entropy"] < plain["entropy"] and cool["kept"] >= 5
    assert len(cool["text"]) == 60 and "Next character" in widgets.describe_sampling(cool)


def test_sampling_explorer_builds_headless_and_updates_its_text():
    params, vocab = _model_and_vocab()
    box = widgets.sampling_explorer(R.sample_next, R.generate, params, vocab, n_draws=300)
    controls = {w.description: w for w in _controls(box)}
    assert {"prompt", "temperature", "top_k"} <= set(controls)
    line = next(w for w in _walk(box) if "sampling-explorer-line" in w._dom_classes)
    first = line.value
    assert first.startswith("temperature 1.00, no top-k")
    controls["top_k"].value = 1
    assert line.value != first and "1 character can be drawn" in line.value
    controls["top_k"].value = 2
    assert "2 characters can be drawn" in line.value


def test_sampling_explorer_clears_its_result_under_a_bad_prompt_and_recovers():
    """A prompt with a character the model never saw replaces the line with a message and leaves no
    continuation of the earlier prompt on screen; a good prompt brings both back."""
    params, vocab = _model_and_vocab()
    box = widgets.sampling_explorer(R.sample_next, R.generate, params, vocab, n_draws=50)
    controls = {w.description: w for w in _controls(box)}
    line, written = (next(w for w in _walk(box) if name in w._dom_classes)
                     for name in ("sampling-explorer-line", "sampling-explorer-text"))
    assert "Thou art a" in written.value and "can be drawn" in line.value
    controls["prompt"].value = "Thou art€"
    assert "never seen" in line.value and written.value == ""
    controls["prompt"].value = "Thou art"
    assert "can be drawn" in line.value and "Thou art" in written.value
    controls["temperature"].value = 2.0
    assert "temperature 2.00" in line.value


def test_sampling_explorer_counts_one_draw_in_the_singular():
    params, vocab = _model_and_vocab()
    state = widgets.sampling_state(R.sample_next, R.generate, params, vocab, "Thou", top_k=1, n_draws=1)
    assert "1 character can be drawn" in widgets.describe_sampling(state)
    assert "share of your 1 draw)" in widgets.describe_sampling(state)


def test_sampling_explorer_waits_for_unwritten_functions_and_explains_errors():
    params, vocab = _model_and_vocab()

    def unwritten(*args, **kwargs):
        raise NotImplementedError()

    def broken(*args, **kwargs):
        raise ValueError("probabilities do not sum to 1")

    assert any("implement it in the lesson above" in m
               for m in _messages(widgets.sampling_explorer(unwritten, R.generate, params, vocab, n_draws=50)))
    shown = " ".join(_messages(widgets.sampling_explorer(broken, R.generate, params, vocab, n_draws=50)))
    assert "raised an error here" in shown and "sample_next" not in shown or "broken" in shown
