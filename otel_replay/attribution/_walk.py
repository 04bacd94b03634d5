"""The adaptive walk: from the end of the run back, the band first, each step alone where it must.

The Point of Commitment is the latest step that matters, so the walk starts at the last
resamplable position and goes back. At each position p it runs the band test (`_band`):
``ablate_from(p)`` for r rollouts, in the band when every one ends as the record did. A step whose
own position and the next are both in the band is cleared: its effect lies inside ±margin,
whatever the other steps do. Any other step is tested alone (`_root.estimate`, its kept plan
against resampling from it on, sequentially), which reuses the band's rollouts of both plans:

* shown to matter: it is the Point of Commitment, and the walk stops;
* shown to have no effect, or to have lowered the failure rate (a lucky record): the walk goes on
  back;
* open at ``max_rollouts`` or stopped by the budget: the walk stops, and the verdict is a bracket.

A run whose every position is in the band is settled: no resampled step moves its failure rate
beyond the margin, at r rollouts per plan. A failure committed to early costs r rollouts of every
plan after it, which no procedure whose bound holds without assumptions can avoid by much (a dip
that no plan it ran can see would be missed: docs/attribution.md, "What it cannot do cheaply").

The error: a wrong verdict needs a per-step test to err or the band to accept a position outside
it, and both come down to one step fixed by the model: the latest whose effect is beyond the
margin (`ErrorShares`: "matters" is split over the m steps, "no effect" and the band are not).
Where the record is not exact (a live agent, the chat loop re-running its loop), the record's own
plan is band-tested too: the lemma needs both ends of the last step in the band.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from otel_replay.attribution._band import in_band
from otel_replay.attribution._contrastive import compare
from otel_replay.attribution._engine import Outcome
from otel_replay.attribution._results import Comparison, Mode, StepAttribution, SuffixTest
from otel_replay.attribution._root import estimate
from otel_replay.attribution._sequential import Rollouts, Schedule
from otel_replay.replay import Plan


class Stop(str, Enum):
    """Why the walk stopped."""

    NAMED = "named"  # a step shown to matter: the Point of Commitment
    THROUGH = "through"  # every position walked, none shown to matter
    UNDECIDED = "undecided"  # a step stayed open at the most rollouts per plan
    BUDGET = "budget"  # the next batch would have passed the budget (or the cost ceiling)


@dataclass
class Walked:
    """What the walk showed: the band tests in the order run, the steps tested alone (by step
    index), the steps the band cleared (by step index), and why it stopped."""

    tests: list[SuffixTest] = field(default_factory=list)
    estimates: dict[int, StepAttribution] = field(default_factory=dict)
    cleared: set[int] = field(default_factory=set)
    stop: Stop = Stop.THROUGH


def walk(rollouts: Rollouts, mode: Mode, plan: Schedule, band: int | None) -> Walked:
    """Walk from the end back (module docstring), ``band`` rollouts per band test; with no band
    (the scan), every step is tested alone."""
    engine, resamplable = rollouts.engine, rollouts.resamplable
    m, n_steps = len(resamplable), len(engine.factual.steps)
    walked = Walked()
    inside = {m: True}  # the record's position: exact in the trace walk
    # (position, the step resampled from): from the end back, after the record's own plan where
    # the record is re-run rather than walked
    starts = [(position, resamplable[position]) for position in reversed(range(m))]
    if band is not None and not engine.walks_record:
        starts.insert(0, (m, n_steps))
    for position, index in starts:
        if band is not None:
            test = _band_test(rollouts, mode, plan, index, band)
            if test is None:
                walked.stop = Stop.BUDGET
                return walked
            walked.tests.append(test)
            inside[position] = test.inside
            if position == m:
                continue
            if inside[position] and inside[position + 1]:
                walked.cleared.add(index)
                continue
        found = estimate(rollouts, plan, mode, position)
        if found is None:
            walked.stop = Stop.BUDGET
            return walked
        walked.estimates[index] = found
        if found.significant:
            walked.stop = Stop.NAMED
            return walked
        if rollouts.out_of_budget or not found.shown_not_to_matter:
            walked.stop = Stop.BUDGET if rollouts.out_of_budget else Stop.UNDECIDED
            return walked
    return walked


def _band_test(
    rollouts: Rollouts, mode: Mode, plan: Schedule, start: int, band: int
) -> SuffixTest | None:
    """The band test of resampling from step ``start`` on (the record's own plan when ``start``
    is the run's length), against the record; None when the budget allows no batch. It runs in
    the schedule's looks up to ``band`` and stops at the first look with a rollout unlike the
    record: that position is out of the band whatever the rest would show, so stopping there
    changes no decision the band makes."""
    engine, config = rollouts.engine, rollouts.config
    n_steps = len(engine.factual.steps)
    record = Plan.ablate_from(n_steps, n_steps)

    def judge(kept: list[Outcome], ablated: list[Outcome], exact: bool) -> Comparison:
        return compare(kept, ablated, kept_exact=exact, mode=mode, config=config, tails=plan.tails)

    resampled = Plan.ablate_from(n_steps, start)
    looks = (*(n for n in plan.looks if n < band), band)
    answer = rollouts.decide(
        looks,
        record,
        resampled,
        judge,
        # one rollout unlike the record puts the position out of the band: no need for the rest
        lambda c: not in_band(rollouts.outcomes[resampled], mode, c.ablated.n + c.ablated.left_out),
    )
    if answer is None:
        return None
    return SuffixTest(
        start, answer, band=band, inside=in_band(rollouts.outcomes[resampled], mode, band)
    )
