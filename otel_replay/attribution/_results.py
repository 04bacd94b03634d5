"""Results of an attribution: frozen, and everything the report and the CLI need."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from otel_replay.attribution._spend import NOTHING, Spend
from otel_replay.attribution._stats import Z_95
from otel_replay.model import Trajectory
from otel_replay.resamplers import Call, JudgeSummary


def percent(confidence: float) -> str:
    """A confidence as a percentage with the digits it needs not to read 100 %: 99.50%, 99.996%."""
    tail = 1.0 - confidence
    digits = 2 if tail <= 0 else max(2, math.ceil(-math.log10(tail)) - 2)
    return f"{confidence:.{digits}%}"


def ranges(indices: Sequence[int]) -> str:
    """``0, 1, 3–9``: runs of three or more consecutive indices as ranges ("" for none)."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


class Mode(str, Enum):
    FAILURE = "failure"  # attribution(i) = P(fail | kept) − P(fail | ablate_from(i))
    CREDIT = "credit"  # rescue credit(i) = P(fail | ablate_from(i)) − P(fail | kept)


class Verdict(str, Enum):
    CULPRIT = "culprit"
    SAVED = "saved"  # the swap question: the step from which the swapped-in model saves the run
    INCONCLUSIVE = "inconclusive"
    # conclusive: no resamplable step changes the failure rate (settled before them, or by an
    # observed-only step); not an open bracket, which is inconclusive
    SETTLED = "settled"
    NO_FAILURE = "no-failure"
    # the verdict would rest on steps resampling could not vary (`_variation`): named, with
    # what would vary them, never "no effect" or "settled"
    CANNOT_TELL = "cannot-tell"
    # too many rollouts could not be served or crashed for the estimates to say anything
    NO_EVIDENCE = "no-evidence"


@dataclass(frozen=True, slots=True)
class Proportion:
    """``failures`` of ``n`` rollouts of a plan (Wilson ends ``low``, ``high``); ``left_out`` more
    ran and are no evidence (unservable, crashed: `otel_replay.attribution._engine.Outcome`)."""

    failures: int
    n: int
    low: float
    high: float
    exact: bool = False  # a known rate (a deterministic plan run once), not an estimate
    left_out: int = 0

    @property
    def value(self) -> float:
        return self.failures / self.n if self.n else 0.0


@dataclass(frozen=True, slots=True)
class Share:
    """A probability of causation (`otel_replay.attribution._causation`): its value where the
    rollouts identify it (no rollout is made to fail by resampling a step that keeping it would
    have saved: monotonicity), its 95 % interval, and the bounds the rollouts give without that
    assumption (Tian and Pearl's), at the estimated rates."""

    value: float
    low: float
    high: float
    lower: float  # without monotonicity: the value is at least ``lower`` ...
    upper: float  # ... and at most ``upper``


