"""The steps of a trace agent-replay exported (``export --format otlp-json|otlp-proto``).

Each step's span carries, beside the conventions other tools read, the step's own record as JSON
in `RECORD_ATTRIBUTE` (``{"index", "kind", "name", "inputs", "output", "status", "error",
"resamplable"}``,
the native JSONL step's fields but its times and ids, which are the span's, unless the step was
rebuilt from the conversation when first imported: `REBUILT_ATTRIBUTE`). A trace whose spans
carry it is read from it: each such span is one step, as it was stored, in the order of the
records' ``index`` (then of their times), and no rule that reads steps out of other traces' shapes
applies (they made these steps the first time). A record that does not read as a step's is an
error naming the span.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import orjson

from otel_replay.errors import TraceFormatError
from otel_replay.importers._spans import SpanRecord
from otel_replay.model import Step

#: The attribute of a step's span that holds the step's record (JSON text).
RECORD_ATTRIBUTE = "agent_replay.record"

#: The attribute (true) of the span written for a step the first import rebuilt from the
#: conversation: it had no span of its own, and has none again (no span id, no times).
REBUILT_ATTRIBUTE = "agent_replay.rebuilt"


def exported_steps(spans: Sequence[SpanRecord]) -> list[tuple[Step, int]] | None:
    """The steps of a trace agent-replay exported, each with its span's position in ``spans``;
    None when no span carries a step's record."""
    carrying = [i for i, span in enumerate(spans) if RECORD_ATTRIBUTE in span.attributes]
    if not carrying:
        return None
    steps = [(_step(spans[i]), i) for i in carrying]
    steps.sort(key=lambda found: (found[0].index, spans[found[1]].start_time_unix_nano, found[1]))
    return steps


def rebuilt_positions(spans: Sequence[SpanRecord], steps: Sequence[tuple[Step, int]]) -> list[int]:
    """The positions among ``steps`` of those the first import rebuilt (`REBUILT_ATTRIBUTE`)."""
    return [k for k, (_, i) in enumerate(steps) if spans[i].attributes.get(REBUILT_ATTRIBUTE)]


def _step(span: SpanRecord) -> Step:
    where = f"span {span.name!r} ({span.span_id or 'no id'}): {RECORD_ATTRIBUTE}"
    raw = span.attributes[RECORD_ATTRIBUTE]
    try:
        record = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        raise TraceFormatError(f"{where} is not JSON") from None
    step = Step.from_record(record, where)
    if span.attributes.get(REBUILT_ATTRIBUTE) is True:  # no span of its own, as first imported
        return step
    return dataclasses.replace(
        step,
        start_time_unix_nano=span.start_time_unix_nano or None,
        end_time_unix_nano=span.end_time_unix_nano or None,
        span_id=span.span_id or None,
        parent_span_id=span.parent_span_id or None,
    )
