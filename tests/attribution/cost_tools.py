"""A paid ``lookup_order`` for the run of `tests.attribution.cost_resamplers`: it calls the
(pretend) order service, which finds the order two times in three."""

from __future__ import annotations

from typing import Any

from otel_replay import Step
from otel_replay.resamplers import RolloutContext, StepFailed, resampler


@resampler("tool", name="lookup_order")
def lookup_order(step: Step, ctx: RolloutContext) -> Any:
    if ctx.rng.random() < 1 / 3:
        raise StepFailed("503 Service Unavailable")
    return {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
