"""Zipkin v2 JSON, decoded to `SpanRecord`s: a list of spans (what a tracer POSTs to
``/api/v2/spans`` and ``GET /api/v2/trace/{id}`` answers), a list of such lists (``GET
/api/v2/traces``), or one span.

A span: ``traceId`` (16 or 32 hex digits: a 64-bit id is the low half of a 128-bit one), ``id``,
``parentId``, ``name``, ``kind`` (``CLIENT``, ``SERVER``, ``PRODUCER``, ``CONSUMER``; none is
internal), ``timestamp`` and ``duration`` in microseconds, ``localEndpoint.serviceName`` (the
resource's ``service.name``), ``remoteEndpoint`` (``peer.service``, ``net.peer.ip``,
``net.peer.port``), ``tags`` (text: a tag holding JSON stays text, as every Zipkin attribute is;
the step readers parse JSON where they expect it), ``annotations`` (span events; the OTel exporter
writes an event as ``{"name": {attributes}}`` text, read back so). The OTel exporter's tags are
read back where OTLP keeps them: ``otel.status_code`` and ``otel.status_description`` (else an
``error`` tag, its value the message), ``otel.scope.name``.

Zipkin shares one span id between a client and the server half it called (``shared: true``): when
both halves are in the document, the server half gets an id of its own (derived from the shared
one) and the client half as parent, so no span is dropped as delivered twice.

A value of the wrong type makes its span invalid: `TraceFormatError` naming its position
(``[0][2].timestamp``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._jaeger import hex_id, micros, status
from otel_replay.importers._spans import SpanEvent, SpanRecord
from otel_replay.importers._values import KINDS, plain_value, text

FORMAT = "zipkin"

Invalid = Callable[[TraceFormatError], None]

#: Keys only a Zipkin span has (beside ``traceId`` and ``id``).
_ZIPKIN_KEYS = ("localEndpoint", "remoteEndpoint", "annotations", "shared", "timestamp", "duration")
#: Keys that show a span of another format (flat spans, Langfuse observations, Jaeger), or of
#: Zipkin's v1 (``binaryAnnotations``), which this reader does not take.
_OTHER_KEYS = ("spanId", "span_id", "spanID", "startTime", "observations", "binaryAnnotations")
_SCOPE_NAMES = ("otel.scope.name", "otel.library.name")
_SCOPE_OTHER = ("otel.scope.version", "otel.library.version")


def is_zipkin_span(item: Any) -> bool:
    """A span's ``traceId`` and ``id`` as text beside a key only Zipkin writes, and no other
    format's span id or start time."""
    return (
        isinstance(item, dict)
        and isinstance(item.get("traceId"), str)
        and isinstance(item.get("id"), str)
        and any(key in item for key in _ZIPKIN_KEYS)
        and not any(key in item for key in _OTHER_KEYS)
    )


def is_zipkin(document: Any) -> bool:
    """A list (or a list of lists) in which some item is a Zipkin span, or one span."""
    return any(is_zipkin_span(item) for _, item in _entries(document))


def _entries(document: Any) -> list[tuple[str, Any]]:
    if not isinstance(document, list):
        return [("", document)]
    out: list[tuple[str, Any]] = []
    for i, part in enumerate(document):
        if isinstance(part, list):
            out.extend((f"[{i}][{j}]", item) for j, item in enumerate(part))
        else:
            out.append((f"[{i}]", part))
    return out


def decode_zipkin(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """Yield the spans of a Zipkin document; a span that cannot be decoded goes to ``invalid``
    (which raises, or records and skips it) with its position."""
    entries = _entries(document)
    unshared = {
        (item["traceId"], item["id"])
        for _, item in entries
        if is_zipkin_span(item) and item.get("shared") is not True
    }
    for order, (where, item) in enumerate(entries):
        try:
            yield _span(item, order, unshared)
        except TraceFormatError as exc:
            at = where or None
            if exc.where:
                at = f"{where}.{exc.where}" if where else exc.where
            invalid(TraceFormatError(exc.reason, where=at))


def _span(item: Any, order: int, unshared: set[tuple[str, str]]) -> SpanRecord:
    if not isinstance(item, dict):
        raise TraceFormatError(f"a span must be an object, got {preview(item)}")
    trace_id = hex_id(item.get("traceId"), 16, "traceId")
    span_id = hex_id(item.get("id"), 8, "id")
    if not trace_id or not span_id:
        raise TraceFormatError(
            "a span needs a traceId and an id", where="traceId" if not trace_id else "id"
        )
    parent = hex_id(item.get("parentId"), 8, "parentId")
    if item.get("shared") is True and (item.get("traceId"), item.get("id")) in unshared:
        parent, span_id = span_id, _server_half(span_id)
    name = item.get("name") or ""
    if not isinstance(name, str):
        raise TraceFormatError(f"expected text, got {preview(name)}", where="name")
    kind = item.get("kind")
    if kind is not None and (not isinstance(kind, str) or kind.upper() not in KINDS):
        raise TraceFormatError(f"unknown span kind {preview(kind)}", where="kind")
    start = micros(item.get("timestamp"), "timestamp")
    duration = micros(item.get("duration"), "duration")
    tags = _tags(item.get("tags"))
    error = tags.get("error")
    code, message = status(_as_status(tags))
    if not message and isinstance(error, str) and error not in ("", "true") and code == 2:
        message = error
    scope = next((tags.pop(key) for key in _SCOPE_NAMES if key in tags), "")
    for key in _SCOPE_OTHER:
        tags.pop(key, None)
    tags.update(_remote(item.get("remoteEndpoint")))
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=text(name, "name"),
        kind=KINDS[kind.upper()] if isinstance(kind, str) else 1,
        start_time_unix_nano=start * 1000,
        end_time_unix_nano=(start + duration) * 1000 if start else 0,
        attributes=tags,
        status_code=code,
        status_message=message,
        events=_annotations(item.get("annotations")),
        resource=_local(item.get("localEndpoint")),
        scope_name=scope,
        order=order,
    )