@dataclass(frozen=True, slots=True)
class StepAttribution:
    """One step's estimates; everything but the identity is None for observed-only steps."""

    index: int
    kind: str
    name: str
    resamplable: bool
    attribution: float | None = None  # signed by the mode: failure attribution or rescue credit
    # its interval at the stated level (95 %), for reading; the decisions read the simultaneous
    # ones (``matters_bound``, ``no_effect_interval``), at the confidence the error's split sets
    ci_low: float | None = None
    ci_high: float | None = None
    kept: Proportion | None = None  # P(fail | step kept, later steps resampled)
    ablated: Proportion | None = None  # P(fail | this step and later resampled)
    shapley: float | None = None
    shapley_se: float | None = None
    significant: bool | None = None  # shown to matter (one-sided, alpha/m)
    no_effect: bool | None = None  # shown to have no effect beyond +-margin (TOST)
    # shown to lower the failure rate (raise it, for credit) beyond the margin: the "no effect"
    # interval lies wholly below −margin (a lucky record); decided, and not a culprit
    lowered: bool | None = None
    # What the two tests read: the one-sided lower bound at 1 - alpha/m that "matters" needs above
    # zero, and the 1 - 2·alpha interval that "no effect" needs inside +-margin.
    matters_bound: float | None = None
    no_effect_interval: tuple[float, float] | None = None
    test_tail: float | None = None  # the matters test's one-sided error (the bound's split)
    no_effect_tail: float | None = None  # each of the no-effect test's two one-sided errors
    # Reports made before the band: not estimated alone, the old search having shown that
    # resampling every step from step ``cleared_by`` on has no effect beyond ±margin.
    cleared_by: int | None = None
    # Not estimated alone: resampling from it on, and from the next resamplable step on, each
    # ended as the record did in every one of ``band`` rollouts, so its effect lies inside ±margin
    # whatever the other steps do (`otel_replay.attribution._band`)
    band: int | None = None
    # Pearl's probabilities of causation, as far as the rollouts identify them (`Share`):
    # necessity, that resampling the step would have changed the recorded outcome (saved a failed
    # run); sufficiency, that keeping it brings the outcome about where resampling it avoided it
    necessity: Share | None = None
    sufficiency: Share | None = None
    # Whether resampling the step can vary it (`otel_replay.attribution._variation`), and by what
    # or why not (None: not asked, a result made before the question was)
    varied: bool | None = None
    variation: str | None = None

    @property
    def decided(self) -> bool:
        """Whether a test decided the step: shown to matter, to have no effect, or to lower it."""
        return bool(self.significant or self.no_effect or self.lowered)

    @property
    def shown_not_to_matter(self) -> bool:
        """Shown to have no effect or to lower the rate alone: either way, not a culprit."""
        return bool(self.no_effect or self.lowered)

    @property
    def cleared(self) -> bool:
        """Shown not to hold the commitment without a test of its own: by the band, or (in a
        report made before the band) by the search's joint question."""
        return self.band is not None or self.cleared_by is not None

    @property
    def matters_confidence(self) -> float | None:
        """The confidence of the one-sided "matters" bound."""
        return None if self.test_tail is None else 1 - self.test_tail

    @property
    def no_effect_confidence(self) -> float | None:
        """The confidence of the "no effect" interval (two one-sided tests)."""
        tail = self.no_effect_tail if self.no_effect_tail is not None else self.test_tail
        return None if tail is None else 1 - 2 * tail

    @property
    def shapley_disagrees(self) -> bool:
        """Shapley's value and the contrastive estimate are further apart than their intervals
        allow (φ ± 1.96·SE, Shapley's t-calibrated 95 % interval, against the attribution's
        95 % interval): they measure different things (see
        `otel_replay.attribution` and the README), and the step is worth a look."""
        if self.shapley is None or self.shapley_se is None or self.ci_low is None:
            return False
        assert self.ci_high is not None
        margin = Z_95 * self.shapley_se
        return self.shapley - margin > self.ci_high or self.shapley + margin < self.ci_low


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two plans' failure rates, their difference signed by the mode (``kept − ablated`` for a
    failure, the reverse for rescue credit), and the two tests read off it at one-sided error
    ``test_tail`` each: shown to matter (the one-sided bound above 0), shown to have no effect (the
    ``1 − 2·tail`` interval inside ±margin)."""

    kept: Proportion
    ablated: Proportion
    effect: float
    # the interval at its stated level (95 %), for reading: as though the rollouts it read had
    # been fixed in advance, so not split over the looks or the tests; no decision reads it
    ci_low: float
    ci_high: float
    matters_bound: float
    no_effect_interval: tuple[float, float]
    test_tail: float  # the matters test's
    significant: bool
    no_effect: bool
    no_effect_tail: float = 0.0  # each of the no-effect test's two one-sided errors
    necessity: Share | None = None  # of the kept plan's step (`StepAttribution.necessity`)
    sufficiency: Share | None = None
    # the no-effect interval lies wholly below −margin, at a look where "no effect" could pass
    # (`_contrastive.judged`): shown to lower the failure rate beyond the margin
    lowered: bool = False

    @property
    def falls(self) -> bool:
        """Shown to go the other way: holding the steps lowers the failure rate (raises it, for
        credit) beyond doubt at the test's confidence."""
        return self.no_effect_interval[1] < 0.0


@dataclass(frozen=True, slots=True)
class SuffixTest:
    """What resampling every resamplable step from step ``start`` on, all at once, does to the
    failure rate against keeping the whole record.

    The walk's tests (``band`` set) ran ``band`` rollouts and put the position in the band when
    every one ended as the record did (``inside``): see `otel_replay.attribution._band`. A step
    whose own position and the next are both in the band is cleared, with no assumption. Reports
    made before the band hold the old search's questions (``band`` None), which cleared a whole
    suffix at once under an assumption about the steps inside it."""

    start: int
    comparison: Comparison
    # asked at the first look only, to find where to look: what it did not show is no answer
    screen: bool = False
    band: int | None = None  # the band test's rollouts (None: a question of the old search)
    inside: bool = False  # the band test put the position in the band

    @property
    def clears(self) -> bool:
        """A band test that put its position in the band, or a full question of the old search
        shown to have no effect."""
        if self.band is not None:
            return self.inside
        return not self.screen and self.comparison.no_effect

    @property
    def decision(self) -> str:
        if self.band is not None:
            return "in band" if self.inside else "out of band"
        c = self.comparison
        if c.significant:
            return "matters"
        if c.no_effect:
            return "no effect"
        if c.falls:
            return "falls"
        return "passed over" if self.screen else "undecided"


