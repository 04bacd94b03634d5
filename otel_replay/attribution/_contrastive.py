"""Contrastive attribution and the Point of Commitment.

The estimand is fixed: ``attribution(i) = P(fail | kept_i) − P(fail | ablate_from(i))`` where
``kept_i`` holds every step up to and including ``i`` and resamples the rest. ``kept_i`` equals
``ablate_from(next resamplable step)``, so one plan per resamplable step (and one holding them all)
serves every estimate.

Point of Commitment = the latest resamplable step shown to matter — not the largest effect, which a
butterfly effect early in the run can fake — named only when every later resamplable step is shown
to have no effect beyond ±margin; otherwise the verdict is inconclusive and says between which steps
the commitment lies (the rule, every strategy's, is `_commitment.commitment`). Credit mode mirrors
all of this.

The error is a stated bound: a wrong step is named (one with no effect, or one before a step whose
effect exceeds the margin) at most `ERROR_BOUND` of the time. A wrong name needs a "matters" test
passed by a step with no effect, or a "no effect" test passed by a step beyond the margin; the bound
is spent half on each family and Bonferroni-corrected over the m resamplable steps in each (a union
bound, so it holds however the tests depend on each other — they do: the plan that resamples from
step i+1 on is both step i+1's ablated plan and step i's kept plan). "Matters" is a one-sided test
at ``ERROR_BOUND / 2m``; "no effect" is two one-sided tests at ``ERROR_BOUND / 2m`` each, i.e. an
interval at ``1 − ERROR_BOUND / m`` inside ±margin. `tests/attribution/test_error_bound.py` checks
the rate by simulation on near-margin models at every budget.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from otel_replay.attribution._causation import probabilities_of_causation, read_off
from otel_replay.attribution._commitment import Commitment, commitment
from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import (
    Comparison,
    Mode,
    Proportion,
    RootCause,
    StepAttribution,
    SuffixTest,
    Suspect,
    SwitchedToFixed,
)
from otel_replay.attribution._stats import (
    clopper_pearson,
    decisive_rollouts,
    difference_bounds,
    paired_difference_bounds,
    proportion_interval,
    rollouts_needed,
)
from otel_replay.model import Step, Trajectory
from otel_replay.replay import Plan

#: The chance of naming a wrong step, at most (see the module docstring).
ERROR_BOUND = 0.05


def test_tail(m: int) -> float:
    """Each test's one-sided error with ``m`` resamplable steps under the fixed strategy (and the
    scan): the bound, halved between the two families of tests and split over the m steps of
    each."""
    return ERROR_BOUND / (2 * max(1, m))


@dataclass(frozen=True, slots=True)
class ErrorShares:
    """How a strategy splits `ERROR_BOUND` between its kinds of test; each share is spent by a
    union bound, so the chance that any test errs is at most their sum.

    ``matters`` and ``no_effect`` are the two families of per-step tests. "Matters" is split over
    the m steps: the step a wrong "matters" names is any step the data lead to. "No effect" is
    split over the m steps too, except in the walk (``no_effect_over`` set), which tests the steps
    in a fixed order from the end back and goes on past a step only once it is cleared: a wrong
    verdict there needs one particular step cleared, the latest whose effect is beyond the margin
    (fixed by the model, not the data), so the family is split over the ``no_effect_over`` such
    steps (one, two with the root cause's walk forward) and not over m. ``band`` is the walk's one
    share for every joint clearing (`otel_replay.attribution._band`), by the same argument;
    ``suspect`` the one test of a step named before any rollout ran, taken out of ``matters``."""

    matters: float
    no_effect: float
    band: float = 0.0
    suspect: float = 0.0
    no_effect_over: int | None = None  # None: over the m steps

    @classmethod
    def scan(cls, *, suspect: float = 0.0) -> ErrorShares:
        """The fixed strategy's and the scan's: half to each family, each over the m steps (a
        suspect's share out of "matters")."""
        return cls(ERROR_BOUND / 2 - suspect, ERROR_BOUND / 2, suspect=suspect)

    @classmethod
    def walk(cls, *, suspect: float = 0.0, root_cause: bool = False) -> ErrorShares:
        """The adaptive walk's (`WALK_SHARES`), a suspect's share out of "matters"; with the root
        cause sought, "no effect" covers two fixed steps, one for each end of the run."""
        band, matters, no_effect = WALK_SHARES
        return cls(matters - suspect, no_effect, band, suspect, 2 if root_cause else 1)

    def matters_tail(self, m: int) -> float:
        """One "matters" test's share, with ``m`` resamplable steps."""
        return self.matters / max(1, m)

    def no_effect_tail(self, m: int) -> float:
        """One "no effect" test's share, with ``m`` resamplable steps."""
        return self.no_effect / max(1, m if self.no_effect_over is None else self.no_effect_over)


#: The adaptive walk's split of `ERROR_BOUND` (`ErrorShares.walk`): the band (34 rollouts per
#: position at a margin of 0.1), "matters" over the m steps, and "no effect" over the one step a
#: wrong verdict needs cleared. A larger band share buys fewer band rollouts (about 3 per
#: hundredth); "matters" is the family a small early effect's own test needs most.
WALK_SHARES = (0.03, 0.015, 0.005)


@dataclass(frozen=True, slots=True)
class Tails:
    """Each test's one-sided error, and the looks a sequential strategy may stop at (the reported
    95 % intervals split their error over them). The two families spend their halves of the bound
    apart: a "no effect" test cannot pass below `decisive_rollouts`, so the looks before it spend
    none of its error (`_sequential.schedule`)."""

    matters: float
    no_effect: float
    looks: int = 1

    @classmethod
    def fixed(cls, m: int) -> Tails:
        """The fixed strategy's: one look, each test at `test_tail`."""
        return cls(test_tail(m), test_tail(m))


def matters_confidence(m: int) -> float:
    """The confidence of the one-sided bound that shows a step matters (``m`` resamplable steps)."""
    return 1 - test_tail(m)


def no_effect_confidence(m: int) -> float:
    """The confidence of the interval the "no effect" test reads: its two one-sided tests at
    `test_tail` each are one interval at ``1 − 2·tail``."""
    return 1 - 2 * test_tail(m)


@dataclass(frozen=True, slots=True)
class Localisation:
    steps: tuple[StepAttribution, ...]
    point_of_commitment: int | None
    bracket: tuple[int, int] | None
    rollouts_needed: int | None
    outcomes: dict[Plan, list[Outcome]]
    search: tuple[SuffixTest, ...] = ()  # the adaptive walk's band tests, in the order run
    calls_needed: int | None = None  # with rollouts_needed, the calls it would add (sequential)
    root_cause: RootCause | None = None  # the earliest step that matters (`_root`)
    notes: tuple[str, ...] = ()  # what the adaptive walk and scan left out, for a person
    suspect: Suspect | None = None  # --suspect: its test, run first (`_suspect`)
    switched_to_fixed: SwitchedToFixed | None = None  # the cost ceiling switched (`_ceiling`)

    def resampled_from(self, index: int) -> list[Outcome]:
        """The rollouts that held the steps before ``index`` and resampled the rest."""
        n_steps = len(self.steps)
        return self.outcomes[Plan.ablate_from(n_steps, index)]


def kept_plan(n_steps: int, resamplable: Sequence[int], position: int) -> Plan:
    """The plan that keeps the resamplable step at ``position`` (and every step before it)."""
    later = resamplable[position + 1] if position + 1 < len(resamplable) else n_steps
    return Plan.ablate_from(n_steps, later)


def contrastive_plans(
    n_steps: int, resamplable: Sequence[int], rollouts: int, *, walks_record: bool = True
) -> list[tuple[Plan, int]]:
    """What `localise` runs: resampling from each resamplable step on, and holding them all. The
    trace walk of the plan that holds every step is the record itself, so it runs once; a live or
    chat-loop driver runs it like any other."""
    held = 1 if walks_record else rollouts
    return [
        *((Plan.ablate_from(n_steps, start), rollouts) for start in resamplable),
        (Plan.ablate_from(n_steps, n_steps), held),
    ]


def _proportion(outcomes: list[Outcome], exact: bool = False, looks: int = 1) -> Proportion:
    """The failure rate of the rollouts that are evidence (`Outcome.counts`); the others are
    counted as left out. Its 95 % interval is exact and split over the ``looks`` a sequential
    strategy may have stopped at (`proportion_interval`)."""
    counted = [o for o in outcomes if o.counts]
    n, left_out = len(counted), len(outcomes) - len(counted)
    failures = sum(o.failed for o in counted)
    if exact and n:  # a known rate: its interval is itself
        value = failures / n
        return Proportion(failures, n, value, value, exact=True, left_out=left_out)
    low, high = proportion_interval(failures, n, looks)
    return Proportion(failures, n, low, high, left_out=left_out)


def localise(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> Localisation:
    """The fixed strategy: every resamplable step estimated at ``config.rollouts`` rollouts per
    plan."""
    factual = engine.factual
    n_steps = len(factual.steps)
    walks = engine.walks_record
    outcomes = engine.run(
        contrastive_plans(n_steps, resamplable, config.rollouts, walks_record=walks)
    )
    tails = Tails.fixed(len(resamplable))
    estimates: dict[int, StepAttribution] = {}
    for position, index in enumerate(resamplable):
        kept = kept_plan(n_steps, resamplable, position)
        tests = compare(
            outcomes[kept],
            outcomes[Plan.ablate_from(n_steps, index)],
            kept_exact=walks and kept.resamples_nothing,
            mode=mode,
            config=config,
            tails=tails,
        )
        estimates[index] = estimate_step(factual.steps[index], tests)
    steps = all_steps(factual, estimates, resamplable)
    found = commitment(steps, resamplable)
    needed = _rollouts_to_settle(steps, found, resamplable, config)
    root = read_off(steps, resamplable, mode)
    return Localisation(steps, found.step, found.bracket, needed, outcomes, root_cause=root)


def all_steps(
    factual: Trajectory,
    estimates: dict[int, StepAttribution],
    resamplable: Sequence[int],
    banded: Collection[int] = (),
    band: int | None = None,
) -> tuple[StepAttribution, ...]:
    """Every step of the run: its estimate, or its identity alone (observed-only, or a resamplable
    step a strategy did not estimate; those in ``banded`` were cleared by the band, at ``band``
    rollouts per position)."""
    return tuple(
        estimates.get(s.index)
        or StepAttribution(
            s.index,
            s.kind.value,
            s.name,
            resamplable=s.index in resamplable,
            band=band if s.index in banded else None,
        )
        for s in factual.steps
    )


def estimate_step(step: Step, c: Comparison) -> StepAttribution:
    """One step's estimate and its two tests: the `compare` of its kept and ablated plans."""
    return StepAttribution(
        index=step.index,
        kind=step.kind.value,
        name=step.name,
        resamplable=True,
        attribution=c.effect,
        ci_low=c.ci_low,
        ci_high=c.ci_high,
        kept=c.kept,
        ablated=c.ablated,
        significant=c.significant,
        no_effect=c.no_effect,
        lowered=c.lowered,
        matters_bound=c.matters_bound,
        no_effect_interval=c.no_effect_interval,
        test_tail=c.test_tail,
        no_effect_tail=c.no_effect_tail,
        necessity=c.necessity,
        sufficiency=c.sufficiency,
    )


def compare(
    kept_outcomes: Sequence[Outcome],
    ablated_outcomes: Sequence[Outcome],
    *,
    kept_exact: bool,
    mode: Mode,
    config: AttributionConfig,
    tails: Tails,
) -> Comparison:
    """Two plans' difference and its two tests (module docstring), signed like the estimate:
    "matters" needs the one-sided bound at ``tails.matters`` above zero, "no effect" both
    one-sided bounds at ``tails.no_effect`` inside ±margin. Every bound is exact or conservative
    whatever the rates: against a known rate (``kept_exact``) the estimate's Clopper–Pearson
    bounds, mirrored; between two estimates the difference of exact bounds (`difference_bounds`),
    over the pairs that disagree when the two plans' rollouts share random streams
    (`paired_difference_bounds`)."""
    # each plan's rate at its stated level, for reading (no decision reads it)
    kept = _proportion(list(kept_outcomes), exact=kept_exact)
    ablated = _proportion(list(ablated_outcomes))
    pairs = None if kept.exact else discordant(kept_outcomes, ablated_outcomes)
    return judged(kept, ablated, mode=mode, margin=config.margin, tails=tails, pairs=pairs)


def discordant(kept: Sequence[Outcome], ablated: Sequence[Outcome]) -> tuple[int, int, int] | None:
    """Two plans' rollouts paired by number, when every one of them is: (pairs where only the
    kept plan failed, where only the resampled one did, pairs), over the pairs that are both
    evidence. None when the plans draw from different random streams (they are not pairs) or a
    rollout has no partner."""
    if not kept or not ablated or kept[0].plan.randomness != ablated[0].plan.randomness:
        return None
    by_number = {o.index: o for o in ablated if o.counts}
    pairs = [(o, by_number[o.index]) for o in kept if o.counts and o.index in by_number]
    if not pairs:
        return None
    b = sum(1 for k, a in pairs if k.failed and not a.failed)
    c = sum(1 for k, a in pairs if a.failed and not k.failed)
    return b, c, len(pairs)


def judged(
    kept: Proportion,
    ablated: Proportion,
    *,
    mode: Mode,
    margin: float,
    tails: Tails,
    pairs: tuple[int, int, int] | None = None,
) -> Comparison:
    """The tests of `compare` on two plans' counts, and on their ``pairs`` (`discordant`) when
    their rollouts are paired (what `tests/attribution/test_exact_error.py` sums exactly over
    every count a boundary model can give)."""
    sign = 1.0 if mode is Mode.FAILURE else -1.0

    def bounds(tail: float) -> tuple[float, float]:
        if kept.exact:
            low, high = clopper_pearson(ablated.failures, ablated.n, tail)
            return _signed(sign, (kept.value - high, kept.value - low))
        if pairs is not None:
            return _signed(sign, paired_difference_bounds(*pairs, tail))
        ends = difference_bounds(kept.failures, kept.n, ablated.failures, ablated.n, tail)
        return _signed(sign, ends)

    ci = bounds(0.025)  # the stated level, for reading
    interval = bounds(tails.no_effect)
    matters_bound = bounds(tails.matters)[0]
    causation = probabilities_of_causation(kept, ablated, mode, tails.looks)
    # "lowered" reads the no-effect interval's upper end, so it errs only where that end misses
    # the effect, an error the "no effect" family has already spent; but only at the looks where
    # "no effect" could pass, since the schedule splits that family's share over those alone
    # (`_sequential.schedule`)
    could_pass = tails.looks == 1 or ablated.n >= decisive_rollouts(
        margin, tails.no_effect, known=True
    )
    return Comparison(
        kept=kept,
        ablated=ablated,
        effect=sign * (kept.value - ablated.value),
        ci_low=ci[0],
        ci_high=ci[1],
        matters_bound=matters_bound,
        no_effect_interval=interval,
        test_tail=tails.matters,
        no_effect_tail=tails.no_effect,
        significant=matters_bound > 0.0,
        no_effect=interval[0] >= -margin and interval[1] <= margin,
        lowered=could_pass and interval[1] < -margin,
        necessity=causation.necessity,
        sufficiency=causation.sufficiency,
    )


def _signed(sign: float, ends: tuple[float, float]) -> tuple[float, float]:
    low, high = sorted((sign * ends[0], sign * ends[1]))
    return low, high


def _rollouts_to_settle(
    steps: tuple[StepAttribution, ...],
    found: Commitment,
    resamplable: Sequence[int],
    config: AttributionConfig,
) -> int | None:
    """The fixed strategy's rollouts per plan that might settle the bracket ``found`` left open
    (None when it named a step, or no step holds the commitment)."""
    if found.bracket is None:
        return None
    floor = decisive_rollouts(config.margin, test_tail(len(resamplable)))
    if found.latest_matters is not None:
        # a later step is neither shown to matter nor shown not to: the commitment is at or after
        # the step shown to matter, up to the latest such step. To settle it, the least settled of
        # them needs its interval to fit inside the margin around its estimate.
        widest = max(found.open_steps, key=lambda i: _test_half_width(steps[i]))
        room = config.margin - abs(steps[widest].attribution or 0.0)
        return rollouts_needed(room, _test_half_width(steps[widest]), config.rollouts, floor)
    # nothing shown to matter: the commitment, if any, is among the steps not shown not to
    strongest = max(found.open_steps, key=lambda i: steps[i].attribution or 0.0)
    effect = steps[strongest].attribution or 0.0
    reach = effect - (steps[strongest].matters_bound or 0.0)  # estimate to its one-sided bound
    # no effect worth chasing: what it takes is the rollouts at which "no effect" can be shown
    return rollouts_needed(effect, reach, config.rollouts, floor) or max(floor, 2 * config.rollouts)


def _test_half_width(step: StepAttribution) -> float:
    low, high = step.no_effect_interval or (0.0, 0.0)
    return (high - low) / 2
