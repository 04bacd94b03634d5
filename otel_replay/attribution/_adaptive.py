"""The adaptive strategy: walk from the end of the run back, clearing by the band where it can.

The Point of Commitment is the latest step shown to matter with every later step shown to have no
effect (`otel_replay.attribution._commitment`, the rule the fixed strategy uses too). The walk
(`_walk`) starts at the last resamplable step and goes back: a step whose position and the next are
both in the band (`_band`: resampling from there on ended as the record did in every one of r
rollouts) is cleared without a test of its own; any other step is tested alone, as a sequential
question (`_sequential`), and the first shown to matter stops the walk. The steps it never reaches
come before the culprit and are never estimated: they are the expensive ones, since
``ablate_from(i)`` resamples every step from i on. The scan (``--strategy scan``) is the same walk
with no band: every step from the end back is tested alone.

The stated bound, ``ERROR_BOUND`` on naming a wrong step, holds with no assumption about how the
steps interact: the walk's tests spend their shares of it (`ErrorShares.walk`: the band one share
for every position, each family of per-step tests its share over the m steps, each test over its
looks), the scan's as the fixed strategy's (`ErrorShares.scan`). Where the walk stays open (at
``max_rollouts`` or the budget), the verdict is inconclusive between the steps it left open.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_replay.attribution._band import band_rollouts
from otel_replay.attribution._causation import read_off
from otel_replay.attribution._ceiling import Ceiling, switch_to_fixed
from otel_replay.attribution._commitment import commitment
from otel_replay.attribution._config import AttributionConfig, Strategy, budget_words
from otel_replay.attribution._contrastive import (
    ErrorShares,
    Localisation,
    all_steps,
    kept_plan,
)
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Mode, RootCause, StepAttribution, ranges
from otel_replay.attribution._root import seek
from otel_replay.attribution._sequential import Rollouts, schedule
from otel_replay.attribution._stats import decisive_rollouts, rollouts_needed
from otel_replay.attribution._suspect import SUSPECT_SHARE, suspect_first
from otel_replay.attribution._walk import Stop, walk
from otel_replay.replay import Plan


def shares_for(config: AttributionConfig) -> ErrorShares:
    """How the strategy splits the error bound: the walk's shares for the adaptive default, the
    scan's otherwise, with a suspect's share out of "matters" when one is given."""
    suspect = SUSPECT_SHARE if config.suspect is not None else 0.0
    if config.strategy is not Strategy.ADAPTIVE:
        return ErrorShares.scan(suspect=suspect)
    return ErrorShares.walk(suspect=suspect, root_cause=config.root_cause)


def band_for(config: AttributionConfig) -> int | None:
    """The band test's rollouts per position under ``config``; None for the scan, and where the
    band would need more rollouts than ``max_rollouts`` allows (the walk then tests every step
    alone)."""
    if config.strategy is not Strategy.ADAPTIVE:
        return None
    band = band_rollouts(config.margin, shares_for(config).band)
    return band if band <= config.max_rollouts else None


def adaptive(
    engine: Engine,
    resamplable: Sequence[int],
    mode: Mode,
    config: AttributionConfig,
    outcomes: dict[Plan, list[Outcome]] | None = None,
) -> Localisation:
    """The Point of Commitment by the walk, with notes on what it left out (``outcomes``: the
    rollouts run so far, a suspect's, whose test came first)."""
    if config.suspect is not None and outcomes is None:  # its test first (`_suspect`)
        return suspect_first(engine, resamplable, mode, config, adaptive)
    plan = schedule(config, len(resamplable), shares_for(config))
    band = band_for(config)
    ceiling = Ceiling.of(
        engine.pricing,
        len(engine.factual.steps),
        resamplable,
        config,
        plan.looks,
        walks_record=engine.walks_record,
    )
    ran = {} if outcomes is None else outcomes
    rollouts = Rollouts(engine, config, resamplable, ran, ceiling=ceiling)
    walked = walk(rollouts, mode, plan, band)
    estimates = walked.estimates
    steps = all_steps(engine.factual, estimates, resamplable, walked.cleared, band)
    # the fixed strategy's rule over what the walk showed: a step the band cleared counts as
    # shown to have no effect, a step never reached may still be the commitment
    named = commitment(steps, resamplable)
    needed, calls = _needed(steps, named.open_steps, rollouts, band)
    notes: list[str] = []
    root = read_off(steps, resamplable, mode)
    if root is not None and root.bracket is not None and not rollouts.out_of_budget:
        if config.root_cause:
            spent = engine.step_executions
            latest = resamplable.index(root.bracket[1])  # the earliest step shown to matter yet
            seek(rollouts, plan, mode, estimates, latest)
            steps = all_steps(engine.factual, estimates, resamplable, walked.cleared, band)
            root = read_off(steps, resamplable, mode, calls=engine.step_executions - spent)
        else:
            root = RootCause(None, False, why="not sought: --root-cause looks for it")
    switched = None
    if rollouts.switched:  # the cost ceiling (`_ceiling`): the fixed plan, read by the usual rules
        estimates, switched, said = switch_to_fixed(
            rollouts, mode, plan.tails, estimates, walked.cleared
        )
        if switched is not None:
            steps = all_steps(engine.factual, estimates, resamplable, walked.cleared, band)
            named = commitment(steps, resamplable)
            needed, calls = _needed(steps, named.open_steps, rollouts, band)
            root, notes = read_off(steps, resamplable, mode), []
        notes.append(said)
    notes = _notes(steps, resamplable, walked.stop, rollouts, mode) + notes
    return Localisation(
        steps,
        named.step,
        named.bracket,
        needed,
        rollouts.outcomes,
        search=tuple(walked.tests),
        calls_needed=calls,
        root_cause=root,
        notes=tuple(notes),
        switched_to_fixed=switched,
    )


def _needed(
    steps: tuple[StepAttribution, ...],
    open_steps: Sequence[int],
    rollouts: Rollouts,
    band: int | None,
) -> tuple[int | None, int | None]:
    """Rollouts per plan that might settle the latest open question (an undecided step), and the
    calls they would add; where the walk stopped before testing any open step alone (the budget
    came first), the band's rollouts for every open step's plan, what walking the rest of the way
    through the band would cost; (None, None) with no ``open_steps`` (the commitment named, or no
    step holds it)."""
    undecided = [i for i in open_steps if steps[i].attribution is not None]
    if not undecided:
        return _walk_on(open_steps, rollouts, band)
    step = steps[undecided[-1]]
    if not (step.no_effect_interval and step.ablated and step.no_effect_tail):
        return None, None
    n_steps = len(rollouts.engine.factual.steps)
    position = rollouts.resamplable.index(step.index)
    plans = [
        kept_plan(n_steps, rollouts.resamplable, position),
        Plan.ablate_from(n_steps, step.index),
    ]
    low, high = step.no_effect_interval
    config = rollouts.config
    floor = decisive_rollouts(config.margin, step.no_effect_tail)
    ran = len(rollouts.outcomes.get(plans[1], []))
    effect = step.attribution or 0.0
    needed = rollouts_needed(config.margin - abs(effect), (high - low) / 2, ran, floor)
    if needed is None:
        return None, None
    exact = rollouts.engine.walks_record
    calls = sum(
        max(0, needed - len(rollouts.outcomes.get(plan, [])))
        * len(plan.resampled(rollouts.resamplable))
        for plan in plans
        if not (exact and plan.resamples_nothing)
    )
    return needed, calls


def _walk_on(
    open_steps: Sequence[int], rollouts: Rollouts, band: int | None
) -> tuple[int | None, int | None]:
    """The band's rollouts per plan, and the calls that bring each open step's plan to them."""
    if band is None or not open_steps:
        return None, None
    n_steps = len(rollouts.engine.factual.steps)
    plans = [Plan.ablate_from(n_steps, i) for i in open_steps]
    calls = sum(
        max(0, band - len(rollouts.outcomes.get(plan, [])))
        * len(plan.resampled(rollouts.resamplable))
        for plan in plans
    )
    return (band, calls) if calls else (None, None)


def _notes(
    steps: tuple[StepAttribution, ...],
    resamplable: Sequence[int],
    stop: Stop,
    rollouts: Rollouts,
    mode: Mode,
) -> list[str]:
    """What a person should know about what the walk left out (the steps the band cleared are
    said by the table, the explanation and the report, not here: that is no warning)."""
    notes = []
    lowered = [i for i in resamplable if steps[i].lowered]
    if lowered:
        rate = "failure" if mode is Mode.FAILURE else "success"
        notes.append(
            f"adaptive: {_which(lowered)} shown to have lowered the {rate} rate by more than "
            f"±{rollouts.config.margin:g} (a lucky record): decided, and no culprit"
        )
    unseen = [i for i in resamplable if steps[i].attribution is None and steps[i].band is None]
    undecided = [s.index for s in steps if s.attribution is not None and not s.decided]
    if unseen:
        if rollouts.switched and not rollouts.out_of_budget:
            why = "the fixed strategy's cost was reached"
        elif rollouts.out_of_budget or stop is Stop.BUDGET:
            why = f"the budget of {_budget(rollouts.config)} was reached"
        elif undecided:
            why = (
                f"step {undecided[0]} stayed undecided at {rollouts.config.max_rollouts} rollouts "
                "per plan, and no earlier step can be named while it is open; --max-rollouts "
                "raises the limit"
            )
        else:
            why = "they come before the step shown to matter"
        notes.append(f"adaptive: {_which(unseen)} not estimated ({why})")
    elif rollouts.out_of_budget:
        notes.append(f"adaptive: the budget of {_budget(rollouts.config)} was reached")
    return notes


def _which(indices: Sequence[int]) -> str:
    """``step 4 was`` / ``steps 3–9, 12 were``: runs of consecutive indices as ranges."""
    text = ranges(indices)
    return f"step {text} was" if len(indices) == 1 else f"steps {text} were"


def _budget(config: AttributionConfig) -> str:
    return budget_words(config.budget or 0, config.budget_unit)
