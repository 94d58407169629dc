"""The visible checks of lesson 09 (a small GPT): worked examples and the wrong answers they recognise.

Each ``..._mistakes`` function returns ``(what was done, what it gives)`` pairs, computed from
their definitions on the example at hand, for ``checks.cmp_known_mistakes``: a message names a
mistake only when the learner's output equals what that mistake gives, and no other mistake's
does. What a check expects is computed here from the lesson's definitions (layer norm, attention,
the block, the full causal pass), never from the learner's other functions; where the function
checked calls an earlier one, ``checks.check_earlier`` confirms that one first on the inputs the
check will hand it (``generate_earlier_examples``). The hidden tests name mistakes from the same
definitions, and say a wrong form in the same words (``attention_course.forms``).

A package of modules, one job each; every name is re-exported here, so that
``gpt_checks.check_sampler`` works as it always did.
"""
from .block import (  # noqa: F401
    block_expected, block_outputs, check_calls, confirm_numerical_gradient, example_block,
    layer_norm_backward_mistakes, layer_norm_backward_variant, layer_norm_expected,
    layer_norm_mistakes, layer_norm_variant, merge_heads_expected, mha_loop,
    positional_encoding_expected, positional_encoding_mistakes, sinusoids, split_heads_expected,
    _floats)
from .sampling import (  # noqa: F401
    check_sampler, check_token, SAMPLING_MISTAKES, sampling_mistakes_that_fit,
    sampling_probabilities, _fit, _TEMPERATURE_UNUSED)
from .generation import (  # noqa: F401
    check_cache_memory, check_generate_pieces, check_generation, check_greedy, full_pass,
    generate_earlier_examples, GENERATION_MISTAKES, passing_on_problem, RETURNED,
    ROWS_PER_TOKEN, rows_problem, token_rows, tokens_problem, _counting_rows, _recording_draws,
    _sampler_examples)
