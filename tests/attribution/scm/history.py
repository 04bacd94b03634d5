"""A step whose resample function must read ``ctx.history``: the reply repeats the looked-up status.

Factual run (``history.jsonl``, outcome 0)::

    0 llm  triage        {"route": "self_serve"}     escalates to a human (who always fixes it) w.p. 0.3
    1 tool lookup_order  {"status": "processing"}    <- planted culprit: stale; "shipped" w.p. 0.8
    2 tool audit_log     observed-only
    3 llm  reply         tells the customer the status of the latest lookup_order in ctx.history
    4 tool send_reply    noise (a message id)

The verifier: success iff the run was escalated or the reply says "shipped".

Theory (this module, which reads the counterfactual history):

* attribution: step 1 = 1 - 0.2 = 0.8; step 0 = 0.2 - 0.7 * 0.2 = 0.06; steps 3, 4 = 0.
* Point of Commitment = 1, verdict culprit.
* Shapley: ``v(S) = T(S) * R(S)`` with T = 1 if S holds 0 else 0.7 and R = 1 if S holds 1 or 3 else
  0.2: phi_0 = 0.22, phi_1 = phi_3 = 0.32, phi_4 = 0; v(all) = 1, v(none) = 0.14.

``history_factual.py`` is the same model with one mistake: its ``reply`` reads the lookup from the
recorded run (``ctx.factual``) instead of ``ctx.history``. A resampled lookup then never reaches the
reply, step 1's attribution collapses to 0, and the triage step's direct effect (1 - 0.7 = 0.3) is the
latest one left: that variant names step 0, the wrong step.
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
def reply(step: Step, ctx: RolloutContext) -> Any:
    lookup = next(s for s in reversed(ctx.history) if s.name == "lookup_order")
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
