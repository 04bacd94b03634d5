"""The band: clearing steps together without assuming anything about the steps in between.

Write ``F(p)`` for the failure rate with every resamplable step from position p on resampled, so
``F(m)`` is the record's (1 for a failed run in the trace walk) and step j's effect is
``F(j + 1) − F(j)``. Say position p is *in the band* when ``F(p) >= 1 − margin``.

**The lemma.** If positions j and j + 1 are both in the band, step j's effect lies inside ±margin:
both ends of the difference lie in ``[1 − margin, 1]``. Nothing is assumed about how F moves
between other positions; a lucky step and the step that undid it cannot hide inside the band,
because the dip between them takes F out of it at one of their ends.

**The test at one position.** Run ``ablate_from(p)`` ``r`` times and accept "in band" when every
rollout ends as the record did (fails, for a failed run). If in fact ``F(p) < 1 − margin``, all r
fail with chance below ``(1 − margin)^r``: r = `band_rollouts`, the fewest for which that is at
most the band's share of the error (34 for a margin of 0.1 and a share of 0.03).

**One share for every position.** A wrong verdict that rests on the band needs the latest step
whose effect is beyond the margin, j*, cleared by it, so the band accepted the end of j* that lies
below ``1 − margin`` (j* itself for a positive effect, j* + 1 for a negative one). That position
is fixed by the model, not by the data, and the test there reads only its own rollouts, which are
independent draws whatever common random numbers tie them to other plans. So the chance is at most
``(1 − margin)^r``, once, not once per position: the band needs no union over positions and no
assumption about where lucky and decisive steps sit. `tests/attribution/test_exact_error.py`
checks this sum on every boundary profile of a short run.

Credit mode mirrors it: "in band" there means every rollout succeeded, as the record did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from otel_replay.attribution._engine import Outcome
from otel_replay.attribution._results import Mode


def band_rollouts(margin: float, share: float) -> int:
    """The fewest rollouts r with ``(1 − margin)^r <= share``: with every one of them ending as
    the record did, a position whose rate is outside the band passes at most ``share`` of the
    time."""
    return max(1, math.ceil(math.log(share) / math.log1p(-margin) - 1e-9))


def band_error(margin: float, rollouts: int) -> float:
    """The most often the test at one position accepts a rate just outside the band."""
    return (1 - margin) ** rollouts


def in_band(outcomes: Sequence[Outcome], mode: Mode, rollouts: int) -> bool:
    """Whether the first ``rollouts`` of a plan all ended as the record did, and were all evidence
    (a rollout that could not be served, or whose agent crashed, says nothing about the rate, so
    the position is not cleared by the band: its step is tested alone)."""
    first = outcomes[:rollouts]
    failed = mode is Mode.FAILURE
    return len(first) == rollouts and all(o.counts and o.failed is failed for o in first)
