"""The decision rule's stated error bound (issue 10): a wrong step is named at most `ERROR_BOUND` of
the time, at every budget, on the model built to trip it (`scm/near_margin.py`: a real culprit, then
noise, then a step just past the margin).

Before: a plan shared by two tests let one unlucky batch make a noise step look decisive and the
near-margin step look harmless at once, and the "no effect" tests spent 0.05 each uncorrected: 14
wrong names in 1,500 seeds at 100 rollouts (0.9 %), with no bound stated. The seeds below are ones
it named wrong.
"""

from __future__ import annotations

from functools import cache

import pytest

from otel_replay import Registry, Trajectory
from otel_replay.attribution import AttributionConfig, Strategy, attribute
from otel_replay.attribution._contrastive import ERROR_BOUND
from otel_replay.importers.jsonl import read_jsonl
from otel_replay.resamplers._loading import load_resamplers
from tests.attribution.models import SCM

CULPRIT = 4  # see the model's docstring
#: Seeds on which the earlier rule named step 1 or step 3 at 100 rollouts.
MISNAMED_BEFORE = [53, 232, 339, 577, 634, 714, 852, 903]


@cache
def _model() -> tuple[Trajectory, Registry]:
    (trajectory,) = read_jsonl(SCM / "near_margin.jsonl")
    registry = Registry()
    load_resamplers([str(SCM / "near_margin.py")], registry)
    return trajectory, registry


def _named(rollouts: int, seed: int, strategy: Strategy = Strategy.FIXED) -> int | None:
    trajectory, registry = _model()
    config = AttributionConfig(rollouts=rollouts, seed=seed, strategy=strategy)
    return attribute(trajectory, registry, config).point_of_commitment


@pytest.mark.parametrize("seed", MISNAMED_BEFORE)
def test_seeds_that_named_a_wrong_step_no_longer_do(seed: int) -> None:
    assert _named(100, seed) in (CULPRIT, None)


@pytest.mark.statistical
@pytest.mark.parametrize("rollouts", [20, 50, 100, 200])
def test_wrong_names_stay_under_the_stated_bound_at_every_budget(rollouts: int) -> None:
    """Under the bound with room to spare: a rate at the bound would show about 10 in 200."""
    seeds = 200
    named = [_named(rollouts, seed) for seed in range(seeds)]
    wrong = sum(1 for step in named if step not in (CULPRIT, None))
    assert wrong <= ERROR_BOUND * seeds / 3, (wrong, seeds)
    if rollouts >= 100:  # and the budget is spent on answers, not on caution
        assert named.count(CULPRIT) >= 0.75 * seeds


@pytest.mark.statistical
def test_the_adaptive_scan_keeps_the_same_bound() -> None:
    """Looking after every batch spends the error once per look; the scan divides it by the looks,
    so its wrong names stay under the bound too, while it still finds the near-margin culprit."""
    seeds = 200
    named = [_named(100, seed, Strategy.ADAPTIVE) for seed in range(seeds)]
    wrong = sum(1 for step in named if step not in (CULPRIT, None))
    assert wrong <= ERROR_BOUND * seeds / 3, (wrong, seeds)
    assert named.count(CULPRIT) >= 0.75 * seeds
