"""Arize Phoenix's OTLP-shaped span pages, as ``GET /v1/projects/{project}/spans/otlpv1`` returns them:
``{"data": [span, ...], "next_cursor": ...}``.

Each span is flat and snake_case: ``trace_id``, ``span_id``, ``parent_span_id`` as hex,
``start_time_unix_nano`` / ``end_time_unix_nano`` as integers (Phoenix computes them through a float:
they are right to about a microsecond), ``attributes`` as key/value objects whose unset members are
null, ``status.code`` a number. There is no kind, resource or scope: Phoenix does not keep them. The
REST importer (`otel_replay.platforms`) reads the pages the server sends, and a page saved as a file
reads the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError
from otel_replay.importers._otlp_json_decode import decode_span
from otel_replay.importers._spans import SpanRecord

FORMAT = "phoenix-otlp"


def is_phoenix_page(document: Any) -> bool:
    """A page: an object whose ``data`` is a list of flat spans (``trace_id`` and ``span_id`` at the
    top, attributes as a list of key/value objects) and whose other members are a cursor at most."""
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        return False
    if not set(document) <= {"data", "next_cursor"}:
        return False
    spans = document["data"]
    return bool(spans) and all(
        isinstance(s, dict)
        and "trace_id" in s
        and "span_id" in s
        and isinstance(s.get("attributes") or [], list)
        for s in spans
    )


def decode_phoenix_page(
    document: Any, invalid: Callable[[TraceFormatError], None], first_order: int = 0
) -> Iterator[SpanRecord]:
    """Yield the spans of one page, numbering them from ``first_order``; a span that cannot be
    decoded goes to ``invalid`` (which raises, or records and skips it) with its position."""
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise TraceFormatError("expected a Phoenix span page: an object with a 'data' list")
    order = first_order
    for i, span in enumerate(document["data"]):
        try:
            record = decode_span(span, f"data[{i}]")
        except TraceFormatError as exc:
            invalid(exc)
            continue
        record.order = order
        order += 1
        yield record