@dataclass(frozen=True, slots=True)
class RootCause:
    """The earliest step whose resampling changes the outcome, beside the Point of Commitment (the
    latest): the earliest resamplable step shown to matter with every earlier one shown not to,
    alone or together. ``index`` is None when it was not found (``sought`` False: not asked for;
    else the tests left it open, ``bracket`` says where); ``saves`` is the rate at which
    resampling from it on turns the outcome around (a failed run's successes), ``calls`` what
    looking for it cost beyond the Point of Commitment."""

    index: int | None
    sought: bool
    saves: Proportion | None = None
    bracket: tuple[int, int] | None = None
    calls: int = 0
    cleared_to: int | None = None  # old reports: steps before it cleared together, by prefixes
    why: str = ""  # when not found: why, in words
    # the steps before it shown to lower the failure rate (raise it, for credit) beyond the
    # margin: lucky records, decided and not culprits
    lowered: tuple[int, ...] = ()
    # old reports: the runs of steps the prefix search cleared together, each (first, end) with
    # the end left out, the last ending at ``cleared_to``: more than one when it started again
    # after a step shown to lower the rate
    cleared: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Suspect:
    """A step suspected of the failure before any rollout (``--suspect``), and what its test
    said (`otel_replay.attribution._suspect`). ``source`` is ``user`` (named by index) or
    ``judge`` (named by one model call, with its ``reason``); ``confirmed`` is True when the
    step was shown to matter, False when it was not (shown to have no effect, to lower the
    rate, or left open), None when it was not tested (the budget allowed no look);
    ``calls_to_confirm`` the step executions its test spent (the fixed strategy's: none of its
    own); ``effect``, ``interval`` (95 %, for reading) and ``matters_bound`` (the one-sided
    bound at the suspect's share) as a step's."""

    step: int
    source: str
    reason: str | None = None
    confirmed: bool | None = None
    calls_to_confirm: int = 0
    effect: float | None = None
    interval: tuple[float, float] | None = None
    matters_bound: float | None = None
    matters_tail: float | None = None  # the one-sided error of the test that confirms
    # what the test decided: matters, no effect, lowered, none seen (the estimate at most zero at
    # a look, which stops it), open (at its last look), not tested
    decision: str = "not tested"


@dataclass(frozen=True, slots=True)
class Repair:
    step_index: int
    output: Any
    similarity: float  # normalised edit similarity to the factual output (1.0 = identical)
    success_rate: float
    success_low: float
    success_high: float
    n: int
    source: str  # "rollout" or the repair-candidates function that offered it
    tried: int  # candidates tried, including this one
    move: str = "do"  # in the intervention algebra: do (a model turn's output) or observe
    plan: str = ""  # the repairing plan in words (`otel_replay.replay.Plan.describe`)


