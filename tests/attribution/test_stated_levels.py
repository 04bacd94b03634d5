"""The simulation tier of issue 25: the adaptive default, run over many seeds on four long runs
built to strain it (`long_runs`, whose every plan has an exact failure rate), names a wrong step no
more often than the stated bound allows (nor says that no step matters where one does), and the
intervals its report gives cover the true rates at the level they state.

* ``near-margin``: a real culprit, then a missed chance to mend just past the margin (an effect of
  exactly margin + 0.01) with noise after it, so the plan that keeps it is itself estimated;
* ``lucky-then-crash``: a 1-in-50 lucky step, then a crash it had made impossible (effects −0.98
  and 1.0: the failure rate falls as more of the record is kept, which the old search assumed
  never happens), with the root cause sought;
* ``gradual``: every step wears the run half the time and the run fails worn to 20 of 24 steps:
  no step decides it, several pass the margin a little, the latest of them at 0.117, then 0.078;
* ``early-culprit``: the culprit at step 1 of 16, among risky noise, so the costly plans that
  resample nearly everything are the ones the answer needs.

The intervals checked are every one a step's estimate or a band test reports: the failure rate
of each plan that was estimated (``kept`` and ``ablated``, a `Proportion`'s ``low``–``high``, at
95 %), and the difference between the two (``ci_low``–``ci_high``, at 95 %). A plan whose true rate
is 0 or 1 is left out (an interval that holds its own estimate always covers it), and so is a
difference between two such plans. An interval reported twice in one run counts once: one plan is
one step's kept plan and the next one's ablated plan, and two plans with the same true rate and
the same counts are the same evidence (rollouts share random streams, so the plans from either end
of a run of steps that change nothing fail in the same rollouts: the walk's band tests them all,
and one unlucky draw would otherwise count as a miss at every position). Coverage fails when the count that covered
is shown to fall short of the level (one-sided, at 0.001, counting intervals as independent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import pytest

from otel_replay.attribution import AttributionConfig, AttributionResult, Mode, attribute
from otel_replay.attribution._contrastive import ERROR_BOUND
from otel_replay.attribution._results import Proportion
from tests.attribution.long_runs import Break, Crash, LongRun, Luck, Miss, Risk, Wear, run

LEVEL = 0.95  # what the report's intervals state
#: A coverage count this unlikely at the level shows the intervals fall short of it.
SHORT_AT = 0.001
MARGIN = 0.1  # the default --margin
#: The verdict that says no resamplable step matters (issue 25's item 4).
SETTLED = "settled"


@dataclass(frozen=True)
class Case:
    model: LongRun
    seeds: int
    max_rollouts: int = 640
    root_cause: bool = False


CASES = {
    "near-margin": Case(run("near-margin", 16, {2: Break(0.5), 11: Miss(MARGIN + 0.01)}), 120),
    # the walk reaches the crash through plans whose rates are 0 or 1: the root cause, sought from
    # the start, estimates the plans before the luck (0.98), which stopping bears on; more seeds
    "lucky-then-crash": Case(
        run("lucky-then-crash", 16, {3: Luck(0.02), 6: Crash(0.0, 1.0)}), 200, root_cause=True
    ),
    # at 200 rollouts per plan the steps near the margin often stay open: stops at the limit too
    "gradual": Case(LongRun("gradual", tuple([Wear(0.5)] * 24)), 120, max_rollouts=200),
    "early-culprit": Case(run("early-culprit", 16, {1: Break(0.3)}, Risk(0.02)), 120),
}


@cache
def _results(name: str) -> tuple[AttributionResult, ...]:
    case = CASES[name]
    trajectory, registry = case.model.trajectory(), case.model.registry()
    return tuple(
        attribute(
            trajectory,
            registry,
            AttributionConfig(
                seed=seed, max_rollouts=case.max_rollouts, root_cause=case.root_cause
            ),
        )
        for seed in range(case.seeds)
    )


@cache
def _rates(name: str) -> tuple[float, ...]:
    """The true failure rate of the plan that resamples from each step on (the last: the record)."""
    model = CASES[name].model
    return tuple(model.failure_rate(start) for start in range(len(model.rules) + 1))


def test_the_models_are_what_they_are_built_to_be() -> None:
    near = CASES["near-margin"].model.effects()
    assert near[11] == pytest.approx(MARGIN + 0.01) and near[2] > 0.4
    lucky = CASES["lucky-then-crash"].model.effects()
    assert lucky[6] == pytest.approx(1.0) and lucky[3] == pytest.approx(-0.98)
    gradual = CASES["gradual"].model.effects()
    assert max(i for i, a in enumerate(gradual) if a > MARGIN) == 17
    assert 0 < gradual[18] < MARGIN
    early = CASES["early-culprit"].model.effects()
    assert max(i for i, a in enumerate(early) if a > 0) == 1
    # the per-plan rates are the effects' terms: F(i + 1) − F(i)
    rates = _rates("gradual")
    assert all(rates[i + 1] - rates[i] == pytest.approx(a) for i, a in enumerate(gradual))


@pytest.mark.statistical
@pytest.mark.parametrize("name", CASES)
def test_wrong_names_stay_under_the_stated_bound(name: str) -> None:
    """A step named with no effect, or before a step whose effect passes the margin. With room: a
    rule wrong at the bound's rate would pass this one time in seven at 120 seeds, one in sixteen
    at 200."""
    model, seeds = CASES[name].model, CASES[name].seeds
    named = [r.point_of_commitment for r in _results(name)]
    wrong = [step for step in named if step is not None and model.wrongly_named(step, MARGIN)]
    assert len(wrong) <= ERROR_BOUND * seeds / 2, (len(wrong), seeds, named)


@pytest.mark.statistical
@pytest.mark.parametrize("name", CASES)
def test_no_step_is_said_to_matter_none_where_one_does(name: str) -> None:
    """The verdict "settled" (no resamplable step changes the failure rate beyond the margin) is a
    conclusive answer too: on every model here a step's effect passes the margin, so each such
    verdict is wrong, and they count against the same bound, with the same room."""
    model, seeds = CASES[name].model, CASES[name].seeds
    assert any(abs(a) > MARGIN for a in model.effects())
    verdicts = [r.verdict.value for r in _results(name)]
    assert verdicts.count(SETTLED) <= ERROR_BOUND * seeds / 2, (verdicts.count(SETTLED), seeds)


@dataclass(frozen=True)
class Covered:
    """Intervals that held the truth, of those checked."""

    covered: int = 0
    total: int = 0

    def __add__(self, other: Covered) -> Covered:
        return Covered(self.covered + other.covered, self.total + other.total)

    def __str__(self) -> str:
        share = self.covered / self.total if self.total else math.nan
        return f"{self.covered}/{self.total} ({share:.1%})"


def _comparisons(
    result: AttributionResult, n_steps: int
) -> list[tuple[int, int, Proportion, Proportion, float, float]]:
    """(kept plan's start, ablated plan's start, kept, ablated, ci_low, ci_high) of every estimate
    the report gives: each step's (its kept plan resamples from the next step on: every step of a
    long run is resamplable) and each band test's (against the record)."""
    found = []
    for step in result.steps:
        if step.attribution is not None:
            assert step.kept and step.ablated and step.ci_low is not None
            assert step.ci_high is not None
            found.append(
                (step.index + 1, step.index, step.kept, step.ablated, step.ci_low, step.ci_high)
            )
    for test in result.search:
        c = test.comparison
        found.append((n_steps, test.start, c.kept, c.ablated, c.ci_low, c.ci_high))
    return found


