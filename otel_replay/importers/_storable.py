"""What a run keeps from a span as a number must fit where it goes.

A span's attribute values are checked by each reader as it decodes them (an integer beyond 64 bits,
a lone surrogate: `otel_replay.importers._values`). A few values are read into numbers only when
the run is built: a model call's token counts (`otel_replay.importers._usage`) and a recording's
seed. Those go back out as OTLP's ``intValue`` when the run is exported, and SQLite holds the same
signed 64 bits, so each must be one. `check_span` says so of a span when it is read, before it
joins its trace, so that the error is the span's, in its file at its line (``import``), or a span
the receiver rejects (``serve``), never a run that cannot be stored. `valid_text` does the same for
text no store holds (a lone surrogate) in the spans of a document Python's JSON decoder read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import SpanRecord
from otel_replay.importers._usage import check_counts

#: What OTLP's ``intValue`` holds (signed 64 bits).
_INT64 = range(-(1 << 63), 1 << 63)


def check_span(span: SpanRecord) -> None:
    """Raise `TraceFormatError` (at the span, naming the attribute and its value) when ``span``
    holds a number a run would keep that no OTLP ``intValue`` can hold: a token count
    (`check_counts`), a recording's seed (``agent_replay.seed``)."""
    check_counts(span)
    seed = span.attributes.get("agent_replay.seed")
    if isinstance(seed, int) and seed not in _INT64:
        raise TraceFormatError(
            f"agent_replay.seed {preview(seed)} is beyond what can be kept (a signed 64-bit "
            "integer)",
            where=f"span {preview(span.name)} ({span.span_id or 'no id'})",
        )


def valid_text(
    spans: Iterable[SpanRecord], invalid: Callable[[TraceFormatError], None]
) -> Iterator[SpanRecord]:
    """``spans`` but those holding text no store can hold (a lone surrogate, which Python's JSON
    decoder takes from ``"\\ud800"`` where orjson refuses it), which go to ``invalid`` naming the
    span and where in it. Only documents Python's decoder read need this (those holding NaN)."""
    for span in spans:
        found = _lone_surrogate(span)
        if found is None:
            yield span
            continue
        where, text = found
        invalid(
            TraceFormatError(
                f"text {preview(text)} is not valid Unicode (a lone surrogate)",
                where=f"span {preview(span.name)} ({span.span_id or 'no id'}) {where}",
            )
        )


def _lone_surrogate(span: SpanRecord) -> tuple[str, str] | None:
    """Where in ``span`` the first text holding a lone surrogate is, and that text; None if none."""
    stack: list[tuple[str, Any]] = [
        ("name", span.name),
        ("status.message", span.status_message),
        ("attributes", span.attributes),
        ("resource", span.resource),
        *((f"events[{i}]", [e.name, e.attributes]) for i, e in enumerate(span.events)),
    ]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return where, value
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((f"{where}.{key}", key))
                stack.append((f"{where}.{key}", item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
    return None
