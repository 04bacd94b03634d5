"""Runs checked for replayability: what ``agent-replay lint`` runs, on trace files (nothing
imported) or on runs the store holds.

Each file is read by the importers' own readers (`read_path`), so a file is judged as ``import``
would store it; a stored run is read back whole from the store. Each run gets
`otel_replay.replayable.replayability`'s verdict, its reasons computed again from the run (the
store's row keeps only the verdict), and, for each capture gap, the setting of the instrumentation
that wrote the step's span that closes it (`otel_replay.importers._capture`). Nothing is written
anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from otel_replay.errors import NotFoundError
from otel_replay.importers._capture import closing, setting
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._read import read_path
from otel_replay.importers._sniff import Format
from otel_replay.model import Trajectory
from otel_replay.replayable import Replayability, ReplayabilityVerdict, replayability
from otel_replay.store import Store


@dataclass(frozen=True, slots=True)
class LintedRun:
    """One run, as `lint_file` or `lint_stored` judged it: ``path`` the file it was read from,
    None for a run read from the store."""

    path: Path | None
    trajectory_id: str
    n_steps: int
    replayability: Replayability
    #: For each reason, in order: the instrumentation that wrote its step and the setting of it
    #: that closes the gap, or None.
    settings: tuple[tuple[str, str] | None, ...] = ()

    def closed_by(self) -> dict[tuple[str, str], list[int]]:
        """Each distinct (instrumentation, setting) with the steps whose gaps it closes."""
        found: dict[tuple[str, str], list[int]] = {}
        for reason, named in zip(self.replayability.reasons, self.settings, strict=False):
            if named is not None and reason.step is not None:
                steps = found.setdefault(named, [])
                if reason.step not in steps:
                    steps.append(reason.step)
        return found

    def fails(self, fail_on: ReplayabilityVerdict) -> bool:
        """Whether this run fails a gate that fails ``fail_on`` runs (``partial``: those and the
        not-replayable ones)."""
        verdict = self.replayability.verdict
        if fail_on is ReplayabilityVerdict.PARTIAL:
            return verdict is not ReplayabilityVerdict.REPLAYABLE
        return verdict is ReplayabilityVerdict.NOT_REPLAYABLE

    def to_record(self) -> dict[str, Any]:
        """What ``lint --json`` prints of the run (``path`` null and ``stored`` true for a stored
        run)."""
        record = {
            "path": None if self.path is None else str(self.path),
            "stored": self.path is None,
            "trajectory_id": self.trajectory_id,
            "steps": self.n_steps,
            **self.replayability.to_record(),
        }
        for reason, named in zip(record["reasons"], self.settings, strict=False):
            reason["instrumentation"], reason["setting"] = named or (None, None)
        return record


def _linted(run: Trajectory, path: Path | None) -> LintedRun:
    verdict = replayability(run)
    settings: list[tuple[str, str] | None] = []
    for reason in verdict.reasons:
        capture = closing(run.metadata, reason.step, reason.gap)
        settings.append(None if capture is None else (capture.name, setting(capture, reason.gap)))
    return LintedRun(path, run.id, len(run.steps), verdict, tuple(settings))


def lint_file(
    path: Path, fmt: Format = Format.AUTO, options: ReadOptions | None = None
) -> Iterator[LintedRun]:
    """Each run of ``path`` with its replayability, as the file is read (a file that cannot be
    read raises its `TraceFormatError`, as `read_path` does)."""
    for run in read_path(path, fmt, options):
        yield _linted(run, path)


def lint_stored(
    store: Store, ids: Iterable[str] = (), where: str | None = None
) -> Iterator[LintedRun]:
    """The stored runs named by ``ids`` (each an id or a unique prefix), then those ``where``
    admits (the filter language of ``list --where``, oldest first), each once, with their
    replayability. An id no run has raises `NotFoundError`, as does a prefix that names several;
    a filter that admits none yields none."""
    seen: set[str] = set()
    chosen = [store.resolve(run_id) for run_id in ids]
    if where is not None:
        chosen += [summary.id for summary in store.runs(where, "oldest")]
    for run_id in chosen:
        if run_id in seen:
            continue
        seen.add(run_id)
        try:
            run = store.get(run_id)
        except NotFoundError:  # deleted since it was listed
            continue
        yield _linted(run, None)