def _degenerate(rate: float) -> bool:
    return rate < 1e-12 or rate > 1 - 1e-12


def _inside(value: float, low: float, high: float) -> bool:
    return low - 1e-12 <= value <= high + 1e-12


def _coverage(name: str) -> tuple[Covered, Covered]:
    """Per-plan and difference intervals that covered the truth, over every seed of a case."""
    rates = _rates(name)
    n_steps = len(rates) - 1
    plans, differences = Covered(), Covered()
    for result in _results(name):
        sign = 1.0 if result.mode is Mode.FAILURE else -1.0
        seen_plans: set[tuple[float, int, int]] = set()
        seen_differences: set[tuple[float, int, int, int, int]] = set()
        for kept_at, ablated_at, kept, ablated, low, high in _comparisons(result, n_steps):
            for start, p in ((kept_at, kept), (ablated_at, ablated)):
                key = (round(rates[start], 12), p.failures, p.n)
                if p.exact or _degenerate(rates[start]) or key in seen_plans:
                    continue
                seen_plans.add(key)
                plans += Covered(int(_inside(rates[start], p.low, p.high)), 1)
            truth = sign * (rates[kept_at] - rates[ablated_at])
            key5 = (round(truth, 12), kept.failures, kept.n, ablated.failures, ablated.n)
            if (_degenerate(rates[kept_at]) and _degenerate(rates[ablated_at])) or (
                key5 in seen_differences
            ):
                continue
            seen_differences.add(key5)
            differences += Covered(int(_inside(truth, low, high)), 1)
    return plans, differences


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k), summed in log space."""
    log_p, log_q = math.log(p), math.log1p(-p)
    return sum(
        math.exp(
            math.lgamma(n + 1)
            - math.lgamma(i + 1)
            - math.lgamma(n - i + 1)
            + i * log_p
            + (n - i) * log_q
        )
        for i in range(k + 1)
    )


def _short_of_level(c: Covered) -> bool:
    """Whether so few covered that intervals at the level would do as badly only ``SHORT_AT`` of
    the time."""
    return _binomial_cdf(c.covered, c.total, LEVEL) < SHORT_AT


@pytest.mark.statistical
@pytest.mark.parametrize("name", CASES)
def test_the_intervals_cover_the_true_rates_at_their_level(name: str) -> None:
    plans, differences = _coverage(name)
    assert plans.total >= 100 and differences.total >= 100, (plans, differences)
    assert not _short_of_level(plans), f"per plan: {plans} at a stated {LEVEL:.0%}"
    assert not _short_of_level(differences), f"differences: {differences} at {LEVEL:.0%}"


@pytest.mark.statistical
def test_the_intervals_cover_at_their_level_over_all_the_models() -> None:
    """Pooled, a shortfall spread thin over the models shows too: 92.7 % (issue 25) of the
    per-plan intervals would be short of 95 % by about four standard errors at 1,200 intervals
    (the walk reports fewer than the search did, and the same evidence counts once)."""
    per_case = {name: _coverage(name) for name in CASES}
    plans = sum((c[0] for c in per_case.values()), Covered())
    differences = sum((c[1] for c in per_case.values()), Covered())
    detail = ", ".join(f"{name} {p} and {d}" for name, (p, d) in per_case.items())
    assert plans.total >= 1_200 and differences.total >= 1_200, detail
    assert not _short_of_level(plans), f"per plan: {plans} at a stated {LEVEL:.0%}: {detail}"
    assert not _short_of_level(differences), f"differences: {differences}: {detail}"


def test_a_count_short_of_the_level_is_told_from_one_at_it() -> None:
    """The coverage check's own rule: 92.7 % of 2,000 is short of 95 %; 94.5 % of 2,000 is not."""
    assert _short_of_level(Covered(1_854, 2_000))
    assert not _short_of_level(Covered(1_890, 2_000))
    assert not _short_of_level(Covered(1_900, 2_000))


