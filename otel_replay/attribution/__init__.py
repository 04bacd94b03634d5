"""Counterfactual failure attribution: Point of Commitment, Shapley credit, minimal repair."""

from otel_replay.attribution._api import attribute, planned_rollouts
from otel_replay.attribution._config import (
    AttributionConfig,
    Method,
    OnResamplerError,
    OnSuccess,
)
from otel_replay.attribution._results import (
    AttributionResult,
    Mode,
    Proportion,
    Repair,
    ShapleySummary,
    StepAttribution,
    Verdict,
)
from otel_replay.attribution._stats import BOOTSTRAP, WILSON

__all__ = [
    "BOOTSTRAP",
    "WILSON",
    "AttributionConfig",
    "AttributionResult",
    "Method",
    "Mode",
    "OnResamplerError",
    "OnSuccess",
    "Proportion",
    "Repair",
    "ShapleySummary",
    "StepAttribution",
    "Verdict",
    "attribute",
    "planned_rollouts",
]
