"""Tool resample functions with a bug that shows in one call in three (by the call's own stream,
so in the same rollouts every time): they raise, which ends the rollout (`attribute
--on-resampler-error fail-rollout` counts it as a failure)."""

from __future__ import annotations

from typing import Any

from otel_replay import Step
from otel_replay.resamplers import RolloutContext, resampler


@resampler("tool", name="lookup_order")
def lookup_order(step: Step, ctx: RolloutContext) -> Any:
    if ctx.rng.random() < 1 / 3:
        raise KeyError("order_id")
    return {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}


@resampler("tool", name="track_shipment")
def track_shipment(step: Step, ctx: RolloutContext) -> Any:
    if ctx.rng.random() < 1 / 3:
        raise KeyError("tracking_id")
    return {"tracking_id": "TRK-42", "status": "delayed", "eta": "2026-12-04"}
