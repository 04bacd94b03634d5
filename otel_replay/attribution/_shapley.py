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


def shapley(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> tuple[dict[int, tuple[float, float]], ShapleySummary]:
    """Per step ``(φ, standard error)`` and the efficiency summary."""
    n_steps = len(engine.factual.steps)
    pairs = max(2, (config.permutations + 1) // 2)  # two pairs at least: an SE needs a spread
    orders: list[tuple[str, list[int]]] = []
    for pair in range(pairs):
        order = list(resamplable)
        random.Random(step_seed(config.seed, "permutation", pair, 0)).shuffle(order)
        orders.append((f"p{pair}a", order))
        orders.append((f"p{pair}b", order[::-1]))
    plans: list[tuple[Plan, int]] = []
    for label, order in orders:
        for size in range(len(order) + 1):
            plans.append((Plan.coalition(n_steps, set(order[:size]), f"{label}:{size}"), 1))
    every = set(resamplable)
    plans.append((Plan.coalition(n_steps, every, "efficiency:all"), config.rollouts))
    plans.append((Plan.coalition(n_steps, set(), "efficiency:none"), config.rollouts))
    outcomes = engine.run(plans)

    sign = 1.0 if mode is Mode.FAILURE else -1.0
    per_pair: dict[int, list[float]] = {i: [] for i in resamplable}
    for pair in range(pairs):
        contributions = dict.fromkeys(resamplable, 0.0)
        for label in (f"p{pair}a", f"p{pair}b"):
            order = next(o for name, o in orders if name == label)
            values = [
                float(outcomes[f"coalition:{label}:{size}"][0].failed)
                for size in range(len(order) + 1)
            ]
            for position, player in enumerate(order):
                contributions[player] += sign * (values[position + 1] - values[position]) / 2
        for player, value in contributions.items():
            per_pair[player].append(value)
    estimates = {player: mean_and_se(values) for player, values in per_pair.items()}
    # Σφ per pair telescopes to v(all) − v(∅) of that pair's own rollouts, so efficiency holds by
    # construction; what the summary checks is agreement with both ends estimated independently.
    sums = [sum(per_pair[player][pair] for player in per_pair) for pair in range(pairs)]
    _, total_se = mean_and_se(sums)

    def proportion(identity: str) -> Proportion:
        runs = outcomes[identity]
        failures = sum(o.failed for o in runs)
        return Proportion(failures, len(runs), *wilson(failures, len(runs)))

    summary = ShapleySummary(
        permutations=2 * pairs,
        total=sum(phi for phi, _ in estimates.values()),
        total_se=total_se,
        v_all=proportion("coalition:efficiency:all"),
        v_none=proportion("coalition:efficiency:none"),
        mode=mode,
    )
    return estimates, summary
