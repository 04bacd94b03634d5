"""The cost ceiling: no sequential question spends more than the fixed strategy would.

The fixed strategy (`Strategy.FIXED`) runs every ``ablate_from`` plan ``config.rollouts`` (N) times,
and the plan that holds every step once in the trace walk (N times under a driver): that is "the
sweep", priced as `otel_replay.attribution._cost.planned_cost` prices it. The sequential strategies
run the same plans on the same random streams: `Engine.top_up` makes rollout r of a plan the same
whenever it runs, so the rollouts a sequential question ran are the fixed strategy's own, and a
switch to its plan reuses every one of them.

`Rollouts.decide` runs no batch after which what was spent would pass the sweep: the question
stops there, as at a budget, and `Rollouts.switched` is set. `switch_to_fixed` then runs the fixed
strategy's plan over what is still open: every step no test has decided yet is read at one look of
the schedule, the largest at most N whose rollouts still fit within the sweep (and the budget);
the steps already decided, or cleared by the band, keep their tests. A look the schedule plans has its share of the error
bound already, so the switch needs none of its own, and a run that never reaches the sweep is the
same as without the ceiling. When no look fits, nothing more runs, and the note says so.

The tests at a planned look are stricter than the fixed strategy's at N (the bound is split over
the looks), so a switched run leaves open some steps the fixed strategy decides; a step both
decide is decided the same way unless the rollouts between that look and N turn it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from otel_replay.attribution._config import AttributionConfig, BudgetUnit
from otel_replay.attribution._contrastive import (
    Tails,
    compare,
    contrastive_plans,
    estimate_step,
    kept_plan,
)
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Mode, StepAttribution, SwitchedToFixed
from otel_replay.attribution._spend import NOTHING, Pricing, Spend
from otel_replay.replay import Plan


class Rolled(Protocol):
    """What `switch_to_fixed` reads and runs of `_sequential.Rollouts` (which builds on this
    module, so names it only by its shape)."""

    engine: Engine
    config: AttributionConfig
    resamplable: Sequence[int]
    outcomes: dict[Plan, list[Outcome]]
    ceiling: Ceiling | None
    switched: bool

    def affordable(self, wants: Sequence[tuple[Plan, int]]) -> bool: ...

    def topping_up(self, wants: Sequence[tuple[Plan, int]]) -> Spend: ...


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The fixed strategy's plan (``counts``: rollouts per plan) and what it costs (``sweep``), what
    a rollout of any plan costs (``pricing``, in calls and in the budget's ``unit``), and the looks
    a switch may read at: the schedule's, at most N, the largest first."""

    counts: Mapping[Plan, int]
    prices: Mapping[Plan, Spend]  # a rollout of each of the sweep's plans
    sweep: Spend
    pricing: Pricing
    unit: BudgetUnit
    looks: tuple[int, ...]

    @classmethod
    def of(
        cls,
        pricing: Pricing,
        n_steps: int,
        resamplable: Sequence[int],
        config: AttributionConfig,
        looks: Sequence[int],
        *,
        walks_record: bool,
    ) -> Ceiling:
        """The ceiling of the questions asked at ``looks`` over the ``resamplable`` steps."""
        plans = contrastive_plans(n_steps, resamplable, config.rollouts, walks_record=walks_record)
        prices = {plan: _price(pricing, plan) for plan, _ in plans}
        sweep = sum((prices[plan].times(n) for plan, n in plans), NOTHING)
        unit = config.budget_unit if config.budget is not None else BudgetUnit.CALLS
        under = tuple(sorted((n for n in set(looks) if n <= config.rollouts), reverse=True))
        return cls(dict(plans), prices, sweep, pricing, unit, under)

    def spent(self, ran: Mapping[Plan, int]) -> Spend:
        """What ``ran`` rollouts of each plan cost."""
        return sum((self.price(p).times(n) for p, n in ran.items()), NOTHING)

    def price(self, plan: Plan) -> Spend:
        """A rollout of ``plan``."""
        return self.prices.get(plan) or _price(self.pricing, plan)

    def passes(self, spend: Spend) -> bool:
        """Whether ``spend`` passes the sweep, in calls or in the budget's unit."""
        charged = self.pricing.charge
        return spend.calls > self.sweep.calls or charged(spend, self.unit) > charged(
            self.sweep, self.unit
        )


