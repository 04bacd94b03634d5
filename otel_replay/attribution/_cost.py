"""What an attribution will cost, before it runs: rollouts and resample-function calls, split by
what users pay (`otel_replay.attribution._spend`): model calls and their tokens, tool calls, and the
draws from the store that cost nothing.

`planned_cost` counts the calls the way the engine will: every resamplable step a plan resamples
is one call per rollout, priced by what the record says the step cost (a model step's recorded
tokens; a tool step ``--tools recorded`` answers is free). In the trace walk the calls are exact
(the tokens an estimate from the recorded usage); under a driver that re-runs the agent's loop
(``--agent``, the chat loop) a rollout may take more or fewer turns than the record, so the calls
are an estimate too. The worst case adds what a repair search and a Shapley standard-error target
may run at most; a budget caps it in its unit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._adaptive import band_for, shares_for
from otel_replay.attribution._api import method_plans
from otel_replay.attribution._config import MAX_PERMUTATIONS, AttributionConfig, Method
from otel_replay.attribution._contrastive import contrastive_plans
from otel_replay.attribution._engine import resamplable_steps
from otel_replay.attribution._repair import repair_bound
from otel_replay.attribution._sequential import schedule
from otel_replay.attribution._spend import NOTHING, Pricing, Spend
from otel_replay.attribution._stats import decisive_rollouts
from otel_replay.attribution._suspect import judge_estimate
from otel_replay.attribution._variation import Variation, variations
from otel_replay.model import Trajectory
from otel_replay.replay import Plan
from otel_replay.resamplers import Registry


@dataclass(frozen=True, slots=True)
class PlannedCost:
    """Rollouts and resample-function calls an attribution makes (``calls_by_kind``: per step
    kind; ``spend``: by what they cost), and the most it may add (a repair search; pairs a
    Shapley target may add; ``worst_spend``: the most in all, split). A sequential strategy's
    typical run is ``typical_calls`` calls (``typical_spend`` split)."""

    rollouts: int
    calls: int
    calls_by_kind: dict[str, int]
    extra_rollouts: int
    extra_calls: int
    exact: bool  # the trace walk: the calls are exact; a driver re-running a loop: an estimate
    adaptive: bool = False  # a sequential strategy decides its rollouts as it goes
    typical_calls: int | None = None  # a sequential strategy's calls on a typical run (`typical`)
    spend: Spend = NOTHING
    worst_spend: Spend = NOTHING
    typical_spend: Spend | None = None
    #: every step: whether resampling can vary it, and by what (`_variation`)
    variations: tuple[Variation, ...] = ()

    @property
    def worst_rollouts(self) -> int:
        return self.rollouts + self.extra_rollouts

    @property
    def worst_calls(self) -> int:
        return self.calls + self.extra_calls


def planned_cost(
    trajectory: Trajectory,
    registry: Registry,
    config: AttributionConfig,
    agent_driven: bool = False,
    live: bool | None = None,
) -> PlannedCost:
    """The cost of ``attribute(trajectory, registry, config)`` (with a driver: ``agent_driven``;
    ``live``: the driver runs the user's agent, not the chat loop; by default ``agent_driven``)."""
    resamplable = resamplable_steps(trajectory, registry, agent_driven)
    pricing = Pricing.of(trajectory, registry, resamplable)
    if config.budget is not None:
        pricing.check_budget(config.budget_unit, trajectory.id)
    n_steps = len(trajectory.steps)
    # plans are built around the steps resampling can vary (`_variation`), as `attribute` builds
    # them; each is priced by every step it resamples
    found = variations(trajectory, registry, agent_driven if live is None else live)
    varied = [i for i in resamplable if found[i].varied]
    plans = method_plans(n_steps, varied, config, not agent_driven)
    kinds = {s.index: s.kind.value for s in trajectory.steps}
    by_kind: dict[str, int] = {}
    for plan, count in plans:
        for index in plan.resampled(resamplable):
            by_kind[kinds[index]] = by_kind.get(kinds[index], 0) + count
    spend = _priced(plans, resamplable, pricing)
    if config.suspect == "judge" and varied:  # the one model call that names the suspect
        spend += judge_estimate(trajectory, varied)
    extra_rollouts, extra = 0, NOTHING
    typical_spend = None
    if config.strategy.sequential and config.method is not Method.SHAPLEY:
        # every plan the walk and the scan may run, at the most rollouts each (or the budget)
        sweep = (
            contrastive_plans(n_steps, varied, config.max_rollouts, walks_record=not agent_driven)
            if varied
            else []
        )
        # ... but never more than the fixed strategy's plan: the cost ceiling (`_ceiling`)
        fixed = contrastive_plans(n_steps, varied, config.rollouts, walks_record=not agent_driven)
        if _priced(fixed, resamplable, pricing).calls < _priced(sweep, resamplable, pricing).calls:
            sweep = fixed
        extra_rollouts += _rollouts(sweep)
        extra += _priced(sweep, resamplable, pricing).at_most(config.budget_unit, config.budget)
        typical_spend = typical_cost(
            varied, config, pricing, exact=not agent_driven, priced=resamplable
        )
    if config.repair and varied:  # a baseline and each candidate, every later step resampled
        extra_rollouts += repair_bound(config)
        extra += pricing.rollout(resamplable, repair_bound(config))
    if config.shapley_se is not None and config.method is not Method.CONTRASTIVE:
        most = dataclasses.replace(config, permutations=max(config.permutations, MAX_PERMUTATIONS))
        widest = method_plans(n_steps, varied, most, not agent_driven)
        extra_rollouts += _rollouts(widest) - _rollouts(plans)
        extra += _priced(widest, resamplable, pricing) - spend
    return PlannedCost(
        rollouts=_rollouts(plans),
        calls=sum(by_kind.values()),
        calls_by_kind=dict(sorted(by_kind.items())),
        extra_rollouts=extra_rollouts,
        extra_calls=extra.calls,
        exact=not agent_driven,
        adaptive=config.strategy.sequential,
        typical_calls=None if typical_spend is None else typical_spend.calls,
        spend=spend,
        worst_spend=spend + extra,
        typical_spend=typical_spend,
        variations=found,
    )


def typical(m: int, config: AttributionConfig, *, exact: bool) -> int:
    """A sequential strategy's calls on a typical run of ``m`` resamplable steps: one step halfway
    decides it, every question about the steps after it settles at the fewest rollouts that can
    show no effect, and every question about it at the first look. A guide, not a bound: small
    effects and failures that build up take more (`PlannedCost.worst_calls` bounds them)."""
    return sum(n * (m - position) for position, n in _typical_runs(m, config, exact=exact).items())


def typical_cost(
    resamplable: Sequence[int],
    config: AttributionConfig,
    pricing: Pricing,
    *,
    exact: bool,
    priced: Sequence[int] | None = None,
) -> Spend:
    """`typical`, split by what the calls cost: the plan resampling from each position on (the
    ``position``-th resamplable step and every later one), priced from the record: each step of
    ``priced`` (default ``resamplable``) from that step on is one call."""
    runs = _typical_runs(len(resamplable), config, exact=exact)
    every = resamplable if priced is None else priced
    return sum(
        (
            pricing.rollout([i for i in every if i >= resamplable[position]], n)
            for position, n in runs.items()
        ),
        NOTHING,
    )


def _typical_runs(m: int, config: AttributionConfig, *, exact: bool) -> dict[int, int]:
    """The rollouts `typical` runs of the plan resampling from each position on: the walk's band
    test at every position after the culprit (every step tested alone from the end, for the scan,
    each at the fewest rollouts that can show no effect), and the culprit's own question at the
    first look that can decide it."""
    if m == 0:
        return {}
    plan = schedule(config, m, shares_for(config))
    band = band_for(config)
    between_plans = decisive_rollouts(config.margin, plan.tails.no_effect)
    culprit = m // 2
    runs: dict[int, int] = {}  # rollouts of the plan that resamples from each position on
    for position in range(m - 1, culprit, -1):
        runs[position] = min(band or between_plans, config.max_rollouts)
    runs[culprit] = max(band or 0, plan.looks[0])
    return runs


def _rollouts(plans: list[tuple[Plan, int]]) -> int:
    return sum(count for _, count in plans)


def _priced(plans: list[tuple[Plan, int]], resamplable: Sequence[int], pricing: Pricing) -> Spend:
    return sum((pricing.rollout(plan.resampled(resamplable), n) for plan, n in plans), NOTHING)
