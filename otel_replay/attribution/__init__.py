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
    from otel_replay.attribution._api import attribute
    from otel_replay.attribution._config import (
        AttributionConfig,
        Method,
        OnResamplerError,
        OnSuccess,
        Strategy,
    )
    from otel_replay.attribution._results import AttributionResult, Mode, Verdict
    from otel_replay.attribution._run import attribute_stored
    from otel_replay.attribution._sweep import SweepResult, sweep
    from otel_replay.attribution._sweep_stored import sweep_stored
    from otel_replay.replay import Driver

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.attribution._config import MAX_PERMUTATIONS as MAX_PERMUTATIONS
    from otel_replay.attribution._config import BudgetUnit as BudgetUnit
    from otel_replay.attribution._config import budget_settings as budget_settings
    from otel_replay.attribution._config import budget_text as budget_text
    from otel_replay.attribution._config import budget_words as budget_words
    from otel_replay.attribution._config import config_digest as config_digest
    from otel_replay.attribution._config import rerun_command as rerun_command
    from otel_replay.attribution._config import suspect_setting as suspect_setting
    from otel_replay.attribution._contrastive import ERROR_BOUND as ERROR_BOUND
    from otel_replay.attribution._cost import PlannedCost as PlannedCost
    from otel_replay.attribution._engine import Progress as Progress
    from otel_replay.attribution._engine import Spending as Spending
    from otel_replay.attribution._engine import Spent as Spent
    from otel_replay.attribution._results import Proportion as Proportion
    from otel_replay.attribution._results import RootCause as RootCause
    from otel_replay.attribution._results import Share as Share
    from otel_replay.attribution._results import StepAttribution as StepAttribution
    from otel_replay.attribution._results import SuffixTest as SuffixTest
    from otel_replay.attribution._results import Suspect as Suspect
    from otel_replay.attribution._results import percent as percent
    from otel_replay.attribution._run import RunJob as RunJob
    from otel_replay.attribution._run import Told as Told
    from otel_replay.attribution._run import attribute_job as attribute_job
    from otel_replay.attribution._run import job_of as job_of
    from otel_replay.attribution._run import planned_cost_stored as planned_cost_stored
    from otel_replay.attribution._spend import Spend as Spend
    from otel_replay.attribution._stats import BOOTSTRAP as BOOTSTRAP
    from otel_replay.attribution._stats import EXACT_DIFFERENCE as EXACT_DIFFERENCE
    from otel_replay.attribution._stats import STATED_PROPORTION as STATED_PROPORTION
    from otel_replay.attribution._stats import WILSON as WILSON
    from otel_replay.attribution._stats import wilson as wilson
    from otel_replay.attribution._sweep import CellVerdict as CellVerdict
    from otel_replay.attribution._sweep import SweepCell as SweepCell
    from otel_replay.attribution._sweep import SweepCost as SweepCost
    from otel_replay.attribution._sweep_stored import sweep_cost_stored as sweep_cost_stored
    from otel_replay.attribution._variation import WORLD as WORLD
    from otel_replay.attribution._variation import Variation as Variation

__all__ = [
    "AttributionConfig",
    "AttributionResult",
    "Driver",
    "Method",
    "Mode",
    "OnResamplerError",
    "OnSuccess",
    "Strategy",
    "SweepResult",
    "Verdict",
    "attribute",
    "attribute_stored",
    "sweep",
    "sweep_stored",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "BOOTSTRAP",
    "ERROR_BOUND",
    "EXACT_DIFFERENCE",
    "MAX_PERMUTATIONS",
    "STATED_PROPORTION",
    "WILSON",
    "WORLD",
    "BudgetUnit",
    "CellVerdict",
    "PlannedCost",
    "Progress",
    "Proportion",
    "RootCause",
    "RunJob",
    "Share",
    "Spend",
    "Spending",
    "Spent",
    "StepAttribution",
    "SuffixTest",
    "Suspect",
    "SweepCell",
    "SweepCost",
    "Told",
    "Variation",
    "attribute_job",
    "budget_settings",
    "budget_text",
    "budget_words",
    "config_digest",
    "job_of",
    "percent",
    "planned_cost_stored",
    "rerun_command",
    "suspect_setting",
    "sweep_cost_stored",
    "wilson",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
