"""The root cause: the earliest step that matters, beside the Point of Commitment (the latest).

The Point of Commitment is where the failure became inevitable, the latest step shown to matter.
The question a person asks next ("and why not the error before it?") has its answer at the other
end: the **root cause** is the earliest resamplable step shown to matter, every earlier one shown
to have no effect. Who&When's label, the earliest step whose correction turns the failure into a
success, is this one. Its tests are the Point of Commitment's, read from the other end; the report
gives how often resampling from it on turns the outcome around (`RootCause.saves`).

The fixed strategy estimates every step, so the root cause is read off its estimates. The
sequential strategies have not estimated the steps before the Point of Commitment (that is what
made them cheap), so with ``AttributionConfig.root_cause`` they scan forward from the first
resamplable step, each step alone, to the first shown to matter, and say what it cost. Prefixes
are not cleared together: a prefix whose steps do nothing together can still hold a step that
matters alone, undone by a lucky one after it, and the band that clears suffixes without that
assumption (`_band`) has no counterpart at the start of a run, where the failure rate is anywhere
between 0 and 1. The cost ceiling (`_sequential`) keeps the scan from costing more than the fixed
strategy would.

Its tests are counted in the error's split from the start (`_adaptive`), so the stated bound
covers the Point of Commitment and the root cause together.
"""

from __future__ import annotations

from dataclasses import dataclass

from otel_replay.attribution._contrastive import compare, estimate_step, kept_plan
from otel_replay.attribution._engine import Outcome
from otel_replay.attribution._results import Mode, StepAttribution
from otel_replay.attribution._sequential import Rollouts, Schedule
from otel_replay.replay import Plan


def estimate(
    rollouts: Rollouts, plan: Schedule, mode: Mode, position: int
) -> StepAttribution | None:
    """The resamplable step at ``position`` estimated alone, as a sequential question (its kept
    plan against resampling from it on); None when the budget allowed no look."""
    engine, config, resamplable = rollouts.engine, rollouts.config, rollouts.resamplable
    n_steps = len(engine.factual.steps)
    step = engine.factual.steps[resamplable[position]]

    def judge(kept: list[Outcome], ablated: list[Outcome], exact: bool) -> StepAttribution:
        tests = compare(kept, ablated, kept_exact=exact, mode=mode, config=config, tails=plan.tails)
        return estimate_step(step, tests)

    return rollouts.decide(
        plan.looks,
        kept_plan(n_steps, resamplable, position),
        Plan.ablate_from(n_steps, step.index),
        judge,
        lambda e: e.decided,
    )


@dataclass(frozen=True, slots=True)
class Sought:
    """What `seek` did besides its estimates: ``cleared``, the runs of positions the prefix
    search cleared together, each (first, end) with the end left out (more than one when it
    started again after a step shown to lower the failure rate); ``notes``, what a person should
    know of where it stopped short."""

    cleared: tuple[tuple[int, int], ...] = ()
    notes: tuple[str, ...] = ()


def seek(
    rollouts: Rollouts,
    plan: Schedule,
    mode: Mode,
    estimates: dict[int, StepAttribution],
    latest: int,
) -> Sought:
    """Estimate what the root cause needs, into ``estimates``: each step alone, from the first
    resamplable step forward up to position ``latest`` (the Point of Commitment's, or the latest
    step shown to matter), until one is shown to matter or stays open. A step shown to have lowered
    the failure rate (a lucky record) is decided, and the scan goes on past it."""
    resamplable = rollouts.resamplable
    for position in range(latest + 1):
        if rollouts.switched:  # the cost ceiling: the fixed plan answers instead (`_ceiling`)
            break
        index = resamplable[position]
        found = estimates.get(index)
        if found is None:
            found = estimate(rollouts, plan, mode, position)
            if found is None:
                break
            estimates[index] = found
        if rollouts.out_of_budget or found.significant or not found.shown_not_to_matter:
            break
    return Sought()
