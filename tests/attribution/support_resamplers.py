"""Resample functions for the support agent of ``tests/replay/test_instrument.py`` asked about the
refund policy alone (a run of three steps: the model asks for ``search_policies``, the tool answers,
the model answers). Half the time the resampled answer gives the shipment's date, which the
verifier (``--success-if 2026-12-04``) asks for; the record's answer never does. Each answers a
message in the store's shape, as resample functions do, while the record holds what the OpenAI SDK
returned."""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, conversation
from otel_replay.resamplers import RolloutContext, repair_candidates, resampler

DATED = "Order A-1001 is delayed, new ETA 2026-12-04; a late delivery is refundable."
#: What the fake server answered (`examples/fake_model_server.py` ``POLICY_ANSWER``).
UNDATED = "Late deliveries (more than 3 days) qualify for a full refund of the shipping cost."


@resampler("llm")
def model(step: Step, ctx: RolloutContext) -> Any:
    messages = conversation(step.inputs)
    if messages and messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": DATED if ctx.rng.random() < 0.5 else UNDATED}
    call = {"id": "call_0", "name": "search_policies", "arguments": {"query": "late delivery"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@resampler("tool", name="search_policies")
def policies(step: Step, ctx: RolloutContext) -> Any:
    return ["Refunds: a delivery more than 3 days late qualifies for a full refund."]


@repair_candidates
def the_record_as_a_message(step: Step, factual: Trajectory) -> list[Any]:
    """The recorded answer, said as a message: the same turn, so no candidate."""
    return [{"role": "assistant", "content": UNDATED}] if step.kind.value == "llm" else []