def _simultaneous(name: str) -> tuple[Covered, float, int]:
    """Over every seed of a case, the simultaneous intervals (the ones the decisions read) that
    covered the exact difference, the lowest confidence any of them stated, and how many did not
    hold the stated-level interval of the same estimate."""
    rates = _rates(name)
    n_steps = len(rates) - 1
    covered, lowest, outside = Covered(), 1.0, 0
    for result in _results(name):
        sign = 1.0 if result.mode is Mode.FAILURE else -1.0
        found = [
            (
                s.index + 1,
                s.index,
                s.no_effect_interval,
                s.no_effect_confidence,
                s.ci_low,
                s.ci_high,
            )
            for s in result.steps
            if s.attribution is not None
        ] + [
            (
                n_steps,
                t.start,
                t.comparison.no_effect_interval,
                1 - 2 * t.comparison.no_effect_tail,
                t.comparison.ci_low,
                t.comparison.ci_high,
            )
            for t in result.search
        ]
        for kept_at, ablated_at, interval, confidence, low, high in found:
            assert interval is not None and confidence is not None
            assert low is not None and high is not None
            truth = sign * (rates[kept_at] - rates[ablated_at])
            covered += Covered(int(_inside(truth, *interval)), 1)
            lowest = min(lowest, confidence)
            outside += not (interval[0] - 1e-12 <= low and high <= interval[1] + 1e-12)
    return covered, lowest, outside


@pytest.mark.statistical
@pytest.mark.parametrize("name", CASES)
def test_the_simultaneous_intervals_cover_at_their_level_and_hold_the_stated_ones(
    name: str,
) -> None:
    """Issue 42, item 5: each estimate reports both intervals. The simultaneous one, which the
    decisions read, covers the exact difference at least at the lowest confidence it states, and
    holds the stated-level (95 %) one, the narrower, for reading."""
    covered, lowest, outside = _simultaneous(name)
    assert covered.total >= 100, covered
    assert _binomial_cdf(covered.covered, covered.total, lowest) >= SHORT_AT, (covered, lowest)
    assert outside == 0
