"""Plans (interventions per step) and the trace-driven rollout."""

from otel_replay.replay._plan import HOLD, REMOVE, RESAMPLE, Action, Intervention, Plan
from otel_replay.replay._rollout import Rollout, registrations, rollout, score
from otel_replay.resamplers import step_seed

__all__ = [
    "HOLD",
    "REMOVE",
    "RESAMPLE",
    "Action",
    "Intervention",
    "Plan",
    "Rollout",
    "registrations",
    "rollout",
    "score",
    "step_seed",
]