def _price(pricing: Pricing, plan: Plan) -> Spend:
    # every step the engine prices, as `Rollouts.topping_up` prices a plan
    return pricing.rollout(plan.resampled(pricing.kinds))


def switch_to_fixed(
    rollouts: Rolled,
    mode: Mode,
    tails: Tails,
    estimates: Mapping[int, StepAttribution],
    cleared: Collection[int] = (),
) -> tuple[dict[int, StepAttribution], SwitchedToFixed | None, str]:
    """The fixed strategy's plan, once `Rollouts.decide` stopped at the ceiling (module
    docstring): ``estimates`` with every step they leave undecided read at the largest look that
    fits, with the schedule's ``tails``, reusing what ran (the steps in ``cleared``, cleared by
    the band, stay so); where it switched (None: no look fit, nothing ran), and the note that
    says so."""
    ceiling = rollouts.ceiling
    assert ceiling is not None and rollouts.switched
    engine, resamplable = rollouts.engine, rollouts.resamplable
    n_steps = len(engine.factual.steps)
    ran = {p: len(o) for p, o in rollouts.outcomes.items()}
    at = engine.step_executions
    open_positions = [
        position
        for position, index in enumerate(resamplable)
        if (index not in estimates or not estimates[index].decided) and index not in cleared
    ]
    head = f"adaptive: the calls still needed passed the fixed strategy's {ceiling.sweep.calls:,}"
    for look in ceiling.looks:
        wants = _wants(rollouts, open_positions, look)
        after = dict(ran)
        after.update({p: max(n, ran.get(p, 0)) for p, n in wants})
        if not ceiling.passes(ceiling.spent(after)) and rollouts.affordable(wants):
            break
    else:
        return dict(estimates), None, f"{head}; stopped there, with too little left to run its plan"
    reused = sum(min(n, ran.get(p, 0)) for p, n in wants)
    more = [(p, max(0, n - ran.get(p, 0))) for p, n in wants]
    engine.announce(sum(n for _, n in more), rollouts.topping_up(wants))
    engine.top_up(rollouts.outcomes, wants)
    read = dict(estimates)
    for position in open_positions:
        kept = kept_plan(n_steps, resamplable, position)
        exact = engine.walks_record and kept.resamples_nothing
        index = resamplable[position]
        tests = compare(
            rollouts.outcomes[kept][: 1 if exact else look],
            rollouts.outcomes[Plan.ablate_from(n_steps, index)][:look],
            kept_exact=exact,
            mode=mode,
            config=rollouts.config,
            tails=tails,
        )
        read[index] = estimate_step(engine.factual.steps[index], tests)
    steps = "every step" if len(open_positions) == len(resamplable) else "every step still open"
    note = (
        f"{head}; switched to its plan ({steps} at {look} rollouts per plan), reusing "
        f"{reused:,} rollouts already run"
    )
    return read, SwitchedToFixed(at, reused), note


def _wants(rollouts: Rolled, positions: Sequence[int], look: int) -> list[tuple[Plan, int]]:
    """The plans the steps at ``positions`` are read from, each at ``look`` rollouts (the record,
    in the trace walk: once)."""
    n_steps = len(rollouts.engine.factual.steps)
    wants: dict[Plan, int] = {}
    for position in positions:
        kept = kept_plan(n_steps, rollouts.resamplable, position)
        exact = rollouts.engine.walks_record and kept.resamples_nothing
        wants[kept] = 1 if exact else look
        wants[Plan.ablate_from(n_steps, rollouts.resamplable[position])] = look
    return list(wants.items())
