"""Sequential decisions: two plans run in growing batches until the tests on them decide.

The walk's per-step tests and the scan (`_walk`, `_adaptive`) ask questions of one form: here
are two plans, is the difference between their failure rates shown to matter, or shown to stay
inside the margin? A question is asked at the looks of a `Schedule`: rollouts per plan growing
from a first batch up to ``max_rollouts``, each look's tests at the schedule's ``tail``. Looking L times spends the error L times, so the tail is the
question's share of `ERROR_BOUND` divided by L (a Bonferroni split over the looks: group-sequential,
conservative, and exact under any dependence between looks, which always-valid intervals would buy
back only for one-sample tests). Batch sizes are fixed by the schedule, never by timing, so the same
seed gives the same report for any number of workers.

A ``budget`` (in resample-function calls, model calls or tokens) stops a question before a batch
that would exceed it; the cost ceiling (`_ceiling`) before a batch that would take what was spent
past the fixed strategy's cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from otel_replay.attribution._ceiling import Ceiling
from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._contrastive import ErrorShares, Tails
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._spend import NOTHING, Spend
from otel_replay.attribution._stats import decisive_rollouts
from otel_replay.replay import Plan

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Schedule:
    """The rollouts per plan at each look, and each test's one-sided error at a look."""

    looks: tuple[int, ...]
    tails: Tails


#: The first look's rollouts per plan, and how much each look grows on the last: a question that
#: a large effect settles stops early, and the rest overshoot what they need by a quarter on average
#: (looks that doubled would overshoot by twice that, for a tenth less error per look).
FIRST_LOOK = 8
GROWTH = 1.5


def schedule(config: AttributionConfig, m: int, shares: ErrorShares | None = None) -> Schedule:
    """Looks from `FIRST_LOOK` rollouts per plan, growing by `GROWTH`, up to ``max_rollouts``, and
    two more at the fewest rollouts that can show "no effect" at all (`decisive_rollouts`: one for
    a plan against the record, one for two estimated plans), since most questions end there. Each
    family's share (``shares``, the scan's by default: `ErrorShares`) is split over the ``m``
    steps, then each test's: the "matters" test's over every look, the "no effect" test's over
    the looks from the first at which it can pass, the fewest such that the split and the floor
    it implies agree."""
    shares = shares or ErrorShares.scan()
    top = config.max_rollouts
    grown = {min(FIRST_LOOK, top)}
    while max(grown) < top:
        grown.add(min(top, math.ceil(max(grown) * GROWTH)))
    matters, no_effect = shares.matters_tail(m), shares.no_effect_tail(m)
    for spent in range(1, len(grown) + 3):
        tail = no_effect / spent
        floors = {
            decisive_rollouts(config.margin, tail, known=True),
            decisive_rollouts(config.margin, tail),
        }
        looks = tuple(sorted(grown | {f for f in floors if f < top}))
        possible = [n for n in looks if n >= min(floors)]
        if len(possible) <= spent:
            break
    return Schedule(looks, Tails(matters / len(looks), tail, len(looks)))


@dataclass
class Rollouts:
    """The rollouts run so far, per plan, and whether the budget or the cost ceiling stopped a
    question."""

    engine: Engine
    config: AttributionConfig
    resamplable: Sequence[int]
    outcomes: dict[Plan, list[Outcome]]
    out_of_budget: bool = False
    ceiling: Ceiling | None = None  # the fixed strategy's cost, which no question passes
    switched: bool = False  # a batch would have passed the ceiling: the fixed plan takes over

    def affordable(self, wants: Sequence[tuple[Plan, int]]) -> bool:
        """Whether topping the plans up to ``wants`` keeps what is spent within the budget, in
        its unit: each rollout calls one resample function per resamplable step the plan
        resamples, and costs what the record says those calls cost (`Engine.pricing`)."""
        if self.config.budget is None:
            return True
        more = self.engine.pricing.charge(self.topping_up(wants), self.config.budget_unit)
        return self.engine.charged + more <= self.config.budget

    def _after(self, wants: Sequence[tuple[Plan, int]]) -> dict[Plan, int]:
        """The rollouts of each plan once the plans are topped up to ``wants``."""
        ran = {plan: len(got) for plan, got in self.outcomes.items()}
        for plan, want in wants:
            ran[plan] = max(ran.get(plan, 0), want)
        return ran

    def topping_up(self, wants: Sequence[tuple[Plan, int]]) -> Spend:
        """What the rollouts that bring the plans up to ``wants`` will spend."""
        return sum(
            (
                self.engine.pricing.rollout(
                    # every step the engine prices: a step no plan is built around (one that
                    # cannot vary) is still called when a plan resamples it
                    plan.resampled(self.engine.pricing.kinds),
                    max(0, want - len(self.outcomes.get(plan, []))),
                )
                for plan, want in wants
            ),
            NOTHING,
        )

    def decide(
        self,
        looks: Sequence[int],
        kept: Plan,
        ablated: Plan,
        judge: Callable[[list[Outcome], list[Outcome], bool], T],
        settled: Callable[[T], bool],
    ) -> T | None:
        """Ask one question at each look until ``settled``: ``judge(kept outcomes, ablated
        outcomes, kept exact)`` reads the tests. A plan that resamples nothing in the trace walk is
        the record itself, so it runs once and is exact. The last answer (None when the budget
        allowed no look at all, or the ceiling had stopped the questions). A batch after which
        what was spent would pass the fixed strategy's cost is not run: the question stops, as at
        the budget, and ``switched`` is set (`_ceiling`)."""
        exact = self.engine.walks_record and kept.resamples_nothing
        answer: T | None = None
        for n in looks:
            wants = [(kept, 1 if exact else n), (ablated, n)]
            if self.switched:
                return answer
            if not self.affordable(wants):
                self.out_of_budget = True
                return answer
            if self.ceiling is not None and self.ceiling.passes(
                self.ceiling.spent(self._after(wants))
            ):
                self.switched = True
                return answer
            more = [(p, max(0, w - len(self.outcomes.get(p, [])))) for p, w in wants]
            self.engine.announce(sum(n for _, n in more), self.topping_up(wants))
            self.engine.top_up(self.outcomes, wants)
            answer = judge(self.outcomes[kept][: wants[0][1]], self.outcomes[ablated][:n], exact)
            if settled(answer):
                return answer
        return answer
