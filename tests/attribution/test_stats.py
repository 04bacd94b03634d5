"""Statistics helpers checked against their textbook definitions: edit distance, exact binomial
bounds and the incomplete beta function behind them, and the rollouts at which a test can pass."""

from __future__ import annotations

import math
import random

import pytest

from otel_replay.attribution._stats import (
    _betainc,
    clopper_pearson,
    decisive_rollouts,
    difference_bounds,
    levenshtein,
    paired_difference_bounds,
    proportion_interval,
)


def test_levenshtein_agrees_with_the_textbook_recurrence() -> None:
    def textbook(x: str, y: str) -> int:
        previous = list(range(len(y) + 1))
        for i, cx in enumerate(x, start=1):
            current = [i]
            for j, cy in enumerate(y, start=1):
                current.append(
                    min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != cy))
                )
            previous = current
        return previous[-1]

    rng = random.Random(7)
    for _ in range(500):
        x = "".join(rng.choice("abc") for _ in range(rng.randint(0, 70)))
        y = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 70)))
        assert levenshtein(x, y) == textbook(x, y), (x, y)


def _tail_at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), by the definition (exact rationals are not needed)."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


def _tail_at_most(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))


def test_clopper_pearson_bounds_solve_their_defining_equations() -> None:
    """The lower bound is the rate at which k or more would be seen ``tail`` of the time, the
    upper the rate at which k or fewer would; each lies on the safe side of the exact root."""
    for k, n, tail in [
        (0, 10, 0.025),
        (3, 10, 0.025),
        (10, 10, 1e-4),
        (57, 100, 1e-5),
        (1, 640, 1e-6),
    ]:
        low, high = clopper_pearson(k, n, tail)
        if k > 0:
            assert _tail_at_least(k, n, low) <= tail * (1 + 1e-9)
            assert tail <= _tail_at_least(k, n, low + 1e-9)
        else:
            assert low == 0.0
        if k < n:
            assert _tail_at_most(k, n, high) <= tail * (1 + 1e-9)  # the sum's own rounding aside
            assert tail <= _tail_at_most(k, n, high - 1e-9)
        else:
            assert high == 1.0
    # n/n: the lower bound is tail^(1/n), the closed form decisive_rollouts reads
    assert clopper_pearson(50, 50, 1e-4)[0] == pytest.approx(1e-4 ** (1 / 50), abs=1e-12)


def test_the_betainc_continued_fraction_is_the_binomial_tail() -> None:
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 300)
        k = rng.randint(1, n)
        p = rng.random()
        assert _betainc(k, n - k + 1, p) == pytest.approx(_tail_at_least(k, n, p), abs=1e-12)


def test_the_fewest_rollouts_that_show_no_effect_are_where_the_bounds_reach_the_margin() -> None:
    for tail in (1e-2, 2.2e-4, 1e-6):
        n = decisive_rollouts(0.1, tail, known=True)
        assert (
            1 - clopper_pearson(n, n, tail)[0] <= 0.1 < 1 - clopper_pearson(n - 1, n - 1, tail)[0]
        )
        n = decisive_rollouts(0.1, tail)
        assert (
            difference_bounds(n, n, n, n, tail)[1]
            <= 0.1
            < difference_bounds(n - 1, n - 1, n - 1, n - 1, tail)[1]
        )
        # paired rollouts that never disagree need the same, whatever the rate
        assert paired_difference_bounds(0, 0, n, tail)[1] <= 0.1


def test_interval_ends_widen_with_the_looks_they_must_hold_at() -> None:
    one, many = proportion_interval(30, 100), proportion_interval(30, 100, looks=14)
    assert many[0] < one[0] < 0.3 < one[1] < many[1]
    assert proportion_interval(30, 100) == clopper_pearson(30, 100, 0.025)
