"""spec: hidden tests registered once each, and cases drawn per submission from the course's secret."""
import numpy as np
import pytest

from attention_grading.hidden import spec as spec_module
from attention_grading.hidden import registry
from attention_grading.hidden.cases import case_generator
from attention_grading.hidden.spec import Case, DuplicateSpec, Spec


def cases(g):
    return [Case("x", (g.normal(size=3),))]


def test_a_name_registered_by_another_lesson_fails_loudly(monkeypatch):
    """A second lesson's ``softmax`` may not replace lesson 01's: registering it raises."""
    monkeypatch.setattr(spec_module, "REGISTRY", dict(registry.load()))
    with pytest.raises(DuplicateSpec, match="softmax.*already registered by attention_grading.hidden.specs.lesson01"):
        spec_module.register(Spec(name="softmax", cases=cases))


def test_the_same_module_may_register_again(monkeypatch):
    """Re-importing a lesson's module (a reload) is not a duplicate."""
    monkeypatch.setattr(spec_module, "REGISTRY", {})
    spec_module.register(Spec(name="double", cases=cases))
    spec_module.register(Spec(name="double", cases=cases))
    assert list(spec_module.REGISTRY) == ["double"]


def test_an_unknown_test_is_named():
    with pytest.raises(KeyError, match="no hidden test is registered for 'nope'"):
        registry.get("nope")


def test_cases_differ_per_submission_and_repeat_for_the_same_one():
    """The generator depends on the secret, the submission and the test's name, and on nothing else."""
    def draw(secret, submission, name="softmax"):
        return case_generator(secret, submission, name).normal(size=4)

    assert np.array_equal(draw(b"s", "a"), draw(b"s", "a"))
    assert not np.array_equal(draw(b"s", "a"), draw(b"s", "b"))
    assert not np.array_equal(draw(b"s", "a"), draw(b"t", "a"))
    assert not np.array_equal(draw(b"s", "a"), draw(b"s", "a", "contextualize"))


def test_every_registered_test_draws_its_cases_from_the_generator_it_is_given():
    """Two generators give two different sets of inputs for every lesson's hidden tests (a fixed
    input would be an answer a learner could record and hard-code)."""
    from attention_grading.hidden import kernel_probe

    registry.get("softmax")
    fixed = []
    for name, spec in sorted(spec_module.REGISTRY.items()):
        if name == "trained_model":            # one training run; its data are the library's own
            continue
        first, second = (spec.cases(np.random.default_rng(seed)) for seed in (1, 2))
        for a, b in zip(first, second):
            if a.args and repr(kernel_probe.encode(a.args)) == repr(kernel_probe.encode(b.args)) and \
                    a.kwargs == b.kwargs:
                fixed.append(f"{name}: {a.label}")
    allowed = {"causal_mask: T = 3", "causal_mask: T = 1", "causal_mask: T = 2",
               "dot_product_variance: d_k = 4 with the default n_samples and seed",
               "softmax_jacobian: a single entry p = [1.0]",
               # a permutation of a one-hot p (its Jacobian is 0 whatever the order)
               "softmax_jacobian: an exactly one-hot p from logits around ±1e4"}
    assert set(fixed) <= allowed, sorted(set(fixed) - allowed)
