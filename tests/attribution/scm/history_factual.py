"""The ``history`` model with a resample function that reads the RECORD where it must read the history.

Everything is as in ``history.py`` except ``reply``, which takes the lookup from ``ctx.factual`` (the
recorded run) instead of ``ctx.history``. Theory for this broken variant:

* attribution: step 1 = 0 (a resampled lookup never reaches the reply); step 0 = 1 - 0.7 = 0.3 (the
  escalation still works); steps 3, 4 = 0.
* Point of Commitment = 0: the wrong step. The test uses it to show that reading the history matters.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

P_ESCALATE = 0.3
P_SHIPPED = 0.8


@resampler("llm", name="triage")
def triage(step: Step, ctx: RolloutContext) -> Any:
    route = "escalate" if ctx.rng.random() < P_ESCALATE else "self_serve"
    return {"role": "assistant", "route": route}


@resampler("tool", name="lookup_order")
def lookup_order(step: Step, ctx: RolloutContext) -> Any:
    status = "shipped" if ctx.rng.random() < P_SHIPPED else "processing"
    return {"order_id": "A-17", "status": status}


@resampler("llm", name="reply")
def reply_from_the_record(step: Step, ctx: RolloutContext) -> Any:
    lookup = next(s for s in ctx.factual.steps if s.name == "lookup_order")  # the mistake
    return {"role": "assistant", "content": f"Order A-17 is {lookup.output['status']}."}


@resampler("tool", name="send_reply")
def send_reply(step: Step, ctx: RolloutContext) -> Any:
    return {"message_id": ctx.rng.randrange(1000)}


@verifier
def customer_told_the_truth(trajectory: Trajectory) -> float:
    by_name = {s.name: s for s in trajectory.steps}
    escalated = by_name["triage"].output.get("route") == "escalate"
    told = "shipped" in str(by_name["reply"].output.get("content", ""))
    return 1.0 if escalated or told else 0.0
