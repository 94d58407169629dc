"""What a kernel is asked during a hidden test: each case and measurement as wire calls (the
learner's function by name, grader-side functions as callback ids, arrays as ``kernel_probe``
data), one batch per case, the measured calls each a batch of its own, last."""
from . import kernel_probe
from .spec import Call, Callback, Learner, Shared


def wire_argument(value, callbacks, shared=None):
    """Encode an argument for the kernel; grader-side functions become callback ids; a ``Shared``
    one becomes its place in ``shared`` (the batch's list of them), where it is encoded once."""
    if isinstance(value, Shared):
        if shared is None:
            return kernel_probe.encode(value.value)
        for index, (known, _) in enumerate(shared):
            if known is value:
                return {"shared": index}
        shared.append((value, kernel_probe.encode(value.value)))
        return {"shared": len(shared) - 1}
    if isinstance(value, Learner):
        return {"learner": value.name}
    if isinstance(value, Callback):
        key = f"callback-{len(callbacks)}"
        callbacks[key] = value.function
        return {"callback": key}
    return kernel_probe.encode(value)


def wire_call(target, args, kwargs, callbacks, record_warnings=False, shared=None, global_generator=False):
    options = {"warnings": record_warnings, **({"global_generator": True} if global_generator else {})}
    return {"target": wire_argument(target, callbacks),
            "args": [wire_argument(a, callbacks, shared) for a in args],
            "kwargs": {k: wire_argument(v, callbacks, shared) for k, v in kwargs.items()},
            "options": options}


class Driven:
    """A case's batch whose calls the spec's driver decides in the grader, one batch at a time
    (``Spec.driver``)."""

    def __init__(self, case):
        self.case = case


def plan_calls(spec, cases, g):
    """(batches of wire calls, callbacks, extra calls, the batches whose memory the grader
    measures): one batch per case (a ``Driven`` one for a spec with a driver), then one of the
    extra calls (drawn from ``g``, the generator the cases came from), except that each call whose
    memory is measured is a batch of its own.

    The measured batches come last, as ``{batch: the fresh kernel that serves it}`` (numbered from
    0); the batches of one kernel (``Call.kernel``) are consecutive, in the order given."""
    callbacks = {}
    batches = [Driven(case) if spec.driver is not None else
               [wire_call(spec.target, case.args, case.kwargs, callbacks, record_warnings=spec.warnings_fail is not None)]
               for case in cases]
    extra = [c for c in (spec.extra_calls(g) if spec.extra_calls else []) if isinstance(c, Call)]
    plain, kernels, in_kernels = [c for c in extra if not c.memory], {}, []
    for position, call in enumerate(extra):
        if call.memory:
            key = ("own", position) if call.kernel is None else ("shared", call.kernel)
            in_kernels.append((kernels.setdefault(key, len(kernels)), call))
    in_kernels.sort(key=lambda pair: pair[0])          # stable: one kernel's calls in the order given
    extra = plain + [call for _, call in in_kernels]

    def wired(call):
        return wire_call(call.target or spec.target, call.args, call.kwargs, callbacks, record_warnings=call.warnings,
                         global_generator=call.global_generator)

    for call in plain:
        if len(batches) > len(cases):
            batches[-1].append(wired(call))
        else:
            batches.append([wired(call)])
    measured = {}
    for kernel, call in in_kernels:
        measured[len(batches)] = kernel
        batches.append([wired(call)])
    return batches, callbacks, extra, measured
