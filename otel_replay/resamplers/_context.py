"""What a resample function is given besides the recorded step."""

from __future__ import annotations

import random
from dataclasses import dataclass

from otel_replay.model import Step, Trajectory


@dataclass(frozen=True, slots=True)
class RolloutContext:
    """The world of one rollout, as one resample function sees it.

    Attributes:
        rng: seeded for this rollout and this step; the only randomness a resample function may use
            (results must not depend on execution order, worker count or executor).
        history: the counterfactual steps before this one, in order, with their new outputs.
        factual: the recorded trajectory (must not be mutated).
        plan: the `otel_replay.replay.Plan` being rolled out.
    """

    rng: random.Random
    history: tuple[Step, ...]
    factual: Trajectory
    plan: object


class StepFailed(Exception):
    """Raise from a resample function to make the step fail (status ``error``) in this rollout.

    A tool that times out is an outcome to sample, not a bug: anything else a resample function raises
    stops the run (or fails the rollout, with ``--on-resampler-error fail-rollout``).
    """
