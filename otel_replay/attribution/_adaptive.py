"""The adaptive strategy: search for the suffix that holds the commitment, then scan back from it.

The Point of Commitment is the latest step shown to matter with every later step shown to have no
effect (`otel_replay.attribution._commitment`, the rule the fixed strategy uses too). The search
(`_search`) finds, by a gallop from the end and a bisection, the latest position whose suffix
matters and the earliest whose suffix has no effect; its questions resample whole suffixes, so a
handful of them clears most of a long run. The scan then estimates steps one by one from that
position back, each as a sequential question (`_sequential`), and stops at the first shown to
matter. The steps it never reaches come before the culprit and are never estimated: they are the
expensive ones, since ``ablate_from(i)`` resamples every step from i on.

Where the search's assumption fails (the failure rate falls somewhere as more of the record is
kept), the scan starts from the last step instead and nothing is cleared jointly. Where the search
stays open (at ``max_rollouts`` or the budget), the verdict is inconclusive between the positions it
had reached.

The stated bound, ``ERROR_BOUND`` on naming a wrong step, holds as for the fixed strategy: each
family of tests spends its half over the m steps and the search's questions (`_search.questions`),
and each question over its looks. The search's joint "no effect" also needs its assumption, which it
checks on every plan it runs (docs/attribution.md, "How sure is the answer").
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_replay.attribution._causation import read_off
from otel_replay.attribution._ceiling import Ceiling, switch_to_fixed
from otel_replay.attribution._commitment import commitment
from otel_replay.attribution._config import AttributionConfig, Strategy, budget_words
from otel_replay.attribution._contrastive import (
    Localisation,
    all_steps,
    kept_plan,
)
from otel_replay.attribution._engine import Engine
from otel_replay.attribution._results import Comparison, Mode, RootCause, StepAttribution
from otel_replay.attribution._root import estimate, seek
from otel_replay.attribution._search import Searched, Stop, questions, search
from otel_replay.attribution._sequential import Rollouts, Schedule, schedule
from otel_replay.attribution._stats import decisive_rollouts, rollouts_needed
from otel_replay.replay import Plan

#: The fewest resamplable steps worth a search: below it, the extra questions cost more than they
#: clear (each one is a test more in the error's split), and the scan runs alone.
SEARCH_FROM = 12


def adaptive(
    engine: Engine, resamplable: Sequence[int], mode: Mode, config: AttributionConfig
) -> Localisation:
    """The Point of Commitment by the search and the scan, with notes on what they left out."""
    m = len(resamplable)
    searching = config.strategy is Strategy.ADAPTIVE and m >= SEARCH_FROM
    # the search from the start, when the root cause is asked for, asks as many questions more
    asked = (2 if config.root_cause else 1) * questions(m) if searching else 0
    plan = schedule(config, m, asked)
    n_steps, walks = len(engine.factual.steps), engine.walks_record
    ceiling = Ceiling.of(
        engine.pricing, n_steps, resamplable, config, plan.looks, walks_record=walks
    )
    rollouts = Rollouts(engine, config, resamplable, {}, ceiling=ceiling)
    searched = search(rollouts, mode, plan) if searching else Searched(-1, m, Stop.SKIPPED)
    start, cleared = m - 1, None
    if searched.stop is Stop.FALLS:
        cleared = _still_cleared(searched, resamplable)
        start = m - 1 if cleared is None else cleared - 1
    elif searched.stop is Stop.DONE and searched.hi == 0:
        # every step cleared together: "no resamplable step matters" would rest on the
        # search's assumption alone, so each step is tested alone, from the end
        start, cleared = m - 1, None
    elif searched.stop is not Stop.SKIPPED:
        cleared = searched.hi if searched.hi < m else None
        # where the search stayed open, the verdict is its bracket; else the scan goes on from lo
        start = searched.lo if searched.stop is Stop.DONE else -1
    estimates = _scan(rollouts, start, mode, plan)
    cleared_from = resamplable[cleared] if cleared is not None else None
    steps = all_steps(engine.factual, estimates, resamplable, cleared_from)
    # the fixed strategy's rule over what the search and the scan showed: a step cleared jointly
    # counts as shown to have no effect, a step never reached may still be the commitment
    named = commitment(steps, resamplable)
    needed, calls = _needed(steps, named.open_steps, searched, rollouts)
    notes: list[str] = []
    root = read_off(steps, resamplable, mode)
    if root is not None and root.bracket is not None and not rollouts.out_of_budget:
        if config.root_cause:
            spent = engine.step_executions
            latest = resamplable.index(root.bracket[1])  # the earliest step shown to matter yet
            sought = seek(rollouts, plan, mode, estimates, latest, searching=searching)
            steps = all_steps(engine.factual, estimates, resamplable, cleared_from)
            # as step indices: the end of a run is the first step after it (or the run's end)
            runs = tuple(
                (resamplable[a], resamplable[b] if b < m else len(engine.factual.steps))
                for a, b in sought.cleared
            )
            root = read_off(
                steps, resamplable, mode, cleared=runs, calls=engine.step_executions - spent
            )
            notes += sought.notes
        else:
            root = RootCause(None, False, why="not sought: --root-cause looks for it")
    switched = None
    if rollouts.switched:  # the cost ceiling (`_ceiling`): the fixed plan, read by the usual rules
        estimates, switched, said = switch_to_fixed(
            rollouts, mode, plan.tails, estimates, cleared_from
        )
        if switched is not None:
            steps = all_steps(engine.factual, estimates, resamplable, cleared_from)
            named = commitment(steps, resamplable)
            needed, calls = _needed(steps, named.open_steps, searched, rollouts)
            root, notes = read_off(steps, resamplable, mode), []
        notes.append(said)
    before = root.cleared_to if root is not None else None
    notes = _notes(steps, resamplable, searched, rollouts, mode, before) + notes
    return Localisation(
        steps,
        named.step,
        named.bracket,
        needed,
        rollouts.outcomes,
        tuple(searched.tests),
        calls,
        root,
        tuple(notes),
        switched,
    )


def _still_cleared(searched: Searched, resamplable: Sequence[int]) -> int | None:
    """Where the failure rate fell between two plans the search ran, its assumption fails
    somewhere between them, and no joint "no effect" that spans them stands. One that lies wholly
    after them still does (it needs the assumption only over its own steps, which no plan the
    search ran contradicts): the earliest such position, from which the scan takes over, going
    back over the bracket the fall left open; None when there is none (the scan starts at the
    end)."""
    assert searched.falling is not None
    after = searched.falling.later
    positions = [
        resamplable.index(t.start)
        for t in searched.tests
        if t.decision == "no effect" and t.start >= after
    ]
    return min(positions) if positions else None


def _scan(rollouts: Rollouts, start: int, mode: Mode, plan: Schedule) -> dict[int, StepAttribution]:
    """Steps estimated one by one from position ``start`` back, until one is shown to matter (one
    shown to lower the failure rate is decided, and the scan goes on past it), or one stays
    undecided at the most rollouts per plan: while it is open no earlier step can be
    named, so estimating them would buy nothing but a narrower bracket, at the highest prices."""
    resamplable = rollouts.resamplable
    estimates: dict[int, StepAttribution] = {}
    for position in reversed(range(start + 1)):
        found = estimate(rollouts, plan, mode, position)
        if found is not None:
            estimates[resamplable[position]] = found
        if rollouts.out_of_budget or found is None or not found.shown_not_to_matter:
            break
    return estimates


def _needed(
    steps: tuple[StepAttribution, ...],
    open_steps: Sequence[int],
    searched: Searched,
    rollouts: Rollouts,
) -> tuple[int | None, int | None]:
    """Rollouts per plan that might settle the latest open question (an undecided step, else the
    search's last question when it stayed open), and the calls they would add; (None, None) with
    no ``open_steps`` (the commitment named, or no step holds it)."""
    if not open_steps:
        return None, None
    n_steps = len(rollouts.engine.factual.steps)
    undecided = [i for i in open_steps if steps[i].attribution is not None]
    if undecided:
        step = steps[undecided[-1]]
        if not (step.no_effect_interval and step.ablated and step.no_effect_tail):
            return None, None
        position = rollouts.resamplable.index(step.index)
        plans = [kept_plan(n_steps, rollouts.resamplable, position)]
        plans.append(Plan.ablate_from(n_steps, step.index))
        compared = (step.no_effect_interval, step.attribution or 0.0, step.no_effect_tail)
    elif searched.stop in (Stop.UNDECIDED, Stop.BUDGET) and searched.tests:
        c: Comparison = searched.tests[-1].comparison
        plans = [
            Plan.ablate_from(n_steps, n_steps),
            Plan.ablate_from(n_steps, searched.tests[-1].start),
        ]
        compared = (c.no_effect_interval, c.effect, c.no_effect_tail)
    else:
        return None, None
    (low, high), effect, tail = compared
    config = rollouts.config
    floor = decisive_rollouts(config.margin, tail)
    ran = len(rollouts.outcomes.get(plans[1], []))
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


def _notes(
    steps: tuple[StepAttribution, ...],
    resamplable: Sequence[int],
    searched: Searched,
    rollouts: Rollouts,
    mode: Mode,
    root_cleared: int | None = None,
) -> list[str]:
    """What a person should know about what the search and the scan left out; the steps before
    ``root_cleared`` were cleared together by the root cause's search from the start."""
    notes = []
    if searched.stop is Stop.FALLS and searched.falling is not None:
        a, b = searched.falling
        still = [i for i in resamplable if steps[i].cleared_by is not None]
        kept = (
            f"only the steps from step {still[0]} on, after both, stay cleared together; the "
            "steps before them were estimated one by one from there back"
            if still
            else "so no steps were cleared together: each was estimated from the end"
        )
        notes.append(
            f"adaptive: the failure rate {'fell' if mode is Mode.FAILURE else 'rose'} as more of "
            f"the record was kept (resampling from step {a} against from step {b}), which the "
            f"search assumes never happens: {kept}"
        )
    if searched.stop is Stop.DONE and searched.hi == 0:
        notes.append(
            "adaptive: resampling every resamplable step together left the failure rate as the "
            "record's, which clears no step alone (one can matter alone where they do nothing "
            "together, if another undid it): each was tested alone, from the end"
        )
    cleared = [i for i in resamplable if steps[i].cleared_by is not None]
    if cleared:
        notes.append(
            f"adaptive: {_which(cleared)} shown to have no effect together (all resampled at "
            "once against the record), not one by one"
        )
    if root_cleared is not None:
        # those with estimates of their own were shown alone, before a lucky step
        together = [i for i in resamplable if i < root_cleared and steps[i].attribution is None]
        notes.append(
            f"root cause: {_which(together)} shown to have no effect together (all kept against "
            "all resampled, by the search from the start), not one by one"
        )
    lowered = [i for i in resamplable if steps[i].lowered]
    if lowered:
        rate = "failure" if mode is Mode.FAILURE else "success"
        notes.append(
            f"adaptive: {_which(lowered)} shown to have lowered the {rate} rate by more than "
            f"±{rollouts.config.margin:g} (a lucky record): decided, and no culprit"
        )
    unseen = [
        i
        for i in resamplable
        if steps[i].attribution is None
        and steps[i].cleared_by is None
        and not (root_cleared is not None and i < root_cleared)
    ]
    undecided = [s.index for s in steps if s.attribution is not None and not s.decided]
    if unseen:
        if rollouts.out_of_budget:
            why = f"the budget of {_budget(rollouts.config)} was reached"
        elif rollouts.switched:
            why = "the fixed strategy's cost was reached"
        elif searched.stop is Stop.UNDECIDED:
            why = "the search stopped at a question it could not settle"
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
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    text = ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
    return f"step {text} was" if len(indices) == 1 else f"steps {text} were"


def _budget(config: AttributionConfig) -> str:
    return budget_words(config.budget or 0, config.budget_unit)
