"""What happens to a run arriving at the store: added, unchanged, merged or replaced.

`import` and the OTLP receiver both call `ingest`; the store below only writes what it is given. The
policy, in the order it is applied:

* **added** — no run with this id is stored.
* **unchanged** — the stored run has the same content (final hash, outcome, span tree: see
  `otel_replay.store.content_digest`), wherever and in whatever format it was read.
* **merged** — both were built from spans (OTLP): a trace id names one trace, so the arriving part
  joins the stored one (the Collector spreads a trace over rotated files and batches). Merging a part
  that is already in changes nothing and counts as unchanged.
* **unchanged** — the same steps and outcome in another dress (a recording exported as OTLP and
  imported again): the first, richer copy is kept (a recording knows its input and seed).
* **replaced** — anything else: the arriving run replaces the stored one.

A run scored once stored (``agent-replay score``, an attribution: its ``outcome_source`` is neither
``trace`` nor ``record``) keeps that outcome when the same steps arrive again without one: the
arriving run takes it (and its source) before the policy sees it, so the trace imported again is
unchanged, not a run whose outcome was forgotten.

With ``redact`` patterns (``import --redact``, ``serve --redact``), every string of an arriving run
is redacted before the policy sees it (`otel_replay.redaction.redact_run`: its hashes cover the
redacted content); a merged run is redacted with the patterns of both parts, and keeps them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from otel_replay.importers import built_from_spans, merge_partial
from otel_replay.model import Trajectory
from otel_replay.redaction import patterns_of, redact_run
from otel_replay.store import Store, TrajectorySummary, summarize

__all__ = ["IngestResult", "Ingested", "ingest", "ingest_one"]


class IngestResult(str, Enum):
    ADDED = "added"
    UNCHANGED = "unchanged"
    MERGED = "merged"  # another part of a trace already stored from another file or request
    REPLACED = "replaced"


@dataclass(frozen=True, slots=True)
class Ingested:
    """What became of one arriving run: the summary of what is stored now, and why."""

    summary: TrajectorySummary
    result: IngestResult


def ingest(
    store: Store, trajectories: Iterable[Trajectory], *, redact: Sequence[str] = ()
) -> list[Ingested]:
    """Apply the policy to every run, in one transaction: all of them, or (if anything raises, a
    reader's error included) none. Memory stays bounded by one run: summaries are returned.
    ``redact``: patterns applied to every run before it is stored (see the module's docstring)."""
    with store.transaction():
        return [ingest_one(store, trajectory, redact=redact) for trajectory in trajectories]


def ingest_one(store: Store, trajectory: Trajectory, *, redact: Sequence[str] = ()) -> Ingested:
    """Apply the policy to one run (inside `Store.transaction`), ``redact`` applied first."""
    trajectory = redact_run(trajectory, redact)
    stored = store.summary(trajectory.id)
    trajectory = _keeping_score(trajectory, stored)
    arriving = summarize(trajectory)
    if stored is None:
        return Ingested(store.put(trajectory), IngestResult.ADDED)
    if stored.content_digest == arriving.content_digest:
        return Ingested(arriving, IngestResult.UNCHANGED)
    if built_from_spans(stored.format) and built_from_spans(arriving.format):
        # either part's patterns cover the whole run (a part redacted alone may have met the
        # other's secrets unredacted)
        merged = merge_partial(store.get(trajectory.id), trajectory)
        merged = redact_run(merged, patterns_of(merged))
        summary = store.put(merged)
        unchanged = summary.content_digest == stored.content_digest
        return Ingested(summary, IngestResult.UNCHANGED if unchanged else IngestResult.MERGED)
    if (stored.final_hash, stored.outcome) == (arriving.final_hash, arriving.outcome):
        return Ingested(arriving, IngestResult.UNCHANGED)
    return Ingested(store.put(trajectory), IngestResult.REPLACED)


def _keeping_score(trajectory: Trajectory, stored: TrajectorySummary | None) -> Trajectory:
    """``trajectory`` with the outcome the stored run of the same steps was scored with, when it
    arrives without one (see the module's docstring)."""
    if (
        stored is None
        or trajectory.outcome is not None
        or stored.outcome is None
        or stored.outcome_source in (None, "trace", "record")
        or stored.final_hash != trajectory.final_hash
    ):
        return trajectory
    metadata = {**trajectory.metadata, "outcome_source": stored.outcome_source}
    return dataclasses.replace(trajectory, outcome=stored.outcome, metadata=metadata)
