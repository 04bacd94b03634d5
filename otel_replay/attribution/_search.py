"""The adaptive search on the step index: which suffix of the run holds the commitment.

Each question compares two plans: the whole record kept, and every resamplable step from position
p on resampled (`SuffixTest`). Write ``F(p)`` for the failure rate of the second; a failed run's
failure rate rises as more of the record is kept, towards ``F(m)``, the record itself. If the
suffix from p is shown to matter, some step from p on matters, and the Point of Commitment (the
latest step that does) is there or later; that holds whatever the rates do. If it is shown to have
no effect (``F(m) − F(p)`` inside ±margin), the steps from p on have no effect one by one as well,
provided F does not fall between p and m: their single effects are then all at least zero and sum
to at most the margin. That proviso is the search's assumption. It holds for a failure that one
step (or several, jointly) committed to; it fails when resampling a later step rescues more often
than the record's own later steps did.

The search first *screens*, galloping from the end (positions m−1, m−2, m−4, … down to 0) with one
batch per question, until a suffix is shown to matter; against the record, which fails every time,
one rollout that passes shows it. What a screen does not show is no answer: it is only where to
look. Then it gallops back up from the suffix that matters (lo + 1, lo + 2, lo + 4, …, never past
the middle of what is left, nor past the suffixes the screen passed over) with full questions until
one is shown to have no effect, and again from the latest that matters, until the latest suffix
that matters and the earliest that does not are neighbours, at ``lo`` and ``lo + 1``. One "no
effect" from ``lo + 1`` on clears every later step at once. The order follows what questions cost:
a suffix that holds the culprit is shown to matter in the first batches, while one that does not
needs every rollout "no effect" takes (and, far from the end, resamples nearly the whole run), so
the search asks the expensive kind as rarely as it can: once, just after the culprit, when the
culprit is a few steps from where the screen found it.

The assumption is checked on every plan the search runs: a suffix shown to lower the failure rate,
or two of the plans with failure rates falling from one to the next beyond their intervals, stop
the search, and the scan then estimates each step from the end instead, as if the search had never
run (its rollouts are reused). The scan also takes over where the search ends well: from ``lo``
back, with the steps from ``lo + 1`` on shown to have no effect jointly (`_adaptive`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from statistics import NormalDist
from typing import NamedTuple

from otel_replay.attribution._contrastive import compare
from otel_replay.attribution._engine import Outcome
from otel_replay.attribution._results import Comparison, Mode, Proportion, SuffixTest
from otel_replay.attribution._sequential import Rollouts, Schedule
from otel_replay.attribution._stats import wilson
from otel_replay.replay import Plan


def questions(m: int) -> int:
    """The most questions the search asks over ``m`` resamplable steps, ``L = ⌈log2 m⌉``: the
    screen at most L + 1 and one more about the whole run; then gallops up, each starting again
    after a suffix shown to have no effect with at most half of what was left, each at most 2L + 1
    questions long; ``L² + 2L + 2`` in all. The search stops there whatever it has shown (the
    error's split counts this many), which the gallops never reach on a run whose suffixes do not
    flip between mattering and not."""
    bits = math.ceil(math.log2(max(2, m)))
    return bits * bits + 2 * bits + 2


class Stop(str, Enum):
    """Why the search stopped."""

    DONE = "done"  # the latest suffix that matters and the earliest that does not are neighbours
    FALLS = "falls"  # the failure rate fell between plans: the assumption does not hold
    UNDECIDED = "undecided"  # a question stayed open at the most rollouts per plan
    BUDGET = "budget"  # the next batch would have passed the budget
    SKIPPED = "skipped"  # too few steps to be worth a search


class Fall(NamedTuple):
    """Two plans whose failure rates fall from the one to the other (rise, in credit mode): the
    one resampling from step ``earlier`` on and the one resampling from step ``later`` on, which
    keeps more of the record."""

    earlier: int
    later: int


@dataclass
class Searched:
    """What the search settled: the suffixes from position ``lo`` on matter (-1: none shown to),
    those from ``hi`` on have no effect (m: none shown not to); the questions in the order asked."""

    lo: int
    hi: int
    stop: Stop = Stop.DONE
    tests: list[SuffixTest] = field(default_factory=list)
    falling: Fall | None = None  # the steps between whose plans the failure rate fell


def search(rollouts: Rollouts, mode: Mode, plan: Schedule) -> Searched:
    """Screen galloping from the end, then gallop up (module docstring)."""
    m = len(rollouts.resamplable)
    found = Searched(-1, m)
    screened, stride = m, 1
    while found.stop is Stop.DONE:  # the screen
        position = max(0, m - stride)
        decision = _ask(rollouts, mode, plan, position, found, screen=True)
        if decision == "matters":
            found.lo = position
            break
        if found.stop is not Stop.DONE:
            return found
        screened = position
        if position == 0:  # nothing passed: ask about the whole run in full
            decision = _ask(rollouts, mode, plan, 0, found)
            if decision == "no effect":
                found.hi = 0
            elif decision == "matters":
                found.lo, screened = 0, m
            break
        stride *= 2
    stride = 1
    while found.stop is Stop.DONE and found.hi - found.lo > 1:  # the gallops up
        if len(found.tests) >= questions(m):
            found.stop = Stop.UNDECIDED
            break
        # up to the earliest suffix the screen passed over, then on to the earliest shown not to
        limit = min(found.hi, screened) if found.lo < screened else found.hi
        stride = max(1, min(stride, (limit - found.lo) // 2))
        position = found.lo + stride
        decision = _ask(rollouts, mode, plan, position, found)
        if decision == "matters":
            found.lo, stride = position, 2 * stride
        elif decision == "no effect":
            found.hi, stride = position, 1  # start again from the suffix that matters
    return found


def _ask(
    rollouts: Rollouts,
    mode: Mode,
    plan: Schedule,
    position: int,
    found: Searched,
    *,
    screen: bool = False,
) -> str:
    """One question, asked sequentially (a ``screen`` at the first look only); its decision, with
    ``found.stop`` set when it ends the search (open, over budget, or the rates fall)."""
    engine, config = rollouts.engine, rollouts.config
    n_steps = len(engine.factual.steps)
    start = rollouts.resamplable[position]

    def judge(kept: list[Outcome], ablated: list[Outcome], exact: bool) -> Comparison:
        return compare(kept, ablated, kept_exact=exact, mode=mode, config=config, tails=plan.tails)

    answer = rollouts.decide(
        plan.looks[:1] if screen else plan.looks,
        Plan.ablate_from(n_steps, n_steps),
        Plan.ablate_from(n_steps, start),
        judge,
        lambda c: c.significant or c.no_effect or c.falls,
    )
    if answer is None:
        found.stop = Stop.BUDGET
        return "budget"
    test = SuffixTest(start, answer, screen=screen)
    found.tests.append(test)
    falling = _falling(found.tests, mode, plan.tails.matters)
    if test.decision == "falls" or falling is not None:
        found.stop = Stop.FALLS
        found.falling = falling or Fall(start, n_steps)
    elif test.decision == "undecided":
        found.stop = Stop.BUDGET if rollouts.out_of_budget else Stop.UNDECIDED
    elif test.decision == "passed over" and rollouts.out_of_budget:
        found.stop = Stop.BUDGET
    return test.decision


def _falling(tests: Sequence[SuffixTest], mode: Mode, tail: float) -> Fall | None:
    """Two of the suffix plans run, neighbours by position, whose failure rates fall from the
    earlier to the later (`falling`)."""
    return falling([(t.start, t.comparison.ablated) for t in tests], mode, tail)


def falling(points: Sequence[tuple[int, Proportion]], mode: Mode, tail: float) -> Fall | None:
    """Two plans, each resampling from the step it is paired with on, neighbours by that step,
    whose failure rates fall from the earlier to the later (rise, in credit mode) beyond their
    Wilson intervals at one-sided ``tail`` each: keeping more of the record lowered the failure
    rate, which the search assumes never happens. The first such pair of steps, or None."""
    z = NormalDist().inv_cdf(1 - tail)
    rates = sorted(points, key=lambda point: point[0])
    for (a, early), (b, late) in itertools.pairwise(rates):
        early_low, early_high = wilson(early.failures, early.n, z)
        late_low, late_high = wilson(late.failures, late.n, z)
        if (early_low > late_high) if mode is Mode.FAILURE else (early_high < late_low):
            return Fall(a, b)
    return None