def _server_half(span_id: str) -> str:
    return hashlib.sha256(f"zipkin shared {span_id}".encode()).hexdigest()[:16]


def _tags(tags: Any) -> dict[str, Any]:
    if tags is None:
        return {}
    if not isinstance(tags, dict):
        raise TraceFormatError(f"expected an object of tags, got {preview(tags)}", where="tags")
    out: dict[str, Any] = {}
    for key, value in tags.items():
        if isinstance(value, (dict, list)):
            raise TraceFormatError(
                f"a tag's value must be text, got {preview(value)}", where=f"tags.{key}"
            )
        out[text(key, "tags")] = plain_value(value, f"tags.{key}")
    return out


def _as_status(tags: dict[str, Any]) -> dict[str, Any]:
    """``status`` reads an ``error`` tag that is true; in Zipkin any ``error`` tag is an error (its
    value the message), unless ``otel.status_code`` says otherwise."""
    if "error" in tags and "otel.status_code" not in tags:
        tags["error"] = True
    return tags


def _annotations(annotations: Any) -> list[SpanEvent]:
    if annotations is None:
        return []
    if not isinstance(annotations, list):
        raise TraceFormatError(f"expected a list, got {preview(annotations)}", where="annotations")
    out = []
    for i, note in enumerate(annotations):
        at = f"annotations[{i}]"
        if not isinstance(note, dict) or not isinstance(note.get("value"), str):
            raise TraceFormatError(f"expected {{timestamp, value}}, got {preview(note)}", where=at)
        name, attributes = _event_text(note["value"])
        out.append(
            SpanEvent(
                name=text(name, f"{at}.value"),
                time_unix_nano=micros(note.get("timestamp"), f"{at}.timestamp") * 1000,
                attributes=plain_value(attributes, f"{at}.value"),
            )
        )
    return out


def _event_text(value: str) -> tuple[str, dict[str, Any]]:
    """An OTel event as its Zipkin exporter writes it (``{"name": {attributes}}``), else a plain
    annotation named by its text."""
    if value.startswith("{"):
        try:
            parsed = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value, {}
        if isinstance(parsed, dict) and len(parsed) == 1:
            ((name, attributes),) = parsed.items()
            if isinstance(attributes, dict):
                return name, attributes
    return value, {}


def _local(endpoint: Any) -> dict[str, Any]:
    if endpoint is None:
        return {}
    if not isinstance(endpoint, dict):
        raise TraceFormatError(
            f"expected an endpoint, got {preview(endpoint)}", where="localEndpoint"
        )
    service = endpoint.get("serviceName")
    if service is None:
        return {}
    if not isinstance(service, str):
        raise TraceFormatError(
            f"expected text, got {preview(service)}", where="localEndpoint.serviceName"
        )
    return {"service.name": text(service, "localEndpoint.serviceName")}


def _remote(endpoint: Any) -> dict[str, Any]:
    if endpoint is None:
        return {}
    if not isinstance(endpoint, dict):
        raise TraceFormatError(
            f"expected an endpoint, got {preview(endpoint)}", where="remoteEndpoint"
        )
    out: dict[str, Any] = {}
    for key, attribute in (
        ("serviceName", "peer.service"),
        ("ipv4", "net.peer.ip"),
        ("ipv6", "net.peer.ip"),
        ("port", "net.peer.port"),
    ):
        value = endpoint.get(key)
        if value is None:
            continue
        expected = int if key == "port" else str
        if isinstance(value, bool) or not isinstance(value, expected):
            raise TraceFormatError(f"unexpected {preview(value)}", where=f"remoteEndpoint.{key}")
        out.setdefault(attribute, plain_value(value, f"remoteEndpoint.{key}"))
    return out
