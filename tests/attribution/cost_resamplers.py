"""A model for the OpenAI Agents support run whose ``lookup_order`` failed
(``tests/fixtures/frameworks/openai-agents.otlp.jsonl``, "support run tool-error"): the first turn
asks for the lookup as recorded; the last answers with the shipment's date (what
``--success-if 2026-12-04`` asks for) when the lookup it was handed found the order, and apologises
otherwise. With ``--tools recorded`` the lookup is drawn from the store (two runs found the order),
so the failed lookup is the culprit and the model calls are what a rollout pays for."""

from __future__ import annotations

from typing import Any

from otel_replay import Step
from otel_replay.resamplers import RolloutContext, resampler

DATED = "Order A-1001 shipped; new ETA 2026-12-04."
SORRY = "Sorry, I could not look up order A-1001 right now; please try again later."


@resampler("llm")
def model(step: Step, ctx: RolloutContext) -> Any:
    looked_up = [s for s in ctx.history if s.kind.value == "tool"]
    if not looked_up:
        return step.output
    found = looked_up[-1].output
    shipped = isinstance(found, dict) and found.get("status") == "shipped"
    return {"role": "assistant", "content": DATED if shipped else SORRY}
