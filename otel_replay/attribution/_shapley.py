"""Monte-Carlo Shapley values over the resamplable steps.

Players are the resamplable steps; ``v(S) = P(fail | steps in S kept, the others resampled)``. Each
permutation walks from the empty coalition to the full one, and every coalition along the way is
evaluated by a fresh rollout (no caching, no truncation), so a player's marginal contribution in one
permutation is a difference of two independent Bernoulli draws. Permutations come in antithetic pairs
(a permutation and its reverse); the pair is the unit of the standard error. Efficiency
(``Σφ = v(all) − v(∅)``) is checked against both ends estimated independently.

**Standard errors.** Pair ``k``'s order and rollouts draw from seeds of its own, so a player's pair
contributions ``c_1 … c_K`` are independent and identically distributed, and neither the antithetic
pairing nor the rollouts adjacent players share inside a permutation bias anything: both stay inside
the pair. The plain ``s/√K`` was still too small in use: ``φ ± 1.96·s/√K`` held the exact values of
the synthetic models (``tests/attribution/models.py``, 120 seeds) for 90.5 % of players at 8
permutations, 92.2 % at 16 and 93.9 % at 32, and missed by more than 3 SE 7.1 % of the time at 8
(a normal error does 0.27 %). Two reasons:

* few degrees of freedom read with the normal quantile: ``s`` has ``K − 1`` of them, and with 4 pairs
  the 97.5 % point of Student's t is 3.18, not 1.96;
* contributions are differences of single Bernoulli rollouts, a handful of values: a few pairs often
  all agree (at 8 permutations a fifth of the decisive players had a standard error of exactly 0),
  and they agree precisely when they missed the rare pairs that move the mean, so the spread is
  smallest when the estimate is furthest off.

The fix reads what the players share. Most of a pair's variance is the Bernoulli noise of its
rollouts, which every player of the run sees alike (on the models the pair standard deviations of
null and decisive players all lie between 0.24 and 0.35), so each player's variance is pooled with
the mean variance over the players, ``s̄²``, worth `POOLED_DF` degrees of freedom, and never below
its own: ``s̃² = max(s², ((K − 1)·s² + ν₀·s̄²) / (K − 1 + ν₀))``. The reported standard error is
``s̃/√K · t(0.975, K − 1 + ν₀) / 1.96``, so that ``φ ± 1.96·SE`` is the Student-t 95 % interval; the
standard error of ``Σφ`` (one quantity, nothing to pool) gets the t factor for ``K − 1``. Pooling
weighs a fixed ν₀, so its pull fades as pairs accumulate, and a player whose own spread is larger
than the others' keeps it. On the same seeds ``φ ± 1.96·SE`` now holds the exact values for 94.8 %,
96.4 % and 95.9 % of players at 8, 16 and 32 permutations, and misses by more than 3 SE 0.9 %, 0.8 %
and 0.4 % of the time (``tests/attribution/test_shapley_se.py``).

**A target** (``AttributionConfig.shapley_se``): after the first ``permutations``, pairs are added
in batches until every player's standard error is below the target or `MAX_PERMUTATIONS` is reached.
A batch's size follows from the results so far (the pairs that would bring the largest standard error
to the target at ``1/√K``, at least a quarter more and at most four times as many), and pair ``k``
is the same pair whatever the batches: the same seed gives the same pairs, the same stop and the same
report for any number of workers, and equals a fixed run of the permutations it used.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from otel_replay.attribution._config import MAX_PERMUTATIONS, AttributionConfig
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Mode, Proportion, ShapleySummary
from otel_replay.attribution._stats import Z_95, t_quantile, wilson
from otel_replay.replay import Plan
from otel_replay.resamplers import step_seed

#: Degrees of freedom the pooled variance of all players is worth to each player's own.
POOLED_DF = 4


def _pairs(config: AttributionConfig) -> int:
    """Antithetic pairs of the first batch: the permutations asked for, rounded up to pairs; two
    pairs at least (a standard error needs a spread)."""
    return max(2, (config.permutations + 1) // 2)


def _max_pairs(config: AttributionConfig) -> int:
    """The most pairs a ``shapley_se`` target may run."""
    return max(_pairs(config), MAX_PERMUTATIONS // 2)


def _order(resamplable: Sequence[int], seed: int, pair: int) -> list[int]:
    """Pair ``pair``'s permutation (its reverse is the other one): from the seed and the pair
    alone, so a pair is the same in every batch schedule."""
    order = list(resamplable)
    random.Random(step_seed(seed, "permutation", pair, 0)).shuffle(order)
    return order


def _coalition(n_steps: int, order: Sequence[int], number: int, size: int) -> Plan:
    """The coalition of the first ``size`` players of permutation ``number`` (whose players are
    ``order``); permutation ``2k`` is pair ``k``'s order and ``2k + 1`` its reverse."""
    return Plan.permutation_coalition(n_steps, set(order[:size]), permutation=number, size=size)


