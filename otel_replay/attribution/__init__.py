"""Counterfactual failure attribution: Point of Commitment, Shapley credit, minimal repair.

The two estimates answer different questions. The contrastive attribution of step i is the effect
of keeping step i *given the recorded prefix* (every earlier step as recorded): it is what locates
the Point of Commitment. Shapley's φ_i is the effect of keeping step i *averaged over which other
steps are kept*: a step whose recorded output only hurts when an earlier step is resampled (or is
harmless only because an earlier step already doomed the run) has φ_i ≠ 0 and attribution 0.
`StepAttribution.shapley_disagrees` flags a step where they differ beyond their intervals.

Exports load on first use (`otel_replay._lazy`): the CLI's option types come from ``_config``
without loading the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.attribution._api import attribute, planned_rollouts
    from otel_replay.attribution._config import (
        MAX_PERMUTATIONS,
        AttributionConfig,
        Method,
        OnResamplerError,
        OnSuccess,
        Strategy,
        config_digest,
        rerun_command,
    )
    from otel_replay.attribution._contrastive import (
        ERROR_BOUND,
        matters_confidence,
        no_effect_confidence,
    )
    from otel_replay.attribution._cost import PlannedCost, planned_cost
    from otel_replay.attribution._engine import Progress, Spending, Spent
    from otel_replay.attribution._repair import repair_bound
    from otel_replay.attribution._results import (
        AttributionResult,
        Comparison,
        Mode,
        Proportion,
        Repair,
        ShapleySummary,
        StepAttribution,
        SuffixTest,
        Verdict,
        percent,
    )
    from otel_replay.attribution._run import (
        RolloutWork,
        RunJob,
        attribute_job,
        attribute_stored,
        job_of,
        planned_cost_stored,
    )
    from otel_replay.attribution._stats import BOOTSTRAP, WILSON, wilson
    from otel_replay.replay import Driver  # replay's choice, re-exported where it always was

__all__ = [
    "BOOTSTRAP",
    "ERROR_BOUND",
    "MAX_PERMUTATIONS",
    "WILSON",
    "AttributionConfig",
    "AttributionResult",
    "Comparison",
    "Driver",
    "Method",
    "Mode",
    "OnResamplerError",
    "OnSuccess",
    "PlannedCost",
    "Progress",
    "Proportion",
    "Repair",
    "RolloutWork",
    "RunJob",
    "ShapleySummary",
    "Spending",
    "Spent",
    "StepAttribution",
    "Strategy",
    "SuffixTest",
    "Verdict",
    "attribute",
    "attribute_job",
    "attribute_stored",
    "config_digest",
    "job_of",
    "matters_confidence",
    "no_effect_confidence",
    "percent",
    "planned_cost",
    "planned_cost_stored",
    "planned_rollouts",
    "repair_bound",
    "rerun_command",
    "wilson",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
