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

__getattr__, __dir__ = lazy_exports(__name__, __all__)
