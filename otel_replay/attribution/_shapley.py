"""Monte-Carlo Shapley values over the resamplable steps.

Players are the resamplable steps; ``v(S) = P(fail | steps in S kept, the others resampled)``. Each
permutation walks from the empty coalition to the full one, and every coalition along the way is
evaluated by a fresh rollout (no caching, no truncation), so a player's marginal contribution in one
permutation is a difference of two independent Bernoulli draws. Permutations come in antithetic pairs
(a permutation and its reverse); the pair is the unit of the standard error. Efficiency
(``Σφ = v(all) − v(∅)``) is checked against both ends estimated independently.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._engine import Engine
from otel_replay.attribution._results import Mode, Proportion, ShapleySummary
from otel_replay.attribution._stats import mean_and_se, wilson
from otel_replay.replay import Plan, step_seed


def _pairs(config: AttributionConfig) -> int:
    """Antithetic pairs: the permutations asked for, rounded up to pairs; two pairs at least (a
    standard error needs a spread)."""
    return max(2, (config.permutations + 1) // 2)


def _orders(resamplable: Sequence[int], config: AttributionConfig) -> list[list[int]]:
    """The permutations, ``2k`` pair ``k``'s order and ``2k + 1`` its reverse."""
    orders: list[list[int]] = []
    for pair in range(_pairs(config)):
        order = list(resamplable)
        random.Random(step_seed(config.seed, "permutation", pair, 0)).shuffle(order)
        orders += [order, order[::-1]]
    return orders


def _coalition(n_steps: int, orders: list[list[int]], number: int, size: int) -> Plan:
    """The coalition of the first ``size`` players of permutation ``number``."""
    return Plan.permutation_coalition(
        n_steps, set(orders[number][:size]), permutation=number, size=size
    )


def shapley_plans(
    n_steps: int, resamplable: Sequence[int], config: AttributionConfig
) -> list[tuple[Plan, int]]:
    """What `shapley` runs: one rollout per coalition along every permutation, and both ends of
    the efficiency check with ``config.rollouts`` each."""
    orders = _orders(resamplable, config)
    plans = [
        (_coalition(n_steps, orders, number, size), 1)
        for number, order in enumerate(orders)
        for size in range(len(order) + 1)
    ]
    for kept in (True, False):
        plans.append((Plan.coalition_end(n_steps, resamplable, kept=kept), config.rollouts))
    return plans


def shapley(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> tuple[dict[int, tuple[float, float]], ShapleySummary]:
    """Per step ``(φ, standard error)`` and the efficiency summary."""
    n_steps = len(engine.factual.steps)
    outcomes = engine.run(shapley_plans(n_steps, resamplable, config))
    orders = _orders(resamplable, config)

    sign = 1.0 if mode is Mode.FAILURE else -1.0
    per_pair: dict[int, list[float]] = {i: [] for i in resamplable}
    for pair in range(_pairs(config)):
        contributions = dict.fromkeys(resamplable, 0.0)
        for number in (2 * pair, 2 * pair + 1):
            order = orders[number]
            values = [
                float(outcomes[_coalition(n_steps, orders, number, size)][0].failed)
                for size in range(len(order) + 1)
            ]
            for position, player in enumerate(order):
                contributions[player] += sign * (values[position + 1] - values[position]) / 2
        for player, value in contributions.items():
            per_pair[player].append(value)
    estimates = {player: mean_and_se(values) for player, values in per_pair.items()}
    # Σφ per pair telescopes to v(all) − v(∅) of that pair's own rollouts, so efficiency holds by
    # construction; what the summary checks is agreement with both ends estimated independently.
    sums = [sum(per_pair[player][pair] for player in per_pair) for pair in range(_pairs(config))]
    _, total_se = mean_and_se(sums)

    def proportion(kept: bool) -> Proportion:
        runs = outcomes[Plan.coalition_end(n_steps, resamplable, kept=kept)]
        failures = sum(o.failed for o in runs)
        return Proportion(failures, len(runs), *wilson(failures, len(runs)))

    summary = ShapleySummary(
        permutations=len(orders),
        total=sum(phi for phi, _ in estimates.values()),
        total_se=total_se,
        v_all=proportion(kept=True),
        v_none=proportion(kept=False),
        mode=mode,
    )
    return estimates, summary
