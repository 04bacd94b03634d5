"""Trace files checked for replayability without importing them: what ``agent-replay lint`` runs.

Each file is read by the importers' own readers (`read_path`), so a file is judged as ``import``
would store it, and each run it holds gets `otel_replay.replayable.replayability`'s verdict.
Nothing is written anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_replay.importers._options import ReadOptions
from otel_replay.importers._read import read_path
from otel_replay.importers._sniff import Format
from otel_replay.replayable import Replayability, ReplayabilityVerdict, replayability


@dataclass(frozen=True, slots=True)
class LintedRun:
    """One run of a trace file, as `lint_file` judged it."""

    path: Path
    trajectory_id: str
    n_steps: int
    replayability: Replayability

    def fails(self, fail_on: ReplayabilityVerdict) -> bool:
        """Whether this run fails a gate that fails ``fail_on`` runs (``partial``: those and the
        not-replayable ones)."""
        verdict = self.replayability.verdict
        if fail_on is ReplayabilityVerdict.PARTIAL:
            return verdict is not ReplayabilityVerdict.REPLAYABLE
        return verdict is ReplayabilityVerdict.NOT_REPLAYABLE

    def to_record(self) -> dict[str, Any]:
        """What ``lint --json`` prints of the run."""
        return {
            "path": str(self.path),
            "trajectory_id": self.trajectory_id,
            "steps": self.n_steps,
            **self.replayability.to_record(),
        }


def lint_file(
    path: Path, fmt: Format = Format.AUTO, options: ReadOptions | None = None
) -> Iterator[LintedRun]:
    """Each run of ``path`` with its replayability, as the file is read (a file that cannot be
    read raises its `TraceFormatError`, as `read_path` does)."""
    for run in read_path(path, fmt, options):
        yield LintedRun(path, run.id, len(run.steps), replayability(run))
