"""Planted faults: a passing run whose answer depends on one tool's result, and a tool it never reads.

Factual run (``faults.jsonl``, outcome 1)::

    0 llm  plan          a fixed message
    1 tool list_deploys  ["v841", "v840"]   <- what the answer reads
    2 tool audit_log     {"logged": true}   never read
    3 llm  answer        "Deploy v841 ..."

``answer`` reads the latest ``list_deploys`` in ctx.history: a failed call (status error) leaves it
guessing, right with probability 0.3; a list without v841 makes it wrong; a list holding v841 alone
(the first half of the recorded list) makes it right with probability 0.7; the whole list, always.
The verifier: success iff the answer names v841.

Theory, the failure rate of each cell of ``sweep --faults error,timeout,empty,truncate,stale``
(`TRUTH`): list_deploys: error 0.7, timeout 0.7, empty 1.0, truncate 0.3, stale 1.0 (the user
fault below drops v841); audit_log: 0 under every fault (nothing reads it). The record passes.

``CALLS`` counts every resample-function call, so a test can show that a dry run makes none.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, StepStatus, Trajectory, fault, resampler, verifier
from otel_replay.resamplers import RolloutContext, StepFailed

CULPRIT = "v841"
P_RIGHT_FAILED = 0.3
P_RIGHT_ALONE = 0.7
CALLS: list[str] = []

TRUTH = {
    (1, "error"): 0.7,
    (1, "timeout"): 0.7,
    (1, "empty"): 1.0,
    (1, "truncate"): 0.3,
    (1, "stale"): 1.0,
    **{(2, f): 0.0 for f in ("error", "timeout", "empty", "truncate", "stale")},
}


@resampler("llm", name="plan")
def plan(step: Step, ctx: RolloutContext) -> Any:
    CALLS.append("plan")
    return {"role": "assistant", "content": "List the deploys."}


@resampler("tool", name="list_deploys")
def list_deploys(step: Step, ctx: RolloutContext) -> Any:
    CALLS.append("list_deploys")
    return ["v841", "v840"]


@resampler("tool", name="audit_log")
def audit_log(step: Step, ctx: RolloutContext) -> Any:
    CALLS.append("audit_log")
    return {"logged": True}


@resampler("llm", name="answer")
def answer(step: Step, ctx: RolloutContext) -> Any:
    CALLS.append("answer")
    listed = next(s for s in reversed(ctx.history) if s.name == "list_deploys")
    if listed.status is StepStatus.ERROR:
        right = ctx.rng.random() < P_RIGHT_FAILED
    elif CULPRIT not in (listed.output or []):
        right = False
    elif len(listed.output) == 1:
        right = ctx.rng.random() < P_RIGHT_ALONE
    else:
        right = True
    deploy = CULPRIT if right else "v840"
    return {"role": "assistant", "content": f"Deploy {deploy} broke checkout."}


@fault("stale")
def stale(step: Step) -> Any:
    """A cache that lost the newest deploy; any other step fails as a stale read."""
    if isinstance(step.output, list):
        return [d for d in step.output if d != CULPRIT]
    raise StepFailed("stale cache: the entry expired")


@verifier
def names_the_culprit(trajectory: Trajectory) -> float:
    final = next(s for s in reversed(trajectory.steps) if s.name == "answer")
    return 1.0 if CULPRIT in str(final.output.get("content", "")) else 0.0
