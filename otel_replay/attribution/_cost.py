"""What an attribution will cost, before it runs: rollouts and resample-function calls.

Calls are what users pay for (each is a model or a tool call), so `planned_cost` counts them the way
the engine will: every resamplable step a plan resamples is one call per rollout. In the trace walk
that count is exact; under a driver that re-runs the agent's loop (``--agent``, the chat loop) a
rollout may take more or fewer turns than the record, so it is an estimate from the record. The
worst case adds what a repair search and a Shapley standard-error target may run at most.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._api import method_plans, resamplable_steps
from otel_replay.attribution._config import MAX_PERMUTATIONS, AttributionConfig, Method
from otel_replay.attribution._contrastive import contrastive_plans
from otel_replay.attribution._repair import repair_bound
from otel_replay.model import Trajectory
from otel_replay.replay import Plan
from otel_replay.resamplers import Registry


@dataclass(frozen=True, slots=True)
class PlannedCost:
    """Rollouts and resample-function calls an attribution makes (``calls_by_kind``: per step
    kind), and the most it may add (a repair search; pairs a Shapley target may add)."""

    rollouts: int
    calls: int
    calls_by_kind: dict[str, int]
    extra_rollouts: int
    extra_calls: int
    exact: bool  # the trace walk: the calls are exact; a driver re-running a loop: an estimate
    adaptive: bool = False  # the scan's rollouts are decided as it goes: only its most is known

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
) -> PlannedCost:
    """The cost of ``attribute(trajectory, registry, config)`` (with a driver: ``agent_driven``)."""
    resamplable = resamplable_steps(trajectory, registry, agent_driven)
    n_steps = len(trajectory.steps)
    plans = method_plans(n_steps, resamplable, config, not agent_driven)
    kinds = {s.index: s.kind.value for s in trajectory.steps}
    by_kind: dict[str, int] = {}
    for plan, count in plans:
        for index in plan.resampled(resamplable):
            by_kind[kinds[index]] = by_kind.get(kinds[index], 0) + count
    extra_rollouts = extra_calls = 0
    if config.strategy.sequential and config.method is not Method.SHAPLEY:
        sweep = contrastive_plans(
            n_steps, resamplable, config.max_rollouts, walks_record=not agent_driven
        )
        extra_rollouts += _rollouts(sweep)
        extra_calls += _calls(sweep, resamplable)
    if config.repair:  # a baseline and each candidate, every later step resampled at most
        extra_rollouts += repair_bound(config)
        extra_calls += repair_bound(config) * len(resamplable)
    if config.shapley_se is not None and config.method is not Method.CONTRASTIVE:
        most = dataclasses.replace(config, permutations=max(config.permutations, MAX_PERMUTATIONS))
        widest = method_plans(n_steps, resamplable, most, not agent_driven)
        extra_rollouts += _rollouts(widest) - _rollouts(plans)
        extra_calls += _calls(widest, resamplable) - _calls(plans, resamplable)
    return PlannedCost(
        rollouts=_rollouts(plans),
        calls=sum(by_kind.values()),
        calls_by_kind=dict(sorted(by_kind.items())),
        extra_rollouts=extra_rollouts,
        extra_calls=extra_calls,
        exact=not agent_driven,
        adaptive=config.strategy.sequential,
    )


def _rollouts(plans: list[tuple[Plan, int]]) -> int:
    return sum(count for _, count in plans)


def _calls(plans: list[tuple[Plan, int]], resamplable: Sequence[int]) -> int:
    return sum(count * len(plan.resampled(resamplable)) for plan, count in plans)
