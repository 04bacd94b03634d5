"""Resample functions for the executor benchmark: every tool step waits 50 ms (a model or an API on
the other end of a network) and returns what it was given; the verifier fails every run."""

from __future__ import annotations

import time
from typing import Any

from otel_replay import Step, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

WAIT_SECONDS = 0.05


@resampler("tool")
def waits(step: Step, ctx: RolloutContext) -> Any:
    time.sleep(WAIT_SECONDS)
    return step.output


@verifier
def never(trajectory: Trajectory) -> float:
    return 0.0
