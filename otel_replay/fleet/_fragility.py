"""Fragility across runs: the sweeps of many runs added up by step (kind and name) and fault.

Runs are matched by what a step is, not where it is: ``list_deploys`` is one row whatever its
index in each run. For each (step, fault) and each side of the record (passing runs, failing runs),
a run counts once (its first such step, when it holds several): ``flipped`` when that cell's verdict
is not its record's (a fault that breaks a passing run, one that saves a failing run); ``decided``
when the cell's interval decided at all. The share of runs it flips has a Wilson 95 % interval
over the runs swept (a share no decision reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_replay.attribution import WILSON, CellVerdict, SweepResult, wilson

#: How a sentence says a built-in fault.
_DOING = {
    "error": "failing",
    "timeout": "timing out",
    "empty": "returning empty",
    "truncate": "returning truncated",
}


@dataclass(frozen=True, slots=True)
class FragilityRow:
    """One (step kind, step name, fault) over runs of one side (``passed``): of ``runs`` runs
    holding such a step, ``flipped`` had their outcome flipped by the fault, ``undecided`` had a
    cell whose interval did not decide."""

    kind: str
    name: str
    fault: str
    passed: bool
    runs: int
    flipped: int
    undecided: int
    low: float
    high: float
    interval_method: str = WILSON

    @property
    def share(self) -> float:
        return self.flipped / self.runs if self.runs else 0.0

    def sentence(self) -> str:
        """``list_deploys returning empty breaks 83 % of passing runs (5 of 6; …)``."""
        verb = "breaks" if self.passed else "saves"
        side = "passing" if self.passed else "failing"
        doing = _DOING.get(self.fault, f"with fault {self.fault}")
        return (
            f"{self.name} {doing} {verb} {self.share:.0%} of {side} runs "
            f"({self.flipped} of {self.runs}; 95 % interval {self.low:.0%}–{self.high:.0%})"
        )


def fragility(results: Sequence[SweepResult]) -> list[FragilityRow]:
    """The rows of ``results`` (module docstring), the most flipping first."""
    tally: dict[tuple[str, str, str, bool], list[int]] = {}
    for result in results:
        names = {s.index: (s.kind, s.name) for s in result.steps}
        wrong = CellVerdict.FAILS if result.passed else CellVerdict.PASSES
        seen: set[tuple[str, str, str]] = set()
        for cell in result.cells:
            kind, name = names[cell.step]
            if (kind, name, cell.fault) in seen:
                continue
            seen.add((kind, name, cell.fault))
            counts = tally.setdefault((kind, name, cell.fault, result.passed), [0, 0, 0])
            counts[0] += 1
            counts[1] += cell.verdict is wrong
            counts[2] += cell.verdict is CellVerdict.UNDECIDED
    rows = [
        FragilityRow(kind, name, fault, passed, runs, flipped, undecided, *wilson(flipped, runs))
        for (kind, name, fault, passed), (runs, flipped, undecided) in tally.items()
    ]
    return sorted(rows, key=lambda r: (not r.passed, -r.share, -r.runs, r.name, r.fault))
