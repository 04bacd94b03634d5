"""Span dumps that look like OTLP JSON but are not (FORMATS.md §1.11), decoded to `SpanRecord`s:

* JS SDK ``ReadableSpan`` arrays: ``spanContext.traceId``, ``[seconds, nanos]`` hrtime tuples,
  ``attributes`` as a plain object;
* Python SDK ``ConsoleSpanExporter`` / ``span.to_json()`` objects, pretty-printed back to back:
  ``context.trace_id`` as ``0x``-hex, ISO-8601 times, ``status.status_code`` names, ``parent_id``;
* Arize Phoenix span JSON: the same shape with ``span_kind``, the status at the top (``status_code``,
  ``status_message``) and possibly nested attributes; a list of spans, or an object of named span
  lists (a page of its REST API is one: ``{"data": [...], "next_cursor": ...}``);
* any-agent's spans: the Python shape with integer ids and ``parent`` as a context object.

A value of the wrong type, a time outside 1970 to 2262, or an attribute that could not be stored
(an integer beyond 64 bits, a lone surrogate, nesting deeper than `MAX_DEPTH`) makes the span invalid:
`TraceFormatError` naming its position (``[2].startTime``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._spans import SpanRecord, normalize_id
from otel_replay.importers._values import (
    KINDS,
    attributes,
    enum_value,
    events,
    first,
    items,
    parent_of,
    read_time,
    resource,
    status,
    text,
)


def is_span_dump(document: Any) -> bool:
    spans = items(document)
    return bool(spans) and all(
        isinstance(s, dict) and ("spanContext" in s or "context" in s) for s in spans
    )


def decode_span_dump(
    document: Any, invalid: Callable[[TraceFormatError], None], where: str = ""
) -> Iterator[SpanRecord]:
    """Yield the spans of a dump; a span that cannot be decoded goes to ``invalid`` (which raises,
    or records and skips it) with its position (``[3].startTime``, after ``where``: the key that
    holds the list in an envelope)."""
    for order, item in enumerate(items(document)):
        try:
            if not isinstance(item, dict):
                raise TraceFormatError(f"a span must be an object, got {preview(item)}")
            yield _decode(item, order)
        except TraceFormatError as exc:
            at = f"{where}[{order}]"
            invalid(TraceFormatError(exc.reason, where=f"{at}.{exc.where}" if exc.where else at))


def _decode(item: dict[str, Any], order: int) -> SpanRecord:
    key, context = first(item, ("spanContext", "context"))
    if context is None:
        context = {}
    elif not isinstance(context, dict):
        raise TraceFormatError(f"span context must be an object, got {preview(context)}", where=key)
    trace_id = context.get("traceId", context.get("trace_id"))
    span_id = context.get("spanId", context.get("span_id"))
    parent = parent_of(item)
    attrs = attributes(item.get("attributes"), "attributes")
    span_kind = item.get("span_kind")  # Phoenix span JSON names the OpenInference kind here
    if isinstance(span_kind, str) and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = text(span_kind, "span_kind")
    code, message = status(
        item, otlp=False
    )  # Phoenix span JSON keeps it at the top: status_code, ..._message
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise TraceFormatError(f"span name must be a string, got {preview(name)}", where="name")
    return SpanRecord(
        trace_id=normalize_id(trace_id, 16, "traceId", integers=True),
        span_id=normalize_id(span_id, 8, "spanId", integers=True),
        parent_span_id=normalize_id(parent, 8, "parentSpanId", integers=True),
        name=text(name or "", "name"),
        kind=enum_value(item.get("kind"), KINDS, "kind"),
        start_time_unix_nano=_time(item, ("startTime", "start_time")),
        end_time_unix_nano=_time(item, ("endTime", "end_time")),
        attributes=attrs,
        status_code=code,
        status_message=message,
        events=events(item, otlp=False),
        resource=resource(item.get("resource"), otlp=False),
        order=order,
    )


def _time(item: dict[str, Any], keys: tuple[str, ...]) -> int:
    key, value = first(item, keys)
    return read_time(value, key)


def concatenated_objects(text: str) -> list[Any] | None:
    """JSON objects written back to back (the Python console exporter's output), or None.

    Python's own decoder is used because these dumps may hold ``Infinity`` and ``NaN``.
    """
    decoder = json.JSONDecoder()
    objects: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return objects
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        except RecursionError:
            raise TraceFormatError(
                "JSON nested deeper than the reader follows", offset=position
            ) from None
        except ValueError:  # an integer longer than Python converts (sys.set_int_max_str_digits)
            raise TraceFormatError(
                "an integer with more digits than the reader converts", offset=position
            ) from None
        objects.append(value)
