"""A ``lookup_order`` resample function with a bug that shows in one rollout in three (by the
rollout's own stream, so the same rollouts every time): it raises, which ends the rollout
(`attribute --on-resampler-error fail-rollout` counts it as a failure)."""

from __future__ import annotations

from typing import Any

from otel_replay import Step
from otel_replay.resamplers import RolloutContext, resampler


@resampler("tool", name="lookup_order")
def lookup_order(step: Step, ctx: RolloutContext) -> Any:
    if ctx.rng.random() < 1 / 3:
        raise KeyError("order_id")
    return {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
