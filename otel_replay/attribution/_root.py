"""The root cause: the earliest step that matters, beside the Point of Commitment (the latest).

The Point of Commitment is where the failure became inevitable, the latest step shown to matter.
The question a person asks next ("and why not the error before it?") has its answer at the other
end: the **root cause** is the earliest resamplable step shown to matter, every earlier one shown
to have no effect. Who&When's label, the earliest step whose correction turns the failure into a
success, is this one. Its tests are the Point of Commitment's, read from the other end; the report
gives how often resampling from it on turns the outcome around (`RootCause.saves`).

The fixed strategy estimates every step, so the root cause is read off its estimates. The
sequential strategies have not estimated the steps before the Point of Commitment (that is what
made them cheap), so with ``AttributionConfig.root_cause`` they look for it, and say what it cost:

* on long runs, the same search as the Point of Commitment's from the other end (`_search`):
  questions about whole **prefixes**, keeping the resamplable steps before position p as recorded
  against resampling them all, galloping from the start (1, 2, 4, … steps kept) until a prefix is
  shown to matter, then bisecting; a prefix shown to have no effect clears its steps together under
  the search's assumption (the failure rate never falls as more of the record is kept), checked
  on the plans it ran, as for suffixes;
* then a scan forward, step by step, from where the prefixes stopped mattering, to the first step
  shown to matter alone.

Its tests are counted in the error's split from the start (`_adaptive`), so the stated bound
covers the Point of Commitment and the root cause together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._contrastive import compare, estimate_step, kept_plan
from otel_replay.attribution._engine import Outcome
from otel_replay.attribution._results import Comparison, Mode, StepAttribution
from otel_replay.attribution._search import Fall, falling, questions
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
    *,
    searching: bool,
) -> Sought:
    """Estimate what the root cause needs, into ``estimates``: the prefix search (when
    ``searching``), then the scan forward from where it stopped up to position ``latest`` (the
    Point of Commitment's, or the latest step shown to matter).

    A step the scan shows to have lowered the failure rate (a lucky record) breaks the search's
    assumption only there: the search starts again after it, over the steps up to ``latest``,
    keeping everything up to the lucky step, with what is left of its questions (at most
    `_search.questions` in all, the number the error's split counts)."""
    notes: list[str] = []
    start, cleared = 0, []
    if rollouts.switched:  # the cost ceiling: the fixed plan answers instead (`_ceiling`)
        return Sought()
    allowed = questions(len(rollouts.resamplable))
    if searching:
        start, note, allowed = _prefixes(rollouts, plan, mode, latest, 0, allowed)
        cleared += [(0, start)] if start > 0 else []
        if note:
            notes.append(note)
    resamplable = rollouts.resamplable
    position = start
    while position <= latest:
        index = resamplable[position]
        found = estimates.get(index)
        if found is None:
            found = estimate(rollouts, plan, mode, position)
            if found is None:
                break
            estimates[index] = found
        if rollouts.out_of_budget or found.significant or not found.shown_not_to_matter:
            break
        position += 1
        if searching and found.lowered and allowed > 0 and position < latest:
            resumed, note, allowed = _prefixes(rollouts, plan, mode, latest, position, allowed)
            cleared += [(position, resumed)] if resumed > position else []
            position = resumed
            if note:
                notes.append(note)
    return Sought(tuple(cleared), tuple(notes))


def _prefixes(
    rollouts: Rollouts, plan: Schedule, mode: Mode, latest: int, first: int, allowed: int
) -> tuple[int, str, int]:
    """Gallop from position ``first``, then bisect, over prefixes (module docstring), keeping every
    step before ``first`` throughout: the position ``lo`` such that the steps from ``first`` to
    before it together have no effect and those up to it matter, a note when the search stopped
    short (``first``: the scan starts there), and how many of the ``allowed`` questions are left
    (a question past them is not asked: the search stops there, as at an open one)."""
    n_steps = len(rollouts.engine.factual.steps)
    resamplable = rollouts.resamplable
    nothing_kept = Plan.ablate_from(n_steps, resamplable[first])
    asked: dict[int, Comparison] = {}
    left = allowed
    fell: list[Fall] = []

    def ask(position: int) -> str:
        nonlocal left
        if left <= 0:
            return "spent"
        left -= 1

        def judge(kept: list[Outcome], ablated: list[Outcome], exact: bool) -> Comparison:
            return compare(
                kept, ablated, kept_exact=False, mode=mode, config=rollouts.config, tails=plan.tails
            )

        kept = Plan.ablate_from(n_steps, resamplable[position])
        answer = rollouts.decide(
            plan.looks, kept, nothing_kept, judge, lambda c: c.significant or c.no_effect
        )
        if rollouts.switched:
            return "ceiling"
        if answer is None:
            return "budget"
        asked[position] = answer
        points = [(resamplable[p], c.kept) for p, c in asked.items()]
        fall = falling(points, mode, plan.tails.matters)
        if fall is not None:
            fell.append(fall)
            return "falls"
        return "matters" if answer.significant else "no effect" if answer.no_effect else "open"

    lo, hi, stride = first, latest + 1, 1
    while lo + stride < hi:  # the gallop
        decision = ask(lo + stride)
        if decision == "no effect":
            lo, stride = lo + stride, 2 * stride
        elif decision == "matters":
            hi = lo + stride
            break
        else:
            return (
                *_stopped(
                    decision, _standing(lo, fell, asked, first, resamplable), first, resamplable
                ),
                left,
            )
    while hi - lo > 1:  # the bisection
        middle = (lo + hi) // 2
        decision = ask(middle)
        if decision == "no effect":
            lo = middle
        elif decision == "matters":
            hi = middle
        else:
            return (
                *_stopped(
                    decision, _standing(lo, fell, asked, first, resamplable), first, resamplable
                ),
                left,
            )
    return lo, "", left


def _standing(
    lo: int,
    fell: list[Fall],
    asked: dict[int, Comparison],
    first: int,
    resamplable: Sequence[int],
) -> int:
    """Where a fall leaves the clearings: one wholly before it (its steps all come before the
    plans that fell apart) needs the assumption only over its own steps, which no plan the search
    ran contradicts, so it still stands, as a suffix's wholly after one does
    (`_adaptive._still_cleared`); the latest such position, else ``first``."""
    if not fell:
        return lo
    before = fell[0].earlier  # a step's index, as the plans are named
    standing = [p for p, c in asked.items() if c.no_effect and p <= lo and resamplable[p] <= before]
    return max(standing, default=first)


def _stopped(decision: str, lo: int, first: int, resamplable: Sequence[int]) -> tuple[int, str]:
    where = "start of the record" if first == 0 else f"record from step {resamplable[first]} on"
    if decision == "falls":
        return lo, (
            f"root cause: the failure rate fell as more of the {where} was kept, which the "
            "search assumes never happens: the steps were estimated one by one from "
            + ("the first" if lo == 0 else f"step {resamplable[lo]}")
        )
    reason = {
        "budget": "the budget was reached",
        "spent": "its share of the questions was spent",
        "ceiling": "the fixed strategy's cost was reached",
    }.get(decision, "a question stayed open")
    search = "from the start" if first == 0 else f"from step {resamplable[first]}"
    return lo, f"root cause: the search {search} stopped at step {resamplable[lo]} ({reason})"
