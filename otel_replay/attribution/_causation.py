"""Causes as the estimates show them: the root cause (`read_off`; `_root` finds what it needs),
and Pearl's probabilities of causation for one step, as far as rollouts identify them.

Write ``y`` for the outcome the record had (a failure, or in credit mode a success), ``x`` for the
step kept as recorded and ``x'`` for it resampled. A step's two plans estimate ``P(y_x)`` (the
rollouts that kept it) and ``P(y_x')`` (those that resampled it); the recorded output was itself a
draw of the step, so it is exogenous, and Tian and Pearl's bounds apply:

* **necessity** ``PN = P(y'_x' | x, y)``: given the run went as recorded, the chance that resampling
  the step would have turned the outcome around (saved the failed run). At least
  ``1 − P(y_x')/P(y_x)`` and at most ``(1 − P(y_x'))/P(y_x)``.
* **sufficiency** ``PS = P(y_x | x', y')``: given a rollout that resampled the step and escaped the
  outcome, the chance that keeping the step would have brought it about. At least
  ``1 − (1 − P(y_x))/(1 − P(y_x'))`` and at most ``P(y_x)/(1 − P(y_x'))``.

Both lower bounds are the values themselves when resampling the step never brings about the
outcome in a rollout that keeping it would have spared (monotonicity), which is what a step
"committing" a run means; the report gives them as the estimates, with the bounds beside them for
a reader who doubts the assumption. The 95 % interval of each estimate comes from exact intervals
for the two rates at 97.5 % each (split over a sequential strategy's looks): both hold together at
least 95 % of the time, and each estimate is monotone in the two rates, so its interval's ends are
the estimate at the rates' ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution._results import Mode, Proportion, RootCause, Share, StepAttribution
from otel_replay.attribution._stats import clopper_pearson


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _outcome_rate(p: Proportion, mode: Mode, looks: int) -> tuple[float, float, float]:
    """The rate of the recorded outcome in a plan, and its ends at 97.5 % each (for two at once)."""
    if p.exact:
        low = high = p.value
    else:
        low, high = clopper_pearson(p.failures, p.n, 0.0125 / max(1, looks))
    if mode is Mode.FAILURE:
        return p.value, low, high
    return 1.0 - p.value, 1.0 - high, 1.0 - low


@dataclass(frozen=True, slots=True)
class Causation:
    """A step's probabilities of causation (module docstring); either is None where it is
    undefined (no rollout had the outcome with the step kept, or every rollout had it with the
    step resampled) or nothing ran."""

    necessity: Share | None
    sufficiency: Share | None


def probabilities_of_causation(
    kept: Proportion, ablated: Proportion, mode: Mode, looks: int = 1
) -> Causation:
    """The necessity and sufficiency of the step whose plans are ``kept`` and ``ablated``."""
    if kept.n == 0 or ablated.n == 0:
        return Causation(None, None)
    k, k_low, k_high = _outcome_rate(kept, mode, looks)
    a, a_low, a_high = _outcome_rate(ablated, mode, looks)
    necessity = None
    if k > 0:
        necessity = Share(
            value=_clip(1 - a / k),
            low=_clip(1 - a_high / k_low) if k_low > 0 else 0.0,
            high=_clip(1 - a_low / k_high),
            lower=_clip(1 - a / k),
            upper=_clip((1 - a) / k),
        )
    sufficiency = None
    if a < 1:
        sufficiency = Share(
            value=_clip(1 - (1 - k) / (1 - a)),
            low=_clip(1 - (1 - k_low) / (1 - a_high)) if a_high < 1 else 0.0,
            high=_clip(1 - (1 - k_high) / (1 - a_low)),
            lower=_clip(1 - (1 - k) / (1 - a)),
            upper=_clip(k / (1 - a)),
        )
    return Causation(necessity, sufficiency)


def read_off(
    steps: Sequence[StepAttribution],
    resamplable: Sequence[int],
    mode: Mode,
    *,
    cleared: Sequence[tuple[int, int]] = (),
    calls: int = 0,
) -> RootCause | None:
    """The root cause as the estimates show it: the earliest step shown to matter, once every
    earlier resamplable step is shown to have no effect (alone, cleared with the later ones, or
    in a run ``cleared`` by the prefix search, each (first, end) with the end left out), or shown to lower the rate (named in
    ``RootCause.lowered``). None when no step matters."""
    matters = [i for i in resamplable if steps[i].significant]
    if not matters:
        return None
    cleared_to = cleared[-1][1] if cleared else None
    first = matters[0]
    shown_none = [
        i
        for i in resamplable
        if steps[i].shown_not_to_matter or steps[i].cleared or any(a <= i < b for a, b in cleared)
    ]
    open_steps = [i for i in resamplable if i < first and i not in shown_none]
    if open_steps:
        undecided = [i for i in open_steps if steps[i].attribution is not None]
        why = (
            f"step {undecided[0]} is neither shown to matter nor shown not to"
            if undecided
            else f"the steps before step {first} were not estimated"
        )
        return RootCause(
            None,
            True,
            bracket=(open_steps[0], first),
            calls=calls,
            cleared_to=cleared_to,
            why=why,
            cleared=tuple(cleared),
        )
    ablated = steps[first].ablated
    return RootCause(
        first,
        True,
        saves=None if ablated is None else turned(ablated, mode),
        calls=calls,
        cleared_to=cleared_to,
        cleared=tuple(cleared),
        lowered=tuple(i for i in resamplable if i < first and steps[i].lowered),
    )


def turned(ablated: Proportion, mode: Mode) -> Proportion:
    """How often the rollouts that resampled from a step on turned the recorded outcome around:
    a failed run's successes (a passing run's failures, in credit mode)."""
    if mode is Mode.CREDIT:
        return ablated
    return Proportion(
        ablated.n - ablated.failures,
        ablated.n,
        1.0 - ablated.high,
        1.0 - ablated.low,
        exact=ablated.exact,
        left_out=ablated.left_out,
    )