@dataclass(frozen=True, slots=True)
class ShapleySummary:
    permutations: int  # the permutations actually run (a ``shapley_se`` target may add pairs)
    total: float  # Σφ
    v_all: Proportion  # P(fail | every resamplable step kept)
    v_none: Proportion  # P(fail | every resamplable step resampled)
    mode: Mode = Mode.FAILURE
    total_se: float = 0.0  # standard error of Σφ, over the antithetic pairs
    se_target: float | None = None  # the standard error pairs were added for (None: none asked)
    note: str | None = None  # what a person should know: the cap stopped it before the target

    @property
    def expected_total(self) -> float:
        """What efficiency says Σφ equals: v(all) − v(∅), or its negation for rescue credit."""
        difference = self.v_all.value - self.v_none.value
        return difference if self.mode is Mode.FAILURE else -difference

    @property
    def efficiency_gap(self) -> float:
        return self.total - self.expected_total


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the rollouts could not tell, and where ``--tools recorded`` drew from.

    Attributes:
        unservable: each call nothing could answer (no stored run recorded it), with how many
            rollouts it ended; those rollouts are neither successes nor failures.
        crashed: rollouts whose agent raised (the live agent, or the chat loop's code), neither
            successes nor failures; ``first_crash`` the first one's ``Type: message``.
        draws: each stored run the recorded tool results came from, with how many were drawn
            from it (most first).
        faults: the calls nothing recorded that the faults fallback failed, with how often.
        simulated: the tool calls a model played (``--tools simulate``), with how often; each
            was one request of the model server, ``simulated_tokens`` their tokens as it counted
            them (None: some it did not count).
        missing: so many rollouts were left out (half of them, or half of a plan an estimate
            reads) that the estimates cannot be relied on: the verdict is ``no-evidence``.
        spent: what the rollouts left out spent (the calls an unservable one made before the
            call nothing answered, a crashed one's): part of the result's ``spend``, since every
            call made was paid.
    """

    unservable: tuple[tuple[Call, int], ...] = ()
    crashed: int = 0
    first_crash: str | None = None
    draws: tuple[tuple[str, int], ...] = ()
    faults: tuple[tuple[Call, int], ...] = ()
    missing: bool = False
    spent: Spend = NOTHING
    simulated: tuple[tuple[Call, int], ...] = ()
    simulated_tokens: int | None = 0

    @property
    def simulations(self) -> int:
        """The model server's requests that played a tool."""
        return sum(n for _, n in self.simulated)

    @property
    def unservable_rollouts(self) -> int:
        return sum(n for _, n in self.unservable)

    @property
    def left_out(self) -> int:
        """Rollouts that are no evidence, left out of every estimate."""
        return self.unservable_rollouts + self.crashed


@dataclass(frozen=True, slots=True)
class SwitchedToFixed:
    """A sequential strategy that switched to the fixed strategy's plan at the cost ceiling
    (`otel_replay.attribution._ceiling`): the calls spent when it switched, and the rollouts
    already run that the fixed plan reused."""

    at_calls: int
    reused_rollouts: int


@dataclass(frozen=True, slots=True)
class KeptRollout:
    """A rollout an attribution kept (`AttributionConfig.keep_rollouts`): the plan it rolled out
    (as it ran: `Plan.describe`), its number among that plan's rollouts, its run, and its score."""

    plan: str
    index: int
    run: Trajectory
    score: float


@dataclass(frozen=True, slots=True)
class AttributionResult:
    trajectory_id: str
    mode: Mode
    outcome: float
    failed: bool
    steps: tuple[StepAttribution, ...]
    point_of_commitment: int | None
    verdict: Verdict
    explanation: str
    bracket: tuple[int, int] | None  # when inconclusive: the commitment lies between these steps
    rollouts_needed: int | None  # when inconclusive: an estimate of the budget that would decide
    repair: Repair | None
    repair_note: str | None
    shapley: ShapleySummary | None
    resamplers: tuple[str, ...]
    verifier: str
    rollouts: int
    step_executions: int
    resampler_errors: int
    wall_seconds: float
    notes: tuple[str, ...] = ()  # what a person should know about how it ran (not in the report)
    driver: str = "trace"  # how rollouts were made, and why (the report's config.driver)
    search: tuple[
        SuffixTest, ...
    ] = ()  # the walk's band tests (old reports: the search's questions)
    calls_needed: int | None = None  # with rollouts_needed: the calls it would add (sequential)
    swap_model: str | None = None  # the swap question's model: the located step is where it saves
    swap_from: int = 0  # the first step whose re-run model turns the swap question's model answers
    # the --judge verifier's model calls (apart from resample-function calls) and its verdicts
    judge: JudgeSummary | None = None
    evidence: Evidence = Evidence()  # rollouts left out, and the draws from the store
    kept: tuple[KeptRollout, ...] = ()  # AttributionConfig.keep_rollouts' rollouts (not reported)
    root_cause: RootCause | None = (
        None  # the earliest step that matters (None: nothing to look for)
    )
    spend: Spend = NOTHING  # step_executions by what they cost: model calls, tokens, tool calls
    suspect: Suspect | None = None  # --suspect: the step suspected first, and what its test said
    switched_to_fixed: SwitchedToFixed | None = None  # the cost ceiling switched the strategy

    @property
    def question(self) -> str:
        """What was asked: ``failure``, ``credit``, or ``swap-model`` (the report's ``mode``)."""
        return "swap-model" if self.swap_model is not None else self.mode.value
