"""Flat span lists, decoded to `SpanRecord`s: one JSON object per span, as eval harnesses and SDK
exporters write them (a JSON list, objects back to back, or JSON Lines).

A flat span carries its ids at the top level (``trace_id``/``traceId``, ``span_id``/``spanId``,
``parent_span_id``/``parentSpanId``/``parent_id`` or a ``parent`` context), as hex text or as JSON
integers; times as integer (or decimal-text) nanoseconds, ISO-8601 text or ``[seconds, nanos]``;
attributes as an object (flat dotted keys or nested) or an OTLP key/value list; ``status`` as
``{code, message}`` with a number or a name (or Phoenix's top-level ``status_code`` /
``status_message``); ``events`` or ``span_events``. Kind, resource and scope may be missing.

A value of the wrong type makes the span invalid: `TraceFormatError` naming its position
(``[2].start_time``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._lookalikes import (
    _attributes,
    _enum,
    _items,
    _text,
    _time,
    parent_of,
)
from otel_replay.importers._otlp_json_decode import _attributes as _key_values
from otel_replay.importers._spans import (
    SPAN_KINDS,
    STATUS_CODES,
    SpanEvent,
    SpanRecord,
    normalize_id,
)

_SPAN_ID_KEYS = ("span_id", "spanId")
_TRACE_ID_KEYS = ("trace_id", "traceId")
_OTLP_KEYS = ("resourceSpans", "resource_spans", "scopeSpans", "scope_spans")
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2, **STATUS_CODES}
_KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5, **SPAN_KINDS}


_SPAN_SHAPE_KEYS = (
    "name",
    "start_time_unix_nano",
    "startTimeUnixNano",
    "start_time",
    "startTime",
    "end_time_unix_nano",
    "endTimeUnixNano",
    "end_time",
    "endTime",
)
_LOG_RECORD_KEYS = ("body", "severity_text", "severity_number", "severityText", "severityNumber")


def is_flat_span(item: Any) -> bool:
    """An object holding a span's own ids at its top level and something only a span has (a name,
    a start or end time): not an OTLP request, not a dump with a span context object, not a log
    record (which carries the ids of the span it was written in)."""
    return (
        isinstance(item, dict)
        and any(key in item for key in _SPAN_ID_KEYS)
        and any(key in item for key in _TRACE_ID_KEYS)
        and any(key in item for key in _SPAN_SHAPE_KEYS)
        and not any(key in item for key in _OTLP_KEYS)
    )


def log_record_key(document: Any) -> str | None:
    """The key that shows ``document`` is log records (an SDK console log exporter's objects: a
    ``body`` or ``severity_*`` beside the ids of the span they were written in, no span's name or
    times), or None when it is not."""
    items = _items(document)
    for item in items:
        if not isinstance(item, dict) or any(key in item for key in _SPAN_SHAPE_KEYS):
            return None
    first = items[0] if items else None
    if not isinstance(first, dict):
        return None
    return next((key for key in _LOG_RECORD_KEYS if key in first), None)


def is_flat_span_list(document: Any) -> bool:
    """One flat span, or a list (or lists back to back) in which some item is one: the others are
    refused span by span."""
    return any(is_flat_span(item) for item in _items(document))


def decode_flat_spans(
    document: Any,
    invalid: Callable[[TraceFormatError], None],
    where: str = "",
    first_order: int = 0,
) -> Iterator[SpanRecord]:
    """Yield the spans of a flat list (or one flat span), numbered from ``first_order``; a span that
    cannot be decoded goes to ``invalid`` (which raises, or records and skips it) with its position
    (``[3].start_time``, after ``where``: the key that holds the list in an envelope)."""
    for i, item in enumerate(_items(document)):
        try:
            yield decode_flat_span(item, first_order + i)
        except TraceFormatError as exc:
            at = f"{where}[{i}]"
            invalid(TraceFormatError(exc.reason, where=f"{at}.{exc.where}" if exc.where else at))


def decode_flat_span(item: Any, order: int) -> SpanRecord:
    if not isinstance(item, dict):
        raise TraceFormatError(f"a span must be an object, got {preview(item)}")
    trace_key, trace_id = _first(item, _TRACE_ID_KEYS)
    span_key, span_id = _first(item, _SPAN_ID_KEYS)
    parent_key, parent = _parent(item)
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise TraceFormatError(f"span name must be a string, got {preview(name)}", where="name")
    code, message = _status(item)
    return SpanRecord(
        trace_id=_id(trace_id, 16, trace_key),
        span_id=_id(span_id, 8, span_key),
        parent_span_id=_id(parent, 8, parent_key),
        name=_text(name or "", "name"),
        kind=_enum(item.get("kind"), _KINDS, "kind"),
        start_time_unix_nano=_nanos(
            item, ("start_time_unix_nano", "startTimeUnixNano", "start_time", "startTime")
        ),
        end_time_unix_nano=_nanos(
            item, ("end_time_unix_nano", "endTimeUnixNano", "end_time", "endTime")
        ),
        attributes=_any_attributes(item.get("attributes"), "attributes"),
        status_code=code,
        status_message=message,
        events=_events(item),
        resource=_resource(item.get("resource")),
        scope_name=_scope_name(item),
        order=order,
    )


def _parent(item: dict[str, Any]) -> tuple[str, Any]:
    """The parent span id and the key it was read from (``parent.span_id`` for a context)."""
    key, parent = _first(item, ("parent_span_id", "parentSpanId", "parentId", "parent_id"))
    if parent is not None:
        return key, parent
    context = item.get("parentSpanContext")
    if isinstance(context, dict):
        key = "parentSpanContext." + ("span_id" if "span_id" in context else "spanId")
    elif context is not None:
        key = "parentSpanContext"
    elif isinstance(item.get("parent"), dict):
        key = "parent.span_id" if "span_id" in item["parent"] else "parent.spanId"
    elif item.get("parent") is not None:
        key = "parent"
    return key, parent_of(item)


def _first(item: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    """The first of ``keys`` that ``item`` holds (not null), and its value; else the first key."""
    for key in keys:
        if item.get(key) is not None:
            return key, item[key]
    return keys[0], None


def _id(raw: Any, n_bytes: int, key: str) -> str:
    try:
        return normalize_id(raw, n_bytes, key, integers=True)
    except TraceFormatError as exc:
        raise TraceFormatError(exc.reason, where=key) from None


def _nanos(item: dict[str, Any], keys: tuple[str, ...]) -> int:
    key, value = _first(item, keys)
    if isinstance(value, str) and value.isascii() and value.isdecimal():
        if len(value) > 19:
            raise TraceFormatError(
                f"timestamp {preview(value)} is out of range (0 to 2**63 - 1 ns)", where=key
            )
        value = int(value)  # int64 written as text, as OTLP JSON does
    return _time(value, key)


def _any_attributes(value: Any, where: str) -> dict[str, Any]:
    """An object (flat or nested) or an OTLP key/value list."""
    if isinstance(value, list):
        return _key_values(value, where)
    return _attributes(value, where)


def _status(item: dict[str, Any]) -> tuple[int, str]:
    status = item.get("status")
    code: Any = None
    message: Any = None
    if isinstance(status, dict):
        code = status.get("code", status.get("status_code"))
        message = status.get("message") or status.get("description")
    elif isinstance(status, str | int) and not isinstance(status, bool):
        code = status
    elif status is not None:
        raise TraceFormatError(f"expected an object, got {preview(status)}", where="status")
    if code is None:
        code = item.get("status_code", item.get("statusCode"))
    if not message:
        message = item.get("status_message", item.get("statusMessage"))
    if message is not None and not isinstance(message, str):
        message = str(message)
    return _enum(code, _STATUS, "status.code"), _text(message or "", "status.message")


def _events(item: dict[str, Any]) -> list[SpanEvent]:
    key, events = _first(item, ("events", "span_events"))
    if events is None:
        return []
    if not isinstance(events, list):
        raise TraceFormatError(f"expected a list, got {preview(events)}", where=key)
    decoded: list[SpanEvent] = []
    for j, event in enumerate(events):
        where = f"{key}[{j}]"
        if not isinstance(event, dict):
            raise TraceFormatError(f"expected an object, got {preview(event)}", where=where)
        name = event.get("name")
        time_key, time = _first(event, ("time_unix_nano", "timeUnixNano", "timestamp", "time"))
        if isinstance(time, str) and time.isascii() and time.isdecimal() and len(time) <= 19:
            time = int(time)
        decoded.append(
            SpanEvent(
                _text(name if isinstance(name, str) else str(name or ""), f"{where}.name"),
                _time(time, time_key, where=where),
                _any_attributes(event.get("attributes"), f"{where}.attributes"),
            )
        )
    return decoded


def _resource(resource: Any) -> dict[str, Any]:
    if resource is None:
        return {}
    if not isinstance(resource, dict):
        raise TraceFormatError(f"expected an object, got {preview(resource)}", where="resource")
    if "attributes" in resource:
        return _any_attributes(resource["attributes"], "resource.attributes")
    return _attributes(resource, "resource")


def _scope_name(item: dict[str, Any]) -> str:
    key, scope = _first(
        item, ("scope", "instrumentation_scope", "instrumentationScope", "instrumentationLibrary")
    )
    if scope is None:
        return ""
    if isinstance(scope, str):
        return _text(scope, key)
    if not isinstance(scope, dict):
        raise TraceFormatError(f"expected an object, got {preview(scope)}", where=key)
    name = scope.get("name")
    return _text(name, f"{key}.name") if isinstance(name, str) else ""
