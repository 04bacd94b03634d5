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
from datetime import datetime, timezone
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.hashing import MAX_DEPTH
from otel_replay.importers._spans import (
    STATUS_CODES,
    SpanEvent,
    SpanRecord,
    json_safe_float,
    normalize_id,
)

_CONSOLE_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
_CONSOLE_KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_TIME = (1 << 63) - 1
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1
_NANOS_PER_SECOND = 1_000_000_000


def _items(document: Any) -> list[Any]:
    """The spans of a dump: one object, an array of them, (objects written back to back) a
    sequence of either, or an object of named span lists (`_named_lists`)."""
    if isinstance(document, dict):
        named = _named_lists(document)
        return [document] if named is None else named
    if not isinstance(document, list):
        return [document]
    items: list[Any] = []
    for part in document:
        items.extend(part if isinstance(part, list) else [part])
    return items


def _named_lists(document: dict[str, Any]) -> list[Any] | None:
    """The spans of an object whose members are span lists, as Phoenix keeps its span JSON: named
    runs (``{"a run": [span, ...], ...}``) or a page of its REST API (``{"data": [...],
    "next_cursor": ...}``); None when ``document`` is a span itself or has other members than lists
    and text (a cursor)."""
    if "spanContext" in document or "context" in document:
        return None
    members = document.values()
    if not any(isinstance(m, list) for m in members) or not all(
        m is None or isinstance(m, (list, str)) for m in members
    ):
        return None
    return [span for m in members if isinstance(m, list) for span in m]


def is_span_dump(document: Any) -> bool:
    items = _items(document)
    return bool(items) and all(
        isinstance(s, dict) and ("spanContext" in s or "context" in s) for s in items
    )


def decode_span_dump(
    document: Any, invalid: Callable[[TraceFormatError], None], where: str = ""
) -> Iterator[SpanRecord]:
    """Yield the spans of a dump; a span that cannot be decoded goes to ``invalid`` (which raises,
    or records and skips it) with its position (``[3].startTime``, after ``where``: the key that
    holds the list in an envelope)."""
    for order, item in enumerate(_items(document)):
        try:
            if not isinstance(item, dict):
                raise TraceFormatError(f"a span must be an object, got {preview(item)}")
            yield _decode(item, order)
        except TraceFormatError as exc:
            at = f"{where}[{order}]"
            invalid(TraceFormatError(exc.reason, where=f"{at}.{exc.where}" if exc.where else at))


def _decode(item: dict[str, Any], order: int) -> SpanRecord:
    context, key = _field(item, "spanContext", "context")
    if context is None:
        context = {}
    elif not isinstance(context, dict):
        raise TraceFormatError(f"span context must be an object, got {preview(context)}", where=key)
    trace_id = context.get("traceId", context.get("trace_id"))
    span_id = context.get("spanId", context.get("span_id"))
    parent = parent_of(item)
    attributes = _attributes(item.get("attributes"), "attributes")
    span_kind = item.get("span_kind")  # Phoenix span JSON names the OpenInference kind here
    if isinstance(span_kind, str) and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = _text(span_kind, "span_kind")
    status = item.get("status")
    if status is None:
        status = {}
    elif not isinstance(status, dict):
        raise TraceFormatError(f"expected an object, got {preview(status)}", where="status")
    code = status.get("code", status.get("status_code"))
    if code is None:  # Phoenix span JSON keeps the status at the top: status_code, status_message
        code = item.get("status_code")
    message = status.get("message") or status.get("description") or item.get("status_message") or ""
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise TraceFormatError(f"span name must be a string, got {preview(name)}", where="name")
    return SpanRecord(
        trace_id=normalize_id(trace_id, 16, "traceId", integers=True),
        span_id=normalize_id(span_id, 8, "spanId", integers=True),
        parent_span_id=normalize_id(parent, 8, "parentSpanId", integers=True),
        name=_text(name or "", "name"),
        kind=_enum(item.get("kind"), _CONSOLE_KINDS, "kind"),
        start_time_unix_nano=_time(*_field(item, "startTime", "start_time")),
        end_time_unix_nano=_time(*_field(item, "endTime", "end_time")),
        attributes=attributes,
        status_code=_enum(code, {**_CONSOLE_STATUS, **STATUS_CODES}, "status.code"),
        status_message=_text(message if isinstance(message, str) else str(message), "status"),
        events=_events(item.get("events")),
        resource=_resource(item.get("resource")),
        order=order,
    )


