"""``--resamplers`` for the refund desk (`tests.attribution.refunds`): its model, which refuses a
``null`` tool result."""

from __future__ import annotations

from typing import Any

from otel_replay import RolloutContext, Step, resampler
from tests.attribution.refunds import answer


@resampler("llm")
def model(step: Step, ctx: RolloutContext) -> Any:
    return answer(step, ctx)
