"""Contrastive attribution and the Point of Commitment.

The estimand is fixed: ``attribution(i) = P(fail | kept_i) − P(fail | ablate_from(i))`` where
``kept_i`` holds every step up to and including ``i`` and resamples the rest. ``kept_i`` equals
``ablate_from(next resamplable step)``, so one plan per resamplable step (and one holding them all)
serves every estimate.

Point of Commitment = the latest resamplable step shown to matter (its difference above zero,
one-sided at alpha/m: Bonferroni over the m resamplable steps) — not the largest effect, which a
butterfly effect early in the run can fake. It is named only when every later resamplable step is
shown to have no effect (two one-sided tests: its 90 % interval inside ±margin); otherwise the verdict
is inconclusive and says between which steps the commitment lies. Credit mode mirrors all of this.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Mode, Proportion, StepAttribution
from otel_replay.attribution._stats import DifferenceDistribution, rollouts_needed, wilson
from otel_replay.replay import Plan, step_seed

#: Error rate of each decision (see the module docstring).
_ALPHA = 0.05


def matters_confidence(m: int) -> float:
    """The confidence of the one-sided bound that shows a step matters, with ``m`` resamplable
    steps (Bonferroni: each test at alpha/m)."""
    return 1 - _ALPHA / max(1, m)


#: The confidence of the interval the equivalence ("no effect") test reads (two one-sided tests
#: at alpha are one interval at 1 − 2·alpha).
NO_EFFECT_CONFIDENCE = 1 - 2 * _ALPHA


@dataclass(frozen=True, slots=True)
class Localisation:
    steps: tuple[StepAttribution, ...]
    point_of_commitment: int | None
    bracket: tuple[int, int] | None
    rollouts_needed: int | None
    outcomes: dict[Plan, list[Outcome]]

    def resampled_from(self, index: int) -> list[Outcome]:
        """The rollouts that held the steps before ``index`` and resampled the rest."""
        n_steps = len(self.steps)
        return self.outcomes[Plan.ablate_from(n_steps, index)]


def kept_plan(n_steps: int, resamplable: Sequence[int], position: int) -> Plan:
    """The plan that keeps the resamplable step at ``position`` (and every step before it)."""
    later = resamplable[position + 1] if position + 1 < len(resamplable) else n_steps
    return Plan.ablate_from(n_steps, later)


def contrastive_plans(
    n_steps: int, resamplable: Sequence[int], rollouts: int
) -> list[tuple[Plan, int]]:
    """What `localise` runs: resampling from each resamplable step on, and holding them all."""
    return [(Plan.ablate_from(n_steps, start), rollouts) for start in [*resamplable, n_steps]]


def _proportion(outcomes: list[Outcome]) -> Proportion:
    failures = sum(o.failed for o in outcomes)
    low, high = wilson(failures, len(outcomes))
    return Proportion(failures, len(outcomes), low, high)


def localise(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> Localisation:
    factual = engine.factual
    n_steps = len(factual.steps)
    outcomes = engine.run(contrastive_plans(n_steps, resamplable, config.rollouts))
    sign = 1.0 if mode is Mode.FAILURE else -1.0
    estimates: dict[int, StepAttribution] = {}
    for position, index in enumerate(resamplable):
        step = factual.steps[index]
        kept = _proportion(outcomes[kept_plan(n_steps, resamplable, position)])
        ablated = _proportion(outcomes[Plan.ablate_from(n_steps, index)])
        rng = random.Random(step_seed(config.seed, "bootstrap", 0, index))
        dist = DifferenceDistribution(kept.failures, kept.n, ablated.failures, ablated.n, rng)
        low, high = dist.interval(0.95)
        # Decisions, each a test with its error rate stated: "matters" one-sided at alpha/m
        # (Bonferroni over the m resamplable steps, so one of many steps cannot look significant
        # by chance); "no effect" by two one-sided tests at alpha (a 90 % interval inside +-margin).
        alpha = _ALPHA / len(resamplable)
        # The bounds each test used, signed like the estimate (rescue credit flips the difference).
        matters_bound = sign * dist.quantile(alpha if mode is Mode.FAILURE else 1 - alpha)
        tost = sorted((sign * dist.quantile(_ALPHA), sign * dist.quantile(1 - _ALPHA)))
        if mode is not Mode.FAILURE:
            low, high = -high, -low
        significant = matters_bound > 0.0
        no_effect = tost[0] >= -config.margin and tost[1] <= config.margin
        estimates[index] = StepAttribution(
            index=index,
            kind=step.kind.value,
            name=step.name,
            resamplable=True,
            attribution=sign * (kept.value - ablated.value),
            ci_low=low,
            ci_high=high,
            kept=kept,
            ablated=ablated,
            significant=significant,
            no_effect=no_effect,
            matters_bound=matters_bound,
            no_effect_interval=(tost[0], tost[1]),
        )
    steps = tuple(
        estimates.get(s.index) or StepAttribution(s.index, s.kind.value, s.name, resamplable=False)
        for s in factual.steps
    )
    poc, bracket, needed = _commitment(steps, resamplable, config)
    return Localisation(steps, poc, bracket, needed, outcomes)


def _commitment(
    steps: tuple[StepAttribution, ...], resamplable: Sequence[int], config: AttributionConfig
) -> tuple[int | None, tuple[int, int] | None, int | None]:
    """(Point of Commitment, bracket when inconclusive, rollouts that might decide it)."""
    significant = [i for i in resamplable if steps[i].significant]
    if not resamplable:
        return None, None, None
    if significant:
        candidate = significant[-1]
        undecided = [i for i in resamplable if i > candidate and not steps[i].no_effect]
        if not undecided:
            return candidate, None, None
        # a later step is neither shown to matter nor shown not to: the commitment is at or after
        # the candidate, up to the latest such step. To settle it, the least settled of them needs
        # its interval to fit inside the margin around its estimate.
        widest = max(undecided, key=lambda i: _half_width(steps[i]))
        room = config.margin - abs(steps[widest].attribution or 0.0)
        needed = rollouts_needed(room, _half_width(steps[widest]), config.rollouts)
        return None, (candidate, undecided[-1]), needed
    strongest = max(resamplable, key=lambda i: steps[i].attribution or 0.0)
    effect = steps[strongest].attribution or 0.0
    needed = rollouts_needed(effect, _half_width(steps[strongest]), config.rollouts)
    return None, (resamplable[0], resamplable[-1]), needed


def _half_width(step: StepAttribution) -> float:
    return ((step.ci_high or 0.0) - (step.ci_low or 0.0)) / 2
