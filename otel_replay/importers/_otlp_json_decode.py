"""Walk one decoded OTLP JSON request (a dict) into `SpanRecord`s.

Accepts everything docs/importing.md ("What it reads") lists: camelCase and snake_case keys, hex or
base64 ids, enum names or numbers, int64 as string or number (never through float), the legacy
``instrumentationLibrarySpans`` layout, the ``batches`` (Tempo) and ``trace_requests[].pbreq``
(oteltest) envelopes. A value of the wrong type raises `TraceFormatError` naming its JSON path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.hashing import MAX_DEPTH
from otel_replay.importers._spans import (
    SPAN_KINDS,
    STATUS_CODES,
    STATUS_ERROR,
    STATUS_UNSET,
    SpanEvent,
    SpanRecord,
    json_safe_float,
    normalize_id,
)

_NOT_TRACES = {
    "resourceLogs": "an OTLP logs file",
    "resource_logs": "an OTLP logs file",
    "resourceMetrics": "an OTLP metrics file",
    "resource_metrics": "an OTLP metrics file",
}


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceFormatError(f"expected a list, got {preview(value)}", where=where)
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceFormatError(f"expected an object, got {preview(value)}", where=where)
    return value


def resource_spans_of(document: Any) -> list[Any]:
    """The ``resourceSpans`` list of any accepted envelope; raise if the document holds no traces."""
    if not isinstance(document, dict):
        raise TraceFormatError(
            f"expected an OTLP JSON object with resourceSpans, got {preview(document)}"
        )
    for key in ("resourceSpans", "resource_spans", "batches"):
        if key in document:
            return _list(document[key], key)
    if "trace_requests" in document:  # the oteltest capture envelope
        merged: list[Any] = []
        for i, request in enumerate(_list(document["trace_requests"], "trace_requests")):
            body = _dict(_dict(request, f"trace_requests[{i}]").get("pbreq"), "pbreq")
            merged.extend(resource_spans_of(body))
        return merged
    if "trace" in document and isinstance(document["trace"], dict):  # Tempo v2
        return resource_spans_of(document["trace"])
    for key, what in _NOT_TRACES.items():
        if key in document:
            raise TraceFormatError(f"this is {what} ({key!r}), not traces")
    keys = ", ".join(repr(k) for k in list(document)[:6]) or "none"
    raise TraceFormatError(
        f"not an OTLP trace object: no 'resourceSpans' key (top-level keys: {keys})"
    )


def decode_request(
    document: Any, invalid: Callable[[TraceFormatError], None], first_order: int = 0
) -> Iterator[SpanRecord]:
    """Yield the spans of one request, numbering them from ``first_order`` in input order.

    A span that cannot be decoded goes to ``invalid`` (which raises, or records and skips it); a
    malformed envelope raises.
    """
    order = first_order
    for r, resource_spans in enumerate(resource_spans_of(document)):
        where_r = f"resourceSpans[{r}]"
        rs = _dict(resource_spans, where_r)
        resource = _attributes(
            _dict(rs.get("resource"), f"{where_r}.resource").get("attributes"),
            f"{where_r}.resource.attributes",
        )
        scope_list = _get(rs, "scopeSpans", "scope_spans")
        scope_key = "scopeSpans"
        if scope_list is None:
            scope_list = _get(rs, "instrumentationLibrarySpans", "instrumentation_library_spans")
            scope_key = "instrumentationLibrarySpans"
        for s, scope_spans in enumerate(_list(scope_list, f"{where_r}.{scope_key}")):
            where_s = f"{where_r}.{scope_key}[{s}]"
            ss = _dict(scope_spans, where_s)
            scope = ss.get("scope")
            if scope is None:
                scope = _get(ss, "instrumentationLibrary", "instrumentation_library")
            scope_name = _dict(scope, f"{where_s}.scope").get("name") or ""
            for i, span in enumerate(_list(ss.get("spans"), f"{where_s}.spans")):
                try:
                    record = decode_span(span, f"{where_s}.spans[{i}]")
                except TraceFormatError as exc:
                    invalid(exc)
                    continue
                record.resource = resource
                record.scope_name = str(scope_name)
                record.order = order
                order += 1
                yield record


def decode_span(span: Any, where: str) -> SpanRecord:
    obj = _dict(span, where)
    try:
        trace_id = normalize_id(_get(obj, "traceId", "trace_id"), 16, "traceId")
        span_id = normalize_id(_get(obj, "spanId", "span_id"), 8, "spanId")
        parent = normalize_id(_get(obj, "parentSpanId", "parent_span_id"), 8, "parentSpanId")
    except TraceFormatError as exc:
        raise TraceFormatError(exc.reason, where=where) from None
    name = obj.get("name") or ""
    if not isinstance(name, str):
        raise TraceFormatError(f"span name must be a string, got {preview(name)}", where=where)
    status = _dict(obj.get("status"), f"{where}.status")
    code = _enum(status.get("code"), STATUS_CODES, f"{where}.status.code")
    if code == STATUS_UNSET and _deprecated_error(
        _get(status, "deprecatedCode", "deprecated_code")
    ):
        code = STATUS_ERROR  # OTLP's rule until 2021 (docs/importing.md, "What it reads")
    message = status.get("message") or ""
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=_enum(obj.get("kind"), SPAN_KINDS, f"{where}.kind"),
        start_time_unix_nano=_time(
            _get(obj, "startTimeUnixNano", "start_time_unix_nano"), f"{where}.startTimeUnixNano"
        ),
        end_time_unix_nano=_time(
            _get(obj, "endTimeUnixNano", "end_time_unix_nano"), f"{where}.endTimeUnixNano"
        ),
        attributes=_attributes(obj.get("attributes"), f"{where}.attributes"),
        status_code=code,
        status_message=message if isinstance(message, str) else str(message),
        events=[
            _event(e, f"{where}.events[{j}]")
            for j, e in enumerate(_list(obj.get("events"), f"{where}.events"))
        ],
    )


def _event(event: Any, where: str) -> SpanEvent:
    obj = _dict(event, where)
    return SpanEvent(
        name=str(obj.get("name") or ""),
        time_unix_nano=_time(_get(obj, "timeUnixNano", "time_unix_nano"), f"{where}.timeUnixNano"),
        attributes=_attributes(obj.get("attributes"), f"{where}.attributes"),
    )


def _attributes(items: Any, where: str, depth: int = 0) -> dict[str, Any]:
    if not items:
        return {}
    if not isinstance(items, list):
        raise TraceFormatError(
            f"attributes must be a list of key/value objects, got {preview(items)}", where=where
        )
    out: dict[str, Any] = {}
    for i, kv in enumerate(items):
        key = kv.get("key") if type(kv) is dict else None
        if type(key) is not str:
            raise TraceFormatError(
                f"expected {{'key': str, 'value': ...}}, got {preview(kv)}", where=f"{where}[{i}]"
            )
        value = kv.get("value")
        # Most attribute values are strings: take them without building an error path.
        text = value.get("stringValue") if type(value) is dict and len(value) == 1 else None
        if type(text) is str:
            out[key] = text
        else:
            out[key] = any_value(value, f"{where}[{i}].value", depth)
    return out


def any_value(value: Any, where: str, depth: int = 0) -> Any:
    """Decode an ``AnyValue`` to plain JSON (bytes stay base64 text; NaN/Infinity become strings).

    ``depth`` counts the arrays and key/value lists around it: nesting beyond `MAX_DEPTH` could be
    neither hashed nor stored.
    """
    if not value:
        return None
    if depth > MAX_DEPTH:
        raise TraceFormatError(
            f"value nested deeper than {MAX_DEPTH} arrays or key/value lists", where=where[:80]
        )
    if not isinstance(value, dict):
        raise TraceFormatError(f"expected an AnyValue object, got {preview(value)}", where=where)
    text = value.get("stringValue")
    if text is not None:
        if not isinstance(text, str):
            raise TraceFormatError(
                f"stringValue must be a string, got {preview(text)}", where=where
            )
        return text
    for key, item in value.items():
        if item is None:
            continue  # proto3 JSON: a null member is an absent one (Phoenix writes every member)
        if key in ("stringValue", "string_value"):
            if not isinstance(item, str):
                raise TraceFormatError(f"{key} must be a string, got {preview(item)}", where=where)
            return item
        if key in ("intValue", "int_value"):
            return _int64(item, f"{where}.{key}")
        if key in ("boolValue", "bool_value"):
            if not isinstance(item, bool):
                raise TraceFormatError(
                    f"{key} must be true or false, got {preview(item)}", where=where
                )
            return item
        if key in ("doubleValue", "double_value"):
            return _double(item, f"{where}.{key}")
        if key in ("arrayValue", "array_value"):
            values = _list(_dict(item, f"{where}.{key}").get("values"), f"{where}.{key}.values")
            return [
                any_value(v, f"{where}.{key}.values[{i}]", depth + 1) for i, v in enumerate(values)
            ]
        if key in ("kvlistValue", "kvlist_value"):
            return _attributes(
                _dict(item, f"{where}.{key}").get("values"), f"{where}.{key}.values", depth + 1
            )
        if key in ("bytesValue", "bytes_value"):
            if not isinstance(item, str):
                raise TraceFormatError(
                    f"{key} must be base64 text, got {preview(item)}", where=where
                )
            return item
    return None  # only unknown members: an "empty" value, which is legal


_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


_DECIMAL = re.compile(r"-?[0-9]+")


def _int64(value: Any, where: str) -> int:
    """int64 / fixed64 from a number or a decimal string (never through float)."""
    number: int | None = None
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and _DECIMAL.fullmatch(value):
        if len(value) > 21:  # more digits than any 64-bit integer has (and int() has a limit)
            raise TraceFormatError(
                f"integer {preview(value)} ({len(value)} characters) does not fit in 64 bits",
                where=where,
            )
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if number is not None:
        if _INT64_MIN <= number <= _UINT64_MAX:
            return number
        raise TraceFormatError(f"integer {value!r} does not fit in 64 bits", where=where)
    raise TraceFormatError(
        f"expected an integer (number or decimal string), got {preview(value)}", where=where
    )


def _time(value: Any, where: str) -> int:
    """Nanoseconds since the epoch: 0 (unknown) up to 2**63 - 1 (the year 2262)."""
    number = _int64(value, where)
    if not 0 <= number < 1 << 63:
        raise TraceFormatError(
            f"timestamp {value!r} is out of range (0 to 2**63 - 1 ns)", where=where
        )
    return number


def _double(value: Any, where: str) -> float | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return json_safe_float(float(value))
    if isinstance(value, str):
        try:
            return json_safe_float(float(value))
        except ValueError:
            pass
    raise TraceFormatError(f"expected a double, got {preview(value)}", where=where)


def _enum(value: Any, names: dict[str, int], where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in names:
            return names[value]
        if value.isascii() and value.isdecimal() and len(value) < 10:
            return int(value)
        return 0  # unknown enum names are legal per the proto3 JSON mapping: read as unspecified
    raise TraceFormatError(f"expected an enum name or number, got {preview(value)}", where=where)


def _deprecated_error(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return value not in ("DEPRECATED_STATUS_CODE_OK", "0")
    return bool(value != 0)
