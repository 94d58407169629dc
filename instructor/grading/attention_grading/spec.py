"""What a hidden test checks for one graded function: its cases, tolerances and likely bugs.

A ``Spec`` is imported by both sides: the kernel builds the cases and calls the learner's
function on them; the judge builds the same cases again, runs the reference and compares.
Specs never import the reference themselves; the judge hands it to ``Bug`` callables.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np


@dataclass
class Case:
    """One call of the graded function: ``fn(*args, **kwargs)``, described for a learner."""

    label: str
    args: tuple
    kwargs: dict = field(default_factory=dict)


@dataclass
class Bug:
    """A mistake learners really make, as a function of (reference module, *args, **kwargs).

    When a wrong answer equals this bug's output on the failing case, the diagnosis says so.
    """

    explanation: str
    output: Callable[..., Any]


@dataclass
class Spec:
    """The hidden test of one graded function."""

    name: str
    cases: Callable[[], list]
    outputs: tuple = ("output",)          # names of the returned values, in order
    rtol: float = 1e-7
    atol: float = 1e-9
    bugs: tuple = ()
    # Optional hooks: measure something in the kernel (e.g. peak memory) and judge it.
    measure: Optional[Callable[[Callable], dict]] = None
    judge_measurements: Optional[Callable[[dict], Optional[str]]] = None
    # Optional replacement for the value comparison of one case: (R, case, learner_out) -> message or None.
    compare: Optional[Callable[..., Optional[str]]] = None
    # Earlier graded functions this one may call: during the check, those names in the learner's
    # namespace point at correct implementations, so a mistake there costs points only there.
    substitutes: tuple = ()


REGISTRY: dict = {}


def register(*specs):
    for spec in specs:
        REGISTRY[spec.name] = spec


def get(name):
    from . import specs  # noqa: F401  (importing the package registers every lesson's specs)

    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no hidden test is registered for {name!r}") from None


def rng(seed):
    """Every case generator draws from its own seeded generator, so both sides agree."""
    return np.random.default_rng(seed)
