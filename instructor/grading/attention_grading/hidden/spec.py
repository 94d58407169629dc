"""What a hidden test checks for one graded function: its cases, tolerances and likely mistakes.

Specs live in the grader only. The grader builds each ``Case``, sends its inputs into the
learner's kernel as data (``kernel_probe``), and judges what comes back against the reference
(``judge``). Cases are drawn from a generator the grader derives from the course's secret and the
submission's attempt (``cases.case_generator``, ``attempts``): they differ from one attempt to the next,
so recording them teaches nothing, and only the same attempt graded again gets the same cases. A
case's arguments may name things that live in the kernel (``Learner``: one of
the learner's functions) or in the grader (``Callback``: a function the grader evaluates when the
kernel calls it, such as a loss for ``numerical_gradient``). Where a case needs more than one
call (a training loop, a sampler), the loop runs in the grader (``Spec.driver``) and only the
learner's function runs in the kernel: no code of the course's that the learner could rebind
there takes part in a verdict.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Learner:
    """A function of the learner's, by name: it is looked up in the kernel's namespace."""
    name: str


@dataclass(eq=False)
class Shared:
    """An argument that the calls of one batch share: sent once, decoded once in the kernel, the
    same object in each call, in turn (a Generator drawn from by one call after another, as in a
    loop). Used by drivers (``Spec.driver``)."""
    value: Any


@dataclass
class Callback:
    """A function evaluated by the grader whenever the kernel calls it (it never enters the kernel)."""
    function: Callable


@dataclass
class Case:
    """One call of the graded function: ``fn(*args, **kwargs)``, described for a learner."""
    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    note: Any = None             # what the judge needs besides the call (stays in the grader)


@dataclass
class Call:
    """One extra call made for a measurement (see ``Spec.extra_calls``)."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    target: Any = None           # default: the spec's target
    memory: bool = False         # the grader measures the memory the sandbox takes during it (a batch of its own)
    # Measured calls with the same key share one fresh kernel, in order, and the meter is never reset
    # between them: each one's figure is the most the sandbox took since that kernel's meter started.
    # None: a fresh kernel of its own.
    kernel: Any = None
    warnings: bool = False       # record the RuntimeWarnings it raises
    # report whether it reseeded or drew from NumPy's global generator (``global_generator_moved``)
    global_generator: bool = False
    note: Any = None             # what judge_extra needs besides the call (stays in the grader)


@dataclass
class Bug:
    """A mistake learners really make, as a function of (reference module, *args, **kwargs).

    When a wrong answer equals this bug's output on the failing case, the diagnosis says so.
    Where equality is not the test (draws that fit a distribution, a result judged by its own
    ``compare``), ``matches(R, case, learner's value)`` says whether the mistake reproduces the
    learner's answer on ``case``, and ``output`` may be left out.
    """
    explanation: str
    output: Optional[Callable[..., Any]] = None
    matches: Optional[Callable[..., bool]] = None


class Mismatch(Exception):
    """Raised by ``Spec.adapt`` when a return value has the wrong form (its message says how)."""


@dataclass
class Spec:
    """The hidden test of one graded function."""

    name: str
    # The cases, drawn from the generator it is given (never from a fixed seed of its own).
    cases: Callable[[np.random.Generator], list]
    outputs: tuple = ("output",)          # names of the returned values, in order
    rtol: float = 1e-7
    atol: float = 1e-9
    bugs: tuple = ()
    # What the kernel calls: the learner's function of this name unless said otherwise.
    target: Any = None
    # The learner's return value into the form compared (e.g. a dict into a tuple), or Mismatch.
    adapt: Optional[Callable[[Any], Any]] = None
    # Replacement for the value comparison of one case: (R, case, learner_out) -> message or None.
    compare: Optional[Callable[..., Optional[str]]] = None
    # Case calls record RuntimeWarnings; a right answer that warned fails with this message.
    warnings_fail: Optional[Callable[[str, str], str]] = None
    # Measurements: more calls (built by the grader from the same generator, after the cases),
    # judged together once every case passed.
    extra_calls: Optional[Callable[[np.random.Generator], list]] = None
    # (R, the extra Calls, their results) -> why they fail, or None.
    judge_extra: Optional[Callable[..., Optional[str]]] = None
    # Earlier graded functions this one may call: during the check, those names in the learner's
    # namespace are stand-ins the grader answers with the reference, so a mistake there costs
    # points only there.
    substitutes: tuple = ()
    # Functions of earlier lessons this one may call: the learner brings them into this notebook,
    # where no test grades them, so their stand-ins (the reference's, like a substitute's) are
    # lent from the first call, within the same limits on calls and inputs.
    lent: tuple = ()
    # Stand-ins each case must ask for, at least this many times ({name: count}): an exercise that
    # says "build it from your layer_norm" holds the answer to it (an answer that inlines the earlier
    # function also escapes the stand-in that protects it from that function's mistakes).
    calls_required: dict = field(default_factory=dict)
    # (R, case, the stand-in calls the case made: [(name, {parameter: what it was given})]) -> why
    # they break what the exercise asks ("pass on the temperature you were given"), or None;
    # judged once the values are right. What it was given: an array's shape, a Generator's state
    # before and after the call, a scalar as it was.
    judge_stand_ins: Optional[Callable[..., Optional[str]]] = None
    # The learner's functions whose namespaces the substitution must reach besides the notebook's.
    learner_functions: tuple = ()
    # Each case may take this many times the grader's time for one call (a training run, say).
    time_factor: float = 1.0
    # A case that is a loop of calls (a training run, thousands of draws): ``driver(R, case)`` is a
    # generator run by the grader, outside the learner's reach. It yields lists of ``Call``s of the
    # learner's functions (independent calls, made in the kernel in one batch through the probe),
    # is sent each list's results (``{"value": decoded}`` or ``{"raised": message}``, in order) and
    # returns the case's result, judged as one call's would be: ``{"value": anything}`` or
    # ``{"raised": message}``. The case's time (``time_factor``) covers every batch.
    driver: Optional[Callable] = None

    def __post_init__(self):
        if self.target is None:
            self.target = Learner(self.name)


# Every hidden test by name, filled by the lessons' spec modules as ``registry`` imports them.
REGISTRY: dict = {}


class DuplicateSpec(ValueError):
    """Two lessons register a hidden test under the same name: the check in a notebook
    (``check("softmax")``) would no longer say which one it runs."""


def register(*specs):
    """Add hidden tests to the registry; a name another module already registered fails loudly
    (a lesson may not silently replace another lesson's test)."""
    for spec in specs:
        known = REGISTRY.get(spec.name)
        if known is not None and _origin(known) != _origin(spec):
            raise DuplicateSpec(f"the hidden test {spec.name!r} of {_origin(spec)} is already registered by "
                                f"{_origin(known)}: graded function names must be unique across lessons")
        REGISTRY[spec.name] = spec


def _origin(spec):
    return getattr(spec.cases, "__module__", None) or "?"
