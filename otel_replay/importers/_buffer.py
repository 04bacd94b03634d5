"""Grouping spans by trace across records, and handing each trace over once it is complete.

A span id delivered twice in a trace is one span. Delivery is at least once, so the second copy is
usually the first again (counted, and kept once); a format that sends a span in parts (LangSmith
posts a run when it starts and patches it when it ends, and sends its feedback apart) delivers what
the first part lacked: a name, times, a parent, an error status, attributes and events the kept
span does not have are taken from the later part (`_fill`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from otel_replay.errors import TraceFormatError
from otel_replay.importers._assemble import assemble
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._spans import STATUS_UNSET, SpanRecord
from otel_replay.importers._storable import check_span
from otel_replay.model import Trajectory


class UntracedId:
    """The run id of a record's spans that carry no trace id: ``untraced-`` and the first 16 hex
    digits of the sha256 of the record's bytes. Computed when first asked for, since most records'
    spans all have trace ids and hashing every record's bytes cost a tenth of an import."""

    __slots__ = ("_data", "_id")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._id: str | None = None

    def __call__(self) -> str:
        if self._id is None:
            self._id = "untraced-" + hashlib.sha256(self._data).hexdigest()[:16]
            self._data = b""  # the record's bytes are not needed any more
        return self._id


class TraceBuffer:
    """Spans waiting for the rest of their trace. Spans with no trace id belong to the id their
    record gives (a fixed one, or the record's `UntracedId`)."""

    def __init__(self, options: ReadOptions, metadata: dict[str, Any]) -> None:
        self._options = options
        self._metadata = metadata
        self._traces: dict[str, list[SpanRecord]] = {}
        # Delivery is at least once: a span id seen twice in a trace is one span, kept once.
        self._seen: dict[str, dict[str, SpanRecord]] = {}
        self._duplicates: dict[str, int] = {}

    def add(
        self,
        span: SpanRecord,
        untraced_id: str | UntracedId,
        *,
        line: int | None = None,
        offset: int | None = None,
    ) -> str | None:
        """Buffer ``span``; return the trajectory id it was filed under (``untraced_id``, or what
        it computes, when the span has no trace id). A span holding what no run can keep (a token
        count beyond 64 bits: `check_span`) is invalid, located in the source the metadata
        names at ``line`` or ``offset``: raised, or skipped (None) when invalid spans are."""
        try:
            check_span(span)
        except TraceFormatError as exc:
            source = self._metadata.get("source")
            self._options.invalid(exc.located(path=source, line=line, offset=offset))
            return None
        key = span.trace_id or (untraced_id if isinstance(untraced_id, str) else untraced_id())
        bucket = self._traces.get(key)
        if bucket is None:
            bucket = self._traces[key] = []
            self._seen[key] = {}
        if span.span_id:
            seen = self._seen[key]
            kept = seen.get(span.span_id)
            if kept is not None:
                if not _fill(kept, span):
                    self._duplicates[key] = self._duplicates.get(key, 0) + 1
                return key
            seen[span.span_id] = span
        bucket.append(span)
        self._options.report.spans += 1
        return key

    def pop(self, trajectory_id: str) -> Trajectory:
        spans = self._traces.pop(trajectory_id)
        self._seen.pop(trajectory_id, None)
        duplicates = self._duplicates.pop(trajectory_id, 0)
        if duplicates:
            self._options.report.warnings.append(
                f"trace {trajectory_id}: {duplicates} span(s) delivered more than once were "
                "imported once"
            )
        return assemble(trajectory_id, spans, self._options, self._metadata)

    def drain(self) -> Iterator[Trajectory]:
        """Every buffered trace, in the order its first span arrived."""
        for key in list(self._traces):
            yield self.pop(key)


#: The fields a later delivery of a span gives the kept one when it has none (no text, zero).
_FILLED = (
    "name",
    "parent_span_id",
    "scope_name",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "kind",
)


def _fill(kept: SpanRecord, again: SpanRecord) -> bool:
    """Give ``kept`` what a later delivery of the same span has and it lacks; whether it lacked
    anything (a copy of the span adds nothing)."""
    added = False
    for name in _FILLED:
        if not getattr(kept, name) and getattr(again, name):
            setattr(kept, name, getattr(again, name))
            added = True
    if kept.status_code == STATUS_UNSET and again.status_code != STATUS_UNSET:
        kept.status_code, kept.status_message = again.status_code, again.status_message
        added = True
    for key, value in again.attributes.items():
        if key not in kept.attributes:
            kept.attributes[key] = value
            added = True
    for key, value in again.resource.items():
        if key not in kept.resource:
            kept.resource[key] = value
            added = True
    if not kept.events and again.events:
        kept.events = list(again.events)
        added = True
    return added