def parent_of(item: dict[str, Any]) -> Any:
    """The parent span id as written: ``parentSpanId``/``parent_id``, or the span id of a parent
    context (``parentSpanContext``, or ``parent`` as a context object whose ids are null on a root).
    """
    parent, _ = _field(item, "parentSpanId", "parent_id")
    context = item.get("parentSpanContext")
    if context is not None and not isinstance(context, dict):
        raise TraceFormatError(
            f"expected an object, got {preview(context)}", where="parentSpanContext"
        )
    if parent is None and context is not None:
        parent = context.get("spanId", context.get("span_id"))
    link = item.get("parent")
    if parent is None and link is not None:
        parent = link.get("span_id", link.get("spanId")) if isinstance(link, dict) else link
    return parent


def _field(item: dict[str, Any], js: str, python: str) -> tuple[Any, str]:
    """The value of whichever spelling ``item`` uses, and that spelling (for messages)."""
    return (item[python], python) if js not in item and python in item else (item.get(js), js)


def _events(events: Any) -> list[SpanEvent]:
    if events is None:
        return []
    if not isinstance(events, list):
        raise TraceFormatError(f"expected a list, got {preview(events)}", where="events")
    decoded: list[SpanEvent] = []
    for j, event in enumerate(events):
        where = f"events[{j}]"
        if not isinstance(event, dict):
            raise TraceFormatError(f"expected an object, got {preview(event)}", where=where)
        name = event.get("name")
        decoded.append(
            SpanEvent(
                _text(name if isinstance(name, str) else str(name or ""), f"{where}.name"),
                _time(*_field(event, "time", "timestamp"), where=where),
                _attributes(event.get("attributes"), f"{where}.attributes"),
            )
        )
    return decoded


def _resource(resource: Any) -> dict[str, Any]:
    """Python's ``{"attributes": {...}, "schema_url": ...}``, or (JS) the resource object itself."""
    if resource is None:
        return {}
    if not isinstance(resource, dict):
        raise TraceFormatError(f"expected an object, got {preview(resource)}", where="resource")
    if "attributes" in resource:
        return _attributes(resource["attributes"], "resource.attributes")
    return _attributes(resource, "resource")


def _attributes(attributes: Any, where: str) -> dict[str, Any]:
    if not attributes:
        return {}
    if not isinstance(attributes, dict):
        raise TraceFormatError(
            f"attributes must be an object, got {preview(attributes)}", where=where
        )
    return _flatten(attributes, where, "", 0)


def _flatten(attributes: dict[str, Any], where: str, prefix: str, depth: int) -> dict[str, Any]:
    """Nested attribute objects (Phoenix writes them unflattened) become dotted keys; lists stay."""
    if depth > MAX_DEPTH:
        raise TraceFormatError(f"attributes nested deeper than {MAX_DEPTH} levels", where=where)
    flat: dict[str, Any] = {}
    for key, value in attributes.items():
        name = f"{prefix}{_text(key, where)}"
        if isinstance(value, dict):
            flat.update(_flatten(value, where, name + ".", depth + 1))
        else:
            flat[name] = _plain(value, f"{where}.{name}", depth + 1)
    return flat


def plain_value(value: Any, where: str) -> Any:
    """``value`` as plain JSON that can be stored; `TraceFormatError` (at ``where``) when it cannot
    be (an integer beyond 64 bits, a lone surrogate, nesting deeper than `MAX_DEPTH`)."""
    return _plain(value, where, 1)


def plain_attributes(attributes: dict[str, Any], where: str) -> dict[str, Any]:
    """Attributes whose values are plain JSON that can be stored, keys kept as they are."""
    return {_text(k, where): _plain(v, f"{where}.{k}", 1) for k, v in attributes.items()}


