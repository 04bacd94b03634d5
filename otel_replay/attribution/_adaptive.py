"""The adaptive strategy: scan back from the last step, each step in growing batches, and stop.

The Point of Commitment is the latest step shown to matter with every later step shown to have no
effect (`otel_replay.attribution._contrastive`). Those are exactly the steps from the end of the run
back to it, so the scan starts at the last resamplable step and walks back: a step shown to have no
effect sends it to the one before, a step shown to matter ends it. The steps before that step are
never estimated, and they are the expensive ones: ``ablate_from(i)`` resamples every step from i
on, so its rollouts cost the most calls at the start of the run.

Each step is decided sequentially: its two plans (kept and ablated) run in batches that double, from
the smallest budget at which "no effect" can pass at all up to ``max_rollouts``, and the step's tests
are read after each batch; it stops at the first that decides. Looking L times spends the error L
times, so each look's tests run at the sweep's one-sided error divided by L (a Bonferroni split over
the looks, on top of the split over the steps and the two families of tests): the stated bound,
``ERROR_BOUND`` on naming a wrong step, holds for the scan as for the sweep. Batch sizes are fixed by
the schedule, never by timing, so the same seed gives the same report for any number of workers.

A ``budget`` of resample-function calls stops the scan before a batch that would exceed it; the
verdict is then the best the steps seen allow, usually inconclusive between two steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._contrastive import (
    Localisation,
    all_steps,
    estimate_step,
    kept_plan,
    test_tail,
)
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Mode, StepAttribution
from otel_replay.attribution._stats import decisive_rollouts, rollouts_needed
from otel_replay.replay import Plan


@dataclass(frozen=True, slots=True)
class Schedule:
    """The rollouts per plan at each look, and each look's one-sided error per test."""

    looks: tuple[int, ...]
    tail: float


def schedule(config: AttributionConfig, m: int) -> Schedule:
    """Looks from the smallest decisive budget, doubling, up to ``max_rollouts``; the error of
    each test split over as many looks as the schedule can hold."""
    top = config.max_rollouts
    bound = 1 + max(0, math.ceil(math.log2(top / 8)))  # looks from 8 up: never fewer than there are
    tail = test_tail(m) / bound
    first = min(top, max(8, decisive_rollouts(config.margin, tail)))
    looks = [first]
    while looks[-1] < top:
        looks.append(min(top, 2 * looks[-1]))
    assert len(looks) <= bound, (looks, bound)
    return Schedule(tuple(looks), tail)


@dataclass
class _Scan:
    """What the scan has run and decided so far."""

    engine: Engine
    config: AttributionConfig
    outcomes: dict[Plan, list[Outcome]]
    estimates: dict[int, StepAttribution]
    out_of_budget: bool = False

    def affordable(self, wants: Sequence[tuple[Plan, int]], resamplable: Sequence[int]) -> bool:
        """Whether topping the plans up to ``wants`` keeps the calls within the budget (each
        rollout calls one resample function per resamplable step the plan resamples)."""
        if self.config.budget is None:
            return True
        more = sum(
            max(0, want - len(self.outcomes.get(plan, []))) * len(plan.resampled(resamplable))
            for plan, want in wants
        )
        return self.engine.step_executions + more <= self.config.budget


def scan(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> tuple[Localisation, list[str]]:
    """The Point of Commitment by the backward scan; and notes on what it left out."""
    factual = engine.factual
    n_steps = len(factual.steps)
    plan = schedule(config, len(resamplable))
    state = _Scan(engine, config, {}, {})
    for position in reversed(range(len(resamplable))):
        index = resamplable[position]
        kept = kept_plan(n_steps, resamplable, position)
        ablated = Plan.ablate_from(n_steps, index)
        exact = engine.walks_record and kept.resamples_nothing
        for n in plan.looks:
            wants = [(kept, 1 if exact else n), (ablated, n)]
            if not state.affordable(wants, resamplable):
                state.out_of_budget = True
                break
            engine.announce(sum(max(0, w - len(state.outcomes.get(p, []))) for p, w in wants))
            engine.top_up(state.outcomes, wants)
            estimate = estimate_step(
                factual.steps[index],
                state.outcomes[kept][: wants[0][1]],
                state.outcomes[ablated][:n],
                kept_exact=exact,
                mode=mode,
                config=config,
                tail=plan.tail,
            )
            state.estimates[index] = estimate
            if estimate.significant or estimate.no_effect:
                break
        decided = state.estimates.get(index)
        if state.out_of_budget or (decided is not None and decided.significant):
            break
    steps = all_steps(factual, state.estimates, resamplable)
    poc, bracket, needed = _verdict(steps, resamplable, state, config)
    found = Localisation(steps, poc, bracket, needed, state.outcomes)
    return found, _notes(steps, resamplable, state, config)


def _verdict(
    steps: tuple[StepAttribution, ...],
    resamplable: Sequence[int],
    state: _Scan,
    config: AttributionConfig,
) -> tuple[int | None, tuple[int, int] | None, int | None]:
    """The sweep's rule over the steps the scan estimated; a step it never reached may still be
    the commitment, so it stays inside the bracket."""
    seen = sorted(state.estimates)
    unseen = [i for i in resamplable if i not in state.estimates]
    matters = [i for i in seen if steps[i].significant]
    undecided = [i for i in seen if not steps[i].significant and not steps[i].no_effect]
    if matters:
        later = [i for i in undecided if i > matters[-1]]
        if not later:
            return matters[-1], None, None
        return None, (matters[-1], later[-1]), _needed(steps[later[-1]], config)
    open_steps = sorted([*undecided, *unseen])
    if not open_steps:
        return None, None, None  # every step shown to have no effect
    latest = steps[max(undecided)] if undecided else None
    return None, (open_steps[0], open_steps[-1]), _needed(latest, config) if latest else None


def _needed(step: StepAttribution, config: AttributionConfig) -> int | None:
    """Rollouts per plan that might settle an undecided step (never below its last look)."""
    if step.no_effect_interval is None or step.ablated is None or step.test_tail is None:
        return None
    low, high = step.no_effect_interval
    room = config.margin - abs(step.attribution or 0.0)
    floor = decisive_rollouts(config.margin, step.test_tail)
    return rollouts_needed(room, (high - low) / 2, step.ablated.n, floor)


def _notes(
    steps: tuple[StepAttribution, ...],
    resamplable: Sequence[int],
    state: _Scan,
    config: AttributionConfig,
) -> list[str]:
    notes = []
    unseen = [i for i in resamplable if i not in state.estimates]
    if unseen:
        why = (
            f"the budget of {config.budget:,} calls was reached"
            if state.out_of_budget
            else "the scan from the end stopped at a step shown to matter"
        )
        which = ", ".join(map(str, unseen))
        were = f"step {which} was" if len(unseen) == 1 else f"steps {which} were"
        notes.append(f"adaptive: {were} not estimated ({why})")
    elif state.out_of_budget:
        notes.append(f"adaptive: the budget of {config.budget:,} calls was reached")
    return notes
