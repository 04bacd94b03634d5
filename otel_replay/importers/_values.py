"""The values of spans written as plain JSON objects, shared by the readers of documents that are not
OTLP requests (`_flat`, `_lookalikes`, `_langfuse`): ids' spellings aside, times (integer nanoseconds,
ISO-8601 text, ``[seconds, nanos]``), attributes (flat, nested or OTLP key/value lists), kind and
status as numbers or names, events, resources, and values that can be stored.

A value that cannot be read raises `TraceFormatError` naming the key it was read from.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.hashing import MAX_DEPTH
from otel_replay.importers._otlp_json_decode import _attributes as _key_values
from otel_replay.importers._spans import (
    SPAN_KINDS,
    STATUS_CODES,
    SpanEvent,
    json_safe_float,
)

#: Status codes and span kinds by number or by name (the SDKs' ``OK``/``CLIENT``, OTLP's
#: ``STATUS_CODE_OK``/``SPAN_KIND_CLIENT``).
STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2, **STATUS_CODES}
KINDS = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3, "PRODUCER": 4, "CONSUMER": 5, **SPAN_KINDS}

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MAX_TIME = (1 << 63) - 1
_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1
_NANOS_PER_SECOND = 1_000_000_000


def items(document: Any) -> list[Any]:
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


def parent_of(item: dict[str, Any]) -> Any:
    """The parent span id as written: ``parentSpanId``/``parent_id``, or the span id of a parent
    context (``parentSpanContext``, or ``parent`` as a context object whose ids are null on a root).
    """
    _, parent = first(item, ("parentSpanId", "parent_id"))
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


def first(item: dict[str, Any], keys: tuple[str, ...]) -> tuple[str, Any]:
    """The first of ``keys`` that ``item`` holds (not null), and its value; else the first key."""
    for key in keys:
        if item.get(key) is not None:
            return key, item[key]
    return keys[0], None


def any_attributes(value: Any, where: str) -> dict[str, Any]:
    """An object (flat or nested) or an OTLP key/value list."""
    if isinstance(value, list):
        return _key_values(value, where)
    return attributes(value, where)


def status(item: dict[str, Any], otlp: bool = True) -> tuple[int, str]:
    """A span's status code and message: ``status`` as ``{code, message}`` (or ``status_code``,
    ``description``), else at the top (Phoenix's ``status_code``/``status_message``); with ``otlp``,
    ``status`` as a bare code and ``statusCode``/``statusMessage`` too."""
    status = item.get("status")
    code: Any = None
    message: Any = None
    if isinstance(status, dict):
        code = status.get("code", status.get("status_code"))
        message = status.get("message") or status.get("description")
    elif otlp and isinstance(status, str | int) and not isinstance(status, bool):
        code = status
    elif status is not None:
        raise TraceFormatError(f"expected an object, got {preview(status)}", where="status")
    if code is None:
        code = item.get("status_code", item.get("statusCode") if otlp else None)
    if not message:
        message = item.get("status_message", item.get("statusMessage") if otlp else None)
    if message is not None and not isinstance(message, str):
        message = str(message)
    return enum_value(code, STATUS, "status.code"), text(message or "", "status.message")


def events(item: dict[str, Any], otlp: bool = True) -> list[SpanEvent]:
    """A span's ``events`` (or ``span_events``); with ``otlp``, OTLP's spellings too: attributes as
    key/value lists, times as decimal text."""
    key, events = first(item, ("events", "span_events"))
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
        time_key, time = first(event, ("time_unix_nano", "timeUnixNano", "timestamp", "time"))
        decimal = isinstance(time, str) and time.isascii() and time.isdecimal()
        if otlp and decimal and len(time) <= 19:
            time = int(time)
        values = event.get("attributes")
        decoded.append(
            SpanEvent(
                text(name if isinstance(name, str) else str(name or ""), f"{where}.name"),
                read_time(time, time_key, where=where),
                (any_attributes if otlp else attributes)(values, f"{where}.attributes"),
            )
        )
    return decoded


def resource(resource: Any, otlp: bool = True) -> dict[str, Any]:
    """Python's ``{"attributes": {...}, "schema_url": ...}``, or (JS) the resource object itself;
    with ``otlp``, attributes as a key/value list too."""
    if resource is None:
        return {}
    if not isinstance(resource, dict):
        raise TraceFormatError(f"expected an object, got {preview(resource)}", where="resource")
    if "attributes" in resource:
        read = any_attributes if otlp else attributes
        return read(resource["attributes"], "resource.attributes")
    return attributes(resource, "resource")


def attributes(attributes: Any, where: str) -> dict[str, Any]:
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
        name = f"{prefix}{text(key, where)}"
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
    return {text(k, where): _plain(v, f"{where}.{k}", 1) for k, v in attributes.items()}


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
        return text(value, where)
    if isinstance(value, list):
        return [_plain(v, where, depth + 1) for v in value]
    if isinstance(value, dict):
        return {text(k, where): _plain(v, where, depth + 1) for k, v in value.items()}
    raise TraceFormatError(f"not a JSON value: {preview(value)}", where=_cut(where))


def text(value: str, where: str) -> str:
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


def enum_value(value: Any, names: dict[str, int], where: str) -> int:
    """An enum as a number or a name (``SpanKind.CLIENT`` and ``STATUS_CODE_ERROR`` spellings too);
    an unknown name reads as unspecified, as in OTLP JSON."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return names.get(value.rsplit(".", 1)[-1].upper(), names.get(value, 0))
    raise TraceFormatError(f"expected a name or number, got {preview(value)}", where=where)


def read_time(value: Any, key: str, where: str = "") -> int:
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
