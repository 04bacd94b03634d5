"""Faults as a resample function: a tool call answered the way a flaky dependency fails it.

`injected_fault` is what ``--tools recorded,faults`` answers the tool calls no stored run recorded
with: the call fails (`StepFailed`), with the text of the built-in ``error`` or ``timeout`` fault
(``fork --fault``), one of the two drawn from the call's own random stream. A failure is a result a
real tool can give, which the agent meets as `otel_replay.replay.StepError`; a made-up output would
be a value no world produced.
"""

from __future__ import annotations

from typing import NoReturn

from otel_replay.model import Step
from otel_replay.resamplers._context import RolloutContext, StepFailed

#: The built-in faults that fail a step, by name, with the error text they record.
FAILURES: dict[str, str] = {
    "error": "injected fault: error",
    "timeout": "injected fault: TimeoutError: the operation timed out",
}


def injected_fault(step: Step, ctx: RolloutContext) -> NoReturn:
    """Fail the call with one of `FAILURES`, drawn from ``ctx.rng``."""
    raise StepFailed(FAILURES[ctx.rng.choice(sorted(FAILURES))])
