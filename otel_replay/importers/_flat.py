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
from otel_replay.importers._spans import SpanRecord, normalize_id
from otel_replay.importers._values import (
    KINDS,
    any_attributes,
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

_SPAN_ID_KEYS = ("span_id", "spanId")
_TRACE_ID_KEYS = ("trace_id", "traceId")
_OTLP_KEYS = ("resourceSpans", "resource_spans", "scopeSpans", "scope_spans")


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
    spans = items(document)
    for item in spans:
        if not isinstance(item, dict) or any(key in item for key in _SPAN_SHAPE_KEYS):
            return None
    head = spans[0] if spans else None
    if not isinstance(head, dict):
        return None
    return next((key for key in _LOG_RECORD_KEYS if key in head), None)


def is_flat_span_list(document: Any) -> bool:
    """One flat span, or a list (or lists back to back) in which some item is one: the others are
    refused span by span."""
    return any(is_flat_span(item) for item in items(document))


def decode_flat_spans(
    document: Any,
    invalid: Callable[[TraceFormatError], None],
    where: str = "",
    first_order: int = 0,
) -> Iterator[SpanRecord]:
    """Yield the spans of a flat list (or one flat span), numbered from ``first_order``; a span that
    cannot be decoded goes to ``invalid`` (which raises, or records and skips it) with its position
    (``[3].start_time``, after ``where``: the key that holds the list in an envelope)."""
    for i, item in enumerate(items(document)):
        try:
            yield decode_flat_span(item, first_order + i)
        except TraceFormatError as exc:
            at = f"{where}[{i}]"
            invalid(TraceFormatError(exc.reason, where=f"{at}.{exc.where}" if exc.where else at))


def decode_flat_span(item: Any, order: int) -> SpanRecord:
    if not isinstance(item, dict):
        raise TraceFormatError(f"a span must be an object, got {preview(item)}")
    trace_key, trace_id = first(item, _TRACE_ID_KEYS)
    span_key, span_id = first(item, _SPAN_ID_KEYS)
    parent_key, parent = _parent(item)
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise TraceFormatError(f"span name must be a string, got {preview(name)}", where="name")
    code, message = status(item)
    return SpanRecord(
        trace_id=_id(trace_id, 16, trace_key),
        span_id=_id(span_id, 8, span_key),
        parent_span_id=_id(parent, 8, parent_key),
        name=text(name or "", "name"),
        kind=enum_value(item.get("kind"), KINDS, "kind"),
        start_time_unix_nano=_nanos(
            item, ("start_time_unix_nano", "startTimeUnixNano", "start_time", "startTime")
        ),
        end_time_unix_nano=_nanos(
            item, ("end_time_unix_nano", "endTimeUnixNano", "end_time", "endTime")
        ),
        attributes=any_attributes(item.get("attributes"), "attributes"),
        status_code=code,
        status_message=message,
        events=events(item),
        resource=resource(item.get("resource")),
        scope_name=_scope_name(item),
        order=order,
    )


def _parent(item: dict[str, Any]) -> tuple[str, Any]:
    """The parent span id and the key it was read from (``parent.span_id`` for a context)."""
    key, parent = first(item, ("parent_span_id", "parentSpanId", "parentId", "parent_id"))
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


def _id(raw: Any, n_bytes: int, key: str) -> str:
    try:
        return normalize_id(raw, n_bytes, key, integers=True)
    except TraceFormatError as exc:
        raise TraceFormatError(exc.reason, where=key) from None


def _nanos(item: dict[str, Any], keys: tuple[str, ...]) -> int:
    key, value = first(item, keys)
    if isinstance(value, str) and value.isascii() and value.isdecimal():
        if len(value) > 19:
            raise TraceFormatError(
                f"timestamp {preview(value)} is out of range (0 to 2**63 - 1 ns)", where=key
            )
        value = int(value)  # int64 written as text, as OTLP JSON does
    return read_time(value, key)


def _scope_name(item: dict[str, Any]) -> str:
    key, scope = first(
        item, ("scope", "instrumentation_scope", "instrumentationScope", "instrumentationLibrary")
    )
    if scope is None:
        return ""
    if isinstance(scope, str):
        return text(scope, key)
    if not isinstance(scope, dict):
        raise TraceFormatError(f"expected an object, got {preview(scope)}", where=key)
    name = scope.get("name")
    return text(name, f"{key}.name") if isinstance(name, str) else ""
