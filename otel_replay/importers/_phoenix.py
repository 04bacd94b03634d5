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
from otel_replay.importers._flat import decode_flat_spans, is_flat_span
from otel_replay.importers._spans import SpanRecord

PHOENIX_FORMAT = "phoenix-otlp"


def is_phoenix_page(document: Any) -> bool:
    """A page: an object whose ``data`` is a list holding a flat span (``trace_id`` and ``span_id``
    at the top, attributes as a list of key/value objects) and whose other members are a cursor at
    most. The other items of the list are the page's too: one that is no span is refused by
    `decode_phoenix_page`, not read as another format."""
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        return False
    if not set(document) <= {"data", "next_cursor"}:
        return False
    return any(
        is_flat_span(s) and isinstance(s.get("attributes") or [], list) for s in document["data"]
    )


def decode_phoenix_page(
    document: Any, invalid: Callable[[TraceFormatError], None], first_order: int = 0
) -> Iterator[SpanRecord]:
    """Yield the spans of one page (flat spans: `otel_replay.importers._flat`), numbering them from
    ``first_order``; a span that cannot be decoded goes to ``invalid`` (which raises, or records and
    skips it) with its position (``data[3].start_time_unix_nano``)."""
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise TraceFormatError("expected a Phoenix span page: an object with a 'data' list")
    return decode_flat_spans(document["data"], invalid, where="data", first_order=first_order)
