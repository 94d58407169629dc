"""Visible checks: each one either passes quietly with a tick or says *why* it failed.

In the spirit of d2l's ``check_shape`` and Karpathy's ``cmp``: a failed check names
what was compared, where it differs, and the cause when the evidence points at one (a
known wrong answer that matches exactly, the rows that are wrong, a constant factor).
A hint that the evidence does not support is worse than none, so most hints are
conditional.

A failed check shows its message, the line of your code that raised (if any) and the
line of the check, not the helpers' own traceback (see ``CheckFailed``).

A package of modules, one job each; every name is re-exported here, so that
``from attention_course.checks import cmp`` and ``checks.cmp`` work as they always did.
"""
from .failures import (  # noqa: F401
    CheckFailed, _callee, _is_library, _is_ours, _learner_frames, _learner_line, _LIBRARY_DIRS,
    _name_of, _not_implemented, _PACKAGE_DIR, _quietly, _silenced, _stderr_discarded, _wrapped)
from .calls import (  # noqa: F401
    call, check_attempted, check_earlier, check_inputs_unchanged, check_returns, _arrays,
    _calls, _check_not_mutated, _describe_change, _earlier_problem, _explain_error, _is_stub,
    _named_arguments, _shape_words, _shapes)
from .notebook import (  # noqa: F401
    _demonstration_lines, _follow_the_notebook, _LEARNER_FUNCTIONS, _one_line, _Record, _RECORD,
    _show_error)
from .values import (  # noqa: F401
    check_finite, check_no_numpy_warning, check_rows_sum_to_one, check_shape, cmp,
    cmp_known_mistakes, _distinct, _where_nan)
from .batches import (  # noqa: F401
    BATCHES, check_batch_axes, _batch_item)
from .masks import (  # noqa: F401
    check_causal_mask, check_masked_rows, _masked_mistakes, _row_softmax)
from .scale import (  # noqa: F401
    check_global_generator_untouched, check_score_scale, check_statistic, _softmax_scale)
from .memory import (  # noqa: F401
    check_key_blocks, check_memory_growth, _peaks, _per_pair)
from .gradients import (  # noqa: F401
    check_gradient, check_probes, check_zero, rel_error, _central_differences, _constant_factor)
from .model_gradients import (  # noqa: F401
    BACKPROP_ORDER, check_loss_matches_forward, check_model_gradients,
    _diagnose_model_gradients, _embedding_cause, _mean_cross_entropy, _PATHS)
