"""A hidden test's verdict, from what the conversation gathered (``judge``), and how it stopped
if it stopped early (a timeout, a crash, a refusal)."""
import itertools

from ..results import CRASHED, REFUSED, TIMEOUT, Verdict
from .judge import judge


def _case_results(conversation, cases):
    return [dict(batch[0], stand_ins=conversation.stand_ins.get(index, {}),
                 stand_in_calls=conversation.stand_in_calls.get(index, []),
                 **({"refused": conversation.refusals[index]} if index in conversation.refusals else {}))
            for index, batch in enumerate(conversation.results[:len(cases)])]


def cases_pass(spec, reference, cases, conversation):
    """Are the results on every case right? (If not, no measurement can change the verdict.)"""
    return judge(spec, reference, cases, _case_results(conversation, cases)).passed


def decide(spec, reference, cases, conversation, stopped=None):
    """The verdict, from the results gathered (and how the test stopped, if it stopped early)."""
    results = _case_results(conversation, cases)
    if stopped is not None:
        index = min(stopped.index, len(cases) - 1)
        label = cases[index].label if stopped.index < len(cases) else "the measurement calls"
        # A wrong answer before the stop is the more useful message.
        early = judge(spec, reference, cases[:len(results)], results) if results else None
        if early is not None and not early.passed:
            return early
        message = {TIMEOUT: f"On {label}, your {spec.name} did not finish in the time the grader allows.",
                   CRASHED: f"On {label}, the kernel died while running your {spec.name} "
                            "(os._exit, a crash, or too much memory).",
                   REFUSED: f"The hidden test of {spec.name} could not be run: {stopped.detail}"}[stopped.kind]
        return Verdict(spec.name, False, message, kind=stopped.kind, cases=len(cases), case=label)
    extra = list(itertools.chain.from_iterable(conversation.results[len(cases):]))
    return judge(spec, reference, cases, results, extra, conversation.extra)