def read_time(value: Any, key: str) -> int:
    """hrtime, ISO-8601 text or integer nanoseconds (``None``: 0, unknown) as int nanoseconds."""
    return _time(value, key)


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


def _plain(value: Any, where: str, depth: int) -> Any:
    """An attribute value as plain JSON: non-finite doubles become the strings OTLP JSON uses, and
    what cannot be stored (integers beyond 64 bits, lone surrogates, deep nesting) is refused."""
    if depth > MAX_DEPTH:
        raise TraceFormatError(f"value nested deeper than {MAX_DEPTH} levels", where=where)
    if isinstance(value, float):
        return json_safe_float(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _UINT64_MAX:
            raise TraceFormatError(
                f"integer {preview(value)} does not fit in 64 bits", where=_cut(where)
            )
        return value
    if isinstance(value, str):
        return _text(value, where)
    if isinstance(value, list):
        return [_plain(v, where, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_text(k, where): _plain(v, where, depth + 1) for k, v in value.items()}
    raise TraceFormatError(f"not a JSON value: {preview(value)}", where=_cut(where))


def _text(value: str, where: str) -> str:
    """``value``, unless it holds a lone surrogate (JSON's ``\\ud800`` escape): not storable text."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise TraceFormatError(
            f"text {preview(value)} is not valid Unicode (lone surrogate)", where=_cut(where)
        ) from None
    return value


def _cut(where: str) -> str:
    return where if len(where) <= 80 else where[:77] + "..."


def _enum(value: Any, names: dict[str, int], where: str) -> int:
    """An enum as a number or a name (``SpanKind.CLIENT`` and ``STATUS_CODE_ERROR`` spellings too);
    an unknown name reads as unspecified, as in OTLP JSON."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return names.get(value.rsplit(".", 1)[-1].upper(), names.get(value, 0))
    raise TraceFormatError(f"expected a name or number, got {preview(value)}", where=where)


def _time(value: Any, key: str, where: str = "") -> int:
    """hrtime ``[seconds, nanos]``, ISO-8601 text or integer nanoseconds → int nanoseconds, from 0
    (unknown) to 2**63 - 1 (the year 2262). ISO text without a UTC offset is read as UTC."""
    where = f"{where}.{key}" if where else key
    if value is None:
        return 0
    if isinstance(value, list):
        nanos = _hrtime(value, where)
    elif isinstance(value, int) and not isinstance(value, bool):
        nanos = value
    elif isinstance(value, str):
        nanos = _iso_time(value, where)
    else:
        raise TraceFormatError(
            f"unreadable timestamp {preview(value)} (expected [seconds, nanoseconds], ISO-8601 "
            "text or integer nanoseconds)",
            where=where,
        )
    if not 0 <= nanos <= _MAX_TIME:
        raise TraceFormatError(
            f"timestamp {preview(value)} is out of range (1970 to 2262: 0 to 2**63 - 1 ns)",
            where=where,
        )
    return nanos


def _hrtime(value: list[Any], where: str) -> int:
    if len(value) != 2 or not all(
        isinstance(part, int) and not isinstance(part, bool) for part in value
    ):
        raise TraceFormatError(
            f"hrtime {preview(value)} is not [seconds, nanoseconds] (two integers)", where=where
        )
    seconds, nanos = value
    if not 0 <= nanos < _NANOS_PER_SECOND:
        raise TraceFormatError(
            f"hrtime {preview(value)}: nanoseconds must be 0 to 999999999", where=where
        )
    if not 0 <= seconds <= _MAX_TIME // _NANOS_PER_SECOND:
        raise TraceFormatError(
            f"hrtime {preview(value)} is out of range (1970 to 2262)", where=where
        )
    return int(seconds * _NANOS_PER_SECOND + nanos)


def _iso_time(value: str, where: str) -> int:
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise TraceFormatError(f"unreadable timestamp {preview(value)}", where=where) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - _EPOCH
    # exact integer arithmetic: datetime.timestamp() goes through a float and the local time zone
    return (delta.days * 86_400 + delta.seconds) * _NANOS_PER_SECOND + delta.microseconds * 1000