def _pair_plans(
    n_steps: int, resamplable: Sequence[int], seed: int, pairs: range
) -> list[tuple[Plan, int]]:
    """One rollout per coalition along both permutations of each pair in ``pairs``."""
    plans = []
    for pair in pairs:
        order = _order(resamplable, seed, pair)
        for number, players in ((2 * pair, order), (2 * pair + 1, order[::-1])):
            plans += [
                (_coalition(n_steps, players, number, size), 1) for size in range(len(players) + 1)
            ]
    return plans


def shapley_plans(
    n_steps: int, resamplable: Sequence[int], config: AttributionConfig
) -> list[tuple[Plan, int]]:
    """What `shapley` runs first: one rollout per coalition along every permutation of the first
    batch, and both ends of the efficiency check with ``config.rollouts`` each (with a
    ``shapley_se`` target, more pairs may follow)."""
    plans = _pair_plans(n_steps, resamplable, config.seed, range(_pairs(config)))
    for kept in (True, False):
        plans.append((Plan.coalition_end(n_steps, resamplable, kept=kept), config.rollouts))
    return plans


def _contributions(
    outcomes: dict[Plan, list[Outcome]],
    n_steps: int,
    resamplable: Sequence[int],
    seed: int,
    pair: int,
    sign: float,
) -> dict[int, float] | None:
    """Each player's contribution in pair ``pair``: the mean of its marginal contributions in the
    permutation and in its reverse; None when a rollout of the pair is no evidence (unservable,
    crashed): the pair is left out whole, as its contributions are one unit."""
    contributions = dict.fromkeys(resamplable, 0.0)
    order = _order(resamplable, seed, pair)
    for number, players in ((2 * pair, order), (2 * pair + 1, order[::-1])):
        made = [
            outcomes[_coalition(n_steps, players, number, size)][0]
            for size in range(len(players) + 1)
        ]
        if not all(o.counts for o in made):
            return None
        values = [float(o.failed) for o in made]
        for position, player in enumerate(players):
            contributions[player] += sign * (values[position + 1] - values[position]) / 2
    return contributions


