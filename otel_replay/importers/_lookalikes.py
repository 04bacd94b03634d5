"""Span dumps that look like OTLP JSON but are not (FORMATS.md §1.11), decoded to `SpanRecord`s:

* JS SDK ``ReadableSpan`` arrays: ``spanContext.traceId``, ``[seconds, nanos]`` hrtime tuples,
  ``attributes`` as a plain object;
* Python SDK ``ConsoleSpanExporter`` / ``span.to_json()`` objects, pretty-printed back to back:
  ``context.trace_id`` as ``0x``-hex, ISO-8601 times, ``status.status_code`` names, ``parent_id``;
* Arize Phoenix span JSON: the same shape with ``span_kind`` and possibly nested attributes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from otel_replay.errors import TraceFormatError
from otel_replay.importers._spans import (
    STATUS_CODES,
    SpanEvent,
    SpanRecord,
    json_safe_float,
    normalize_id,
)

_CONSOLE_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
_CONSOLE_KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}


def is_span_dump(document: Any) -> bool:
    items = document if isinstance(document, list) else [document]
    return bool(items) and all(
        isinstance(s, dict) and ("spanContext" in s or "context" in s) for s in items
    )


def decode_span_dump(
    document: Any, invalid: Callable[[TraceFormatError], None]
) -> Iterator[SpanRecord]:
    items = document if isinstance(document, list) else [document]
    for order, item in enumerate(items):
        try:
            yield _decode(item, order)
        except TraceFormatError as exc:
            invalid(TraceFormatError(exc.reason, where=f"[{order}]"))


def _decode(item: dict[str, Any], order: int) -> SpanRecord:
    context = item.get("spanContext") or item.get("context") or {}
    if not isinstance(context, dict):
        raise TraceFormatError(f"span context must be an object, got {context!r}")
    trace_id = context.get("traceId", context.get("trace_id"))
    span_id = context.get("spanId", context.get("span_id"))
    parent = item.get("parentSpanId") or item.get("parent_id")
    parent_context = item.get("parentSpanContext")
    if parent is None and isinstance(parent_context, dict):
        parent = parent_context.get("spanId")
    attributes = item.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise TraceFormatError(f"attributes must be an object, got {attributes!r}")
    attributes = _flatten(attributes)
    span_kind = item.get("span_kind")  # Phoenix span JSON names the OpenInference kind here
    if isinstance(span_kind, str) and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = span_kind
    status = item.get("status") or {}
    code = status.get("code", status.get("status_code", 0)) if isinstance(status, dict) else 0
    if isinstance(code, str):
        code = _CONSOLE_STATUS.get(code.upper(), STATUS_CODES.get(code, 0))
    kind = item.get("kind", 0)
    if isinstance(kind, str):
        kind = _CONSOLE_KINDS.get(kind.rsplit(".", 1)[-1], 0)
    resource = item.get("resource") or {}
    if isinstance(resource, dict) and isinstance(resource.get("attributes"), dict):
        resource = resource["attributes"]
    return SpanRecord(
        trace_id=normalize_id(trace_id, 16, "traceId"),
        span_id=normalize_id(span_id, 8, "spanId"),
        parent_span_id=normalize_id(parent, 8, "parentSpanId"),
        name=str(item.get("name", "")),
        kind=kind if isinstance(kind, int) else 0,
        start_time_unix_nano=_time(item.get("startTime", item.get("start_time"))),
        end_time_unix_nano=_time(item.get("endTime", item.get("end_time"))),
        attributes=attributes,
        status_code=code if isinstance(code, int) else 0,
        status_message=str(status.get("message") or status.get("description") or "")
        if isinstance(status, dict)
        else "",
        events=[
            SpanEvent(
                str(e.get("name", "")),
                _time(e.get("time", e.get("timestamp"))),
                {k: _plain(v) for k, v in (e.get("attributes") or {}).items()},
            )
            for e in item.get("events") or []
            if isinstance(e, dict)
        ],
        resource=resource if isinstance(resource, dict) else {},
        order=order,
    )


def _flatten(attributes: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested attribute objects (Phoenix writes them unflattened) become dotted keys; lists stay."""
    flat: dict[str, Any] = {}
    for key, value in attributes.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = _plain(value)
    return flat


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
        objects.append(value)


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return json_safe_float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _time(value: Any) -> int:
    """hrtime ``[seconds, nanos]``, ISO-8601 text or integer nanoseconds → int nanoseconds."""
    if value is None:
        return 0
    if isinstance(value, list) and len(value) == 2:
        return int(value[0]) * 1_000_000_000 + int(value[1])
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise TraceFormatError(f"unreadable timestamp {value!r}") from None
        whole = int(moment.timestamp())
        return whole * 1_000_000_000 + moment.microsecond * 1000
    raise TraceFormatError(f"unreadable timestamp {value!r}")
