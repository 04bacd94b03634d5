"""The Point of Commitment: the one rule that names it, whatever strategy ran the tests.

The Point of Commitment is the latest resamplable step shown to matter, named only when every
later resamplable step is shown to have no effect (alone, or cleared by the adaptive walk's band)
or to have lowered the failure rate beyond the margin (a lucky record: decided, and no
culprit). Where a later step is neither shown to matter nor shown to have no effect, the verdict is
inconclusive and the commitment lies between the latest step shown to matter and the latest open
step; where no step is shown to matter, between the first and the last open step. Where no step is
open and none matters, there is neither: the failure depends on no resampled step.

The fixed strategy (`_contrastive.localise`) and the walk and scan (`_adaptive.adaptive`) both
read their estimates through `commitment`; each then says, in its own terms, how many rollouts might
settle a bracket it left open (a strategy's cost, not part of the rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._results import StepAttribution


@dataclass(frozen=True, slots=True)
class Commitment:
    """What the tests say of where the failure became inevitable.

    Attributes:
        step: the Point of Commitment, when the tests name it; else None.
        bracket: when they do not, the first and last step the commitment may be (None too when
            every resamplable step is shown to have no effect).
        latest_matters: the latest resamplable step shown to matter (the Point of Commitment, or
            the start of its bracket), None when no step is.
        open_steps: the resamplable steps in the bracket neither shown to matter nor shown to have
            no effect, in order: what a strategy must settle to name the step.
    """

    step: int | None
    bracket: tuple[int, int] | None = None
    latest_matters: int | None = None
    open_steps: tuple[int, ...] = ()

    @property
    def located(self) -> bool:
        """Whether the tests name the Point of Commitment."""
        return self.step is not None


def commitment(steps: Sequence[StepAttribution], resamplable: Sequence[int]) -> Commitment:
    """The rule (module docstring) over ``steps`` (every step of the run, by index): a step counts
    as shown not to hold it when its own test says it has no effect or lowered the rate, or when
    it was cleared without a test of its own (``cleared``: the band); a resamplable step never estimated is open."""
    shown_none = {i for i in resamplable if steps[i].shown_not_to_matter or steps[i].cleared}
    matters = [i for i in resamplable if steps[i].significant]
    open_steps = [i for i in resamplable if i not in shown_none and not steps[i].significant]
    if matters:
        latest = matters[-1]
        later = tuple(i for i in open_steps if i > latest)
        if not later:
            return Commitment(latest, None, latest)
        return Commitment(None, (latest, later[-1]), latest, later)
    if not open_steps:
        return Commitment(None)  # every resamplable step shown to have no effect (or none is)
    return Commitment(None, (open_steps[0], open_steps[-1]), None, tuple(open_steps))