def _variance(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


class ShapleyValue(NamedTuple):
    """One step's Shapley value ``phi`` and its standard error ``se``."""

    phi: float
    se: float


@dataclass(frozen=True, slots=True)
class Credit:
    """What `shapley` found: each resamplable step's value (by index), and the efficiency
    summary."""

    values: dict[int, ShapleyValue]
    summary: ShapleySummary


def standard_errors(per_pair: dict[int, list[float]]) -> dict[int, ShapleyValue]:
    """Per player ``(φ, SE)`` from its pair contributions (two pairs at least), with the pooled,
    t-calibrated standard error of the module docstring: ``φ ± 1.96·SE`` is a 95 % interval."""
    if not per_pair:
        return {}
    pairs = len(next(iter(per_pair.values())))
    if pairs < 2:
        raise ValueError(f"a Shapley standard error needs two pairs at least, got {pairs}")
    variances = {player: _variance(values) for player, values in per_pair.items()}
    pooled = sum(variances.values()) / len(variances) if variances else 0.0
    df = pairs - 1 + POOLED_DF
    scale = t_quantile(0.975, df) / Z_95
    estimates = {}
    for player, values in per_pair.items():
        own = variances[player]
        variance = max(own, ((pairs - 1) * own + POOLED_DF * pooled) / df)
        estimates[player] = ShapleyValue(sum(values) / pairs, math.sqrt(variance / pairs) * scale)
    return estimates


def _total_se(sums: Sequence[float]) -> float:
    """Standard error of Σφ from the pairs' sums, t-calibrated for ``K − 1`` degrees of freedom."""
    pairs = len(sums)
    return math.sqrt(_variance(sums) / pairs) * t_quantile(0.975, pairs - 1) / Z_95


def _estimates(per_pair: dict[int, list[float]]) -> dict[int, ShapleyValue]:
    """`standard_errors` of the pairs kept, or nothing when fewer than two are."""
    return standard_errors(per_pair) if len(next(iter(per_pair.values()), [])) > 1 else {}


def next_pairs(pairs: int, largest_se: float, target: float, cap: int) -> int:
    """How many pairs the next batch brings the total to: enough to bring ``largest_se`` to
    ``target`` if it shrinks as ``1/√pairs``, at least a quarter more, at most four times as many,
    never beyond ``cap``."""
    wanted = math.ceil(pairs * (largest_se / target) ** 2)
    return min(cap, 4 * pairs, max(wanted, pairs + max(1, pairs // 4)))


def shapley(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> Credit:
    """Per step its value and standard error, and the efficiency summary."""
    n_steps = len(engine.factual.steps)
    outcomes = engine.run(shapley_plans(n_steps, resamplable, config))
    sign = 1.0 if mode is Mode.FAILURE else -1.0
    per_pair: dict[int, list[float]] = {i: [] for i in resamplable}

    def add(pairs: range) -> None:
        for pair in pairs:
            found = _contributions(outcomes, n_steps, resamplable, config.seed, pair, sign)
            for player, value in (found or {}).items():
                per_pair[player].append(value)

    pairs = _pairs(config)
    add(range(pairs))
    estimates = _estimates(per_pair)
    target, notes = config.shapley_se, list[str]()
    if target is not None:
        cap = _max_pairs(config)
        while (
            estimates
            and (largest := max(se for _, se in estimates.values())) >= target
            and pairs < cap
        ):
            more = range(pairs, next_pairs(pairs, largest, target, cap))
            plans = _pair_plans(n_steps, resamplable, config.seed, more)
            engine.announce(len(plans))
            outcomes.update(engine.run(plans))
            add(more)
            pairs = more.stop
            estimates = _estimates(per_pair)
        if estimates and largest >= target:
            worst = max(estimates, key=lambda player: estimates[player][1])
            notes.append(
                f"the cap of {2 * cap} permutations stopped the search for standard errors below "
                f"{target:g}: step {worst}'s is {largest:.3g}"
            )
    kept_pairs = len(next(iter(per_pair.values()), []))
    if kept_pairs < pairs:
        notes.append(
            f"{pairs - kept_pairs} of {pairs} antithetic pairs had a rollout that could not be "
            "served or whose agent crashed, and were left out"
            + ("" if estimates else ": too few are left for Shapley values")
        )
    # Σφ per pair telescopes to v(all) − v(∅) of that pair's own rollouts, so efficiency holds by
    # construction; what the summary checks is agreement with both ends estimated independently.
    sums = [sum(per_pair[player][pair] for player in per_pair) for pair in range(kept_pairs)]

    def proportion(kept: bool) -> Proportion:
        runs = outcomes[Plan.coalition_end(n_steps, resamplable, kept=kept)]
        counted = [o for o in runs if o.counts]
        failures = sum(o.failed for o in counted)
        return Proportion(
            failures, len(counted), *wilson(failures, len(counted)),
            left_out=len(runs) - len(counted),
        )  # fmt: skip

    summary = ShapleySummary(
        permutations=2 * pairs,
        total=sum(phi for phi, _ in estimates.values()),
        total_se=_total_se(sums) if len(sums) > 1 else 0.0,
        v_all=proportion(kept=True),
        v_none=proportion(kept=False),
        mode=mode,
        se_target=target,
        note="; ".join(notes) or None,
    )
    return Credit(estimates, summary)
