"""The hidden reference implementation of every graded function in the course.

Instructor-only: it lives outside the installable learner package and outside
``source/<lesson>/`` (nbgrader copies every non-notebook file there into the
release). Hidden tests never import it inside a learner's kernel; the judge
process does (see ``attention_grading.hidden.judge``).

Conventions (COURSE.md): token vectors are rows, float64 everywhere, inputs are
never mutated, leading batch dimensions are allowed, masks are boolean with
True meaning "may attend", applied before the softmax, and a row with nothing
visible gets all-zero weights.
"""
from .core import softmax, masked_softmax, contextualize, causal_mask
from .attention import (
    project,
    self_attention,
    dot_product_variance,
    scaled_dot_product_attention,
    softmax_jacobian,
    causal_self_attention,
)
from .gradients import (
    softmax_backward,
    attention_backward,
    numerical_gradient,
    self_attention_backward,
)
from .multi_head import split_heads, merge_heads, multi_head_attention
from .tiled import tiled_attention

__all__ = [
    "softmax", "masked_softmax", "contextualize", "causal_mask",
    "project", "self_attention", "dot_product_variance",
    "scaled_dot_product_attention", "softmax_jacobian", "causal_self_attention",
    "softmax_backward", "attention_backward", "numerical_gradient",
    "self_attention_backward", "split_heads", "merge_heads",
    "multi_head_attention", "tiled_attention",
]

# Lesson 07 designs its own small model; its graded pieces (tests/test_reference_capstone.py).
from .capstone import model_forward, model_backward, adam_step, trained_model  # noqa: E402,F401
# Lesson 09: a small GPT (tests/test_reference_gpt.py).
from .gpt import (positional_encoding, layer_norm, layer_norm_backward, transformer_block,  # noqa: E402,F401
                  model_logits, next_token_probabilities, sample_next, generate)


def _lesson_references():
    """A lesson's own reference in its folder (``instructor/lessons/<id>/reference.py``, as
    ``make new-lesson`` writes it), found by folder: each is the module
    ``attention_reference.lesson<id>`` and the functions it defines join the package's."""
    import importlib.util
    import sys
    from pathlib import Path

    lessons = Path(__file__).resolve().parents[2] / "lessons"
    for path in sorted(lessons.glob("[0-9][0-9]_*/reference.py")):
        name = f"{__name__}.lesson{path.parent.name}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        for key, value in vars(module).items():
            if callable(value) and getattr(value, "__module__", None) == name and not key.startswith("_"):
                globals()[key] = value
                __all__.append(key)


_lesson_references()
