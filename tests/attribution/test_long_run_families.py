"""The families issue 42 adds to ``benchmarks/adaptive_bench.py``, drawn by `long_runs` so tests
run the same models: each draw is what its family says, at every length the benchmark runs and
wherever its planted step sits, by the exact failure rates."""

from __future__ import annotations

import random

import pytest

from tests.attribution.long_runs import (
    Planted,
    lowered,
    lucky_behind,
    rescue_noise,
    settled,
)

MARGIN = 0.1  # the default --margin
#: (length, where the planted step goes): early, middle and late, the shortest and a long run.
PLACES = [(8, 2), (8, 7), (32, 3), (32, 16), (32, 31), (128, 60)]


def _draws(family: str, n: int, at: int) -> list[Planted]:
    build = {
        "lucky-behind": lucky_behind,
        "settled": settled,
        "lowered": lowered,
        "rescue-noise": rescue_noise,
    }[family]
    rng = random.Random(f"{family}:{n}:{at}")
    return [build(n, at, rng) for _ in range(3)]


def _latest_past(effects: list[float], floor: float) -> int:
    return max(i for i, a in enumerate(effects) if a > floor)


@pytest.mark.parametrize(("n", "at"), PLACES)
def test_lucky_behind_hides_a_dip_behind_an_early_culprit(n: int, at: int) -> None:
    for draw in _draws("lucky-behind", n, at):
        effects = draw.model.effects()
        assert draw.planted == at == _latest_past(effects, 1e-9)
        assert effects[at] >= 0.99 - 1e-9
        lucky = [i for i, a in enumerate(effects) if a < -0.9]
        assert len(lucky) == 1 and at - 4 <= lucky[0] < at
        culprit = [i for i, a in enumerate(effects) if 0.25 < a < 0.75]
        assert len(culprit) == 1 and culprit[0] < lucky[0]
        assert draw.model.wrongly_named(culprit[0], MARGIN)


@pytest.mark.parametrize(("n", "at"), PLACES)
def test_settled_has_no_step_that_matters(n: int, at: int) -> None:
    for draw in _draws("settled", n, at):
        assert draw.planted == -1
        assert draw.model.effects() == pytest.approx([0.0] * n)
        assert draw.model.failure_rate(0) == pytest.approx(1.0)


@pytest.mark.parametrize(("n", "at"), [(n, max(1, at)) for n, at in PLACES])
def test_lowered_puts_a_lucky_step_before_the_crash(n: int, at: int) -> None:
    for draw in _draws("lowered", n, at):
        effects = draw.model.effects()
        assert draw.planted == at == _latest_past(effects, 1e-9)
        assert draw.lowered is not None and draw.lowered < at
        assert -0.48 - 1e-9 <= effects[draw.lowered] <= -0.38 + 1e-9
        assert effects[at] >= 0.7 - 1e-9
        assert [i for i, a in enumerate(effects) if a < -MARGIN] == [draw.lowered]


@pytest.mark.parametrize(("n", "at"), [(n, min(at, n - 2)) for n, at in PLACES])
def test_rescue_noise_leaves_late_steps_that_matter_a_little(n: int, at: int) -> None:
    for draw in _draws("rescue-noise", n, at):
        effects = draw.model.effects()
        assert draw.planted == at == _latest_past(effects, MARGIN)
        late = [i for i, a in enumerate(effects) if i > at and a > 1e-9]
        assert late and all(0.0 < effects[i] <= 0.05 for i in late)
        assert not draw.model.wrongly_named(at, MARGIN)
