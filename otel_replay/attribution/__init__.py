"""Counterfactual failure attribution: Point of Commitment, Shapley credit, minimal repair."""

from otel_replay.attribution._api import attribute, planned_rollouts
from otel_replay.attribution._config import (
    AttributionConfig,
    Driver,
    Method,
    OnResamplerError,
    OnSuccess,
    rerun_command,
)
from otel_replay.attribution._engine import Progress
from otel_replay.attribution._repair import repair_bound
from otel_replay.attribution._results import (
    AttributionResult,
    Mode,
    Proportion,
    Repair,
    ShapleySummary,
    StepAttribution,
    Verdict,
)
from otel_replay.attribution._run import attribute_stored
from otel_replay.attribution._stats import BOOTSTRAP, WILSON

__all__ = [
    "BOOTSTRAP",
    "WILSON",
    "AttributionConfig",
    "AttributionResult",
    "Driver",
    "Method",
    "Mode",
    "OnResamplerError",
    "OnSuccess",
    "Progress",
    "Proportion",
    "Repair",
    "ShapleySummary",
    "StepAttribution",
    "Verdict",
    "attribute",
    "attribute_stored",
    "planned_rollouts",
    "repair_bound",
    "rerun_command",
]
