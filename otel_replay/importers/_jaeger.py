"""Jaeger's JSON, decoded to `SpanRecord`s: what the Jaeger UI downloads and its query API answers.

Shapes read:

* the query API's answer to ``GET /api/traces?service=…`` and ``GET /api/traces/{id}``:
  ``{"data": [trace, ...], "total", "limit", "offset", "errors"}`` (the UI's "Download JSON" is the
  same document);
* one trace (``{"traceID", "spans", "processes", "warnings"}``) or a list of them;
* a list of spans each holding its ``process`` (Jaeger's storage model, as its anonymizer writes);
* API v3 (``/api/v3/traces…``): ``{"result": <OTLP JSON>}``, a line each in a stream, read by the
  OTLP decoder.

A span: ``traceID`` and ``spanID`` hex (a 64-bit trace id is the low half of a 128-bit one),
``operationName``, ``references`` (``CHILD_OF`` / ``FOLLOWS_FROM``; the parent is the first
``CHILD_OF`` of the same trace, else the first ``FOLLOWS_FROM``, as Jaeger reads them), ``startTime``
and ``duration`` in microseconds, typed ``tags`` (``string``, ``bool``, ``int64``, ``float64``,
``binary``: base64 text, kept as text), ``logs`` (span events: the ``event`` field names one),
``processID`` into the trace's ``processes``, whose ``serviceName`` and tags are the resource.
The tags Jaeger writes for what OTLP holds elsewhere are read back there: ``span.kind``,
``otel.status_code`` and ``otel.status_description`` (else ``error=true`` is an error status),
``otel.scope.name``; they are not attributes.

A value of the wrong type makes its span invalid: `TraceFormatError` naming its position
(``data[0].spans[2].startTime``), raised or, with ``skip_invalid``, counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.importers._otlp_json_decode import decode_request
from otel_replay.importers._spans import (
    STATUS_ERROR,
    STATUS_OK,
    STATUS_UNSET,
    SpanEvent,
    SpanRecord,
)
from otel_replay.importers._values import KINDS, plain_value, text

JAEGER_FORMAT = "jaeger"

Invalid = Callable[[TraceFormatError], None]

_ANSWER_KEYS = frozenset({"data", "total", "limit", "offset", "errors"})
_HEX = re.compile(r"[0-9a-fA-F]{1,32}")
_INTEGER = re.compile(r"-?[0-9]{1,20}")
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?|NaN|Infinity)")
_MAX_MICROS = ((1 << 63) - 1) // 1000
#: Tags that say what OTLP keeps outside the attributes.
_KIND, _STATUS, _DESCRIPTION = "span.kind", "otel.status_code", "otel.status_description"
_SCOPE_NAMES = ("otel.scope.name", "otel.library.name")
_SCOPE_OTHER = ("otel.scope.version", "otel.library.version")


def is_jaeger(document: Any) -> bool:
    """One of the shapes of the module docstring."""
    if isinstance(document, list):
        return any(_is_trace(item) or _is_span(item) for item in document)
    if not isinstance(document, dict):
        return False
    if _is_v3(document):
        return True
    data = document.get("data")
    if isinstance(data, list) and set(document) <= _ANSWER_KEYS:
        return any(_is_trace(item) for item in data) or ("total" in document and not data)
    return _is_trace(document)


def _is_v3(document: dict[str, Any]) -> bool:
    result = document.get("result")
    return (
        set(document) == {"result"}
        and isinstance(result, dict)
        and any(key in result for key in ("resourceSpans", "resource_spans"))
    )


def _is_trace(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("spans"), list)
        and (isinstance(item.get("processes"), dict) or isinstance(item.get("traceID"), str))
    )


def _is_span(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "spanID" in item
        and "traceID" in item
        and ("operationName" in item or "references" in item)
    )


def decode_jaeger(document: Any, invalid: Invalid) -> Iterator[SpanRecord]:
    """Yield the spans of a Jaeger document; a span that cannot be decoded goes to ``invalid``
    (which raises, or records and skips it) with its position."""
    if isinstance(document, dict) and _is_v3(document):
        yield from decode_request(document["result"], _at("result", invalid))
        return
    order = 0
    for where, trace in _traces(document):
        for span in _trace_spans(where, trace, invalid, order):
            order += 1
            yield span


def _at(prefix: str, invalid: Invalid) -> Invalid:
    def located(exc: TraceFormatError) -> None:
        invalid(
            TraceFormatError(exc.reason, where=f"{prefix}.{exc.where}" if exc.where else prefix)
        )

    return located


def _traces(document: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, trace)`` for each trace; a list of spans is one trace without processes."""
    if isinstance(document, dict) and "data" in document and "spans" not in document:
        errors = document.get("errors")
        data = document["data"]
        if errors and not data:
            raise TraceFormatError(f"Jaeger answered with errors, no traces: {preview(errors)}")
        if not isinstance(data, list):
            raise TraceFormatError(f"expected a list of traces, got {preview(data)}", where="data")
        entries = [(f"data[{i}]", item) for i, item in enumerate(data)]
    elif isinstance(document, list):
        entries = [(f"[{i}]", item) for i, item in enumerate(document)]
        if not any(_is_trace(item) for _, item in entries):  # spans that hold their process
            yield "", {"spans": document}
            return
    else:
        entries = [("", document)]
    for where, item in entries:
        if not isinstance(item, dict) or not isinstance(item.get("spans"), list):
            raise TraceFormatError(
                f"expected a trace (an object with a 'spans' list), got {preview(item)}",
                where=where or None,
            )
        yield where, item


def _trace_spans(
    where: str, trace: dict[str, Any], invalid: Invalid, first_order: int
) -> Iterator[SpanRecord]:
    prefix = f"{where}." if where else ""
    processes = trace.get("processes") or {}
    if not isinstance(processes, dict):
        raise TraceFormatError(
            f"expected an object of processes, got {preview(processes)}", where=f"{prefix}processes"
        )
    resources: dict[str, dict[str, Any]] = {}
    for i, span in enumerate(trace["spans"]):
        at = f"{prefix}spans[{i}]"
        try:
            yield _span(span, processes, resources, first_order + i)
        except TraceFormatError as exc:
            invalid(TraceFormatError(exc.reason, where=f"{at}.{exc.where}" if exc.where else at))


def _span(
    span: Any,
    processes: dict[str, Any],
    resources: dict[str, dict[str, Any]],
    order: int,
) -> SpanRecord:
    if not isinstance(span, dict):
        raise TraceFormatError(f"a span must be an object, got {preview(span)}")
    trace_id = hex_id(span.get("traceID"), 16, "traceID")
    span_id = hex_id(span.get("spanID"), 8, "spanID")
    if not trace_id or not span_id:
        raise TraceFormatError("a span needs a traceID and a spanID", where=_missing(span))
    name = span.get("operationName", "")
    if not isinstance(name, str):
        raise TraceFormatError(f"expected text, got {preview(name)}", where="operationName")
    start = micros(span.get("startTime"), "startTime")
    duration = micros(span.get("duration"), "duration")
    tags = typed_values(span.get("tags"), "tags")
    kind = tags.pop(_KIND, None)
    code, message = status(tags)
    scope = next((tags.pop(key) for key in _SCOPE_NAMES if key in tags), "")
    for key in _SCOPE_OTHER:
        tags.pop(key, None)
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_parent(span.get("references"), trace_id),
        name=text(name, "operationName"),
        kind=KINDS.get(kind.upper(), 0) if isinstance(kind, str) else 0,
        start_time_unix_nano=start * 1000,
        end_time_unix_nano=(start + duration) * 1000 if start else 0,
        attributes=tags,
        status_code=code,
        status_message=message,
        events=[_event(log, f"logs[{i}]") for i, log in enumerate(_list(span, "logs"))],
        resource=_resource(span, processes, resources),
        scope_name=scope if isinstance(scope, str) else str(scope),
        order=order,
    )


def _missing(span: dict[str, Any]) -> str:
    return "traceID" if not span.get("traceID") else "spanID"


def hex_id(raw: Any, n_bytes: int, key: str) -> str:
    """An id of up to ``2 * n_bytes`` hex digits, left-padded ('' when unset or all zeros)."""
    if raw is None or raw == "":
        return ""
    if not isinstance(raw, str) or not _HEX.fullmatch(raw) or len(raw) > 2 * n_bytes:
        raise TraceFormatError(
            f"{key} {preview(raw)} is not an id of up to {2 * n_bytes} hex digits", where=key
        )
    value = raw.lower().rjust(2 * n_bytes, "0")
    return "" if not value.strip("0") else value


def micros(value: Any, key: str) -> int:
    """A time or duration in whole microseconds (0 when absent)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_MICROS:
        raise TraceFormatError(
            f"expected whole microseconds from 0 to 2**63 ns, got {preview(value)}", where=key
        )
    return value


def _list(item: dict[str, Any], key: str) -> list[Any]:
    value = item.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TraceFormatError(f"expected a list, got {preview(value)}", where=key)
    return value


def typed_values(values: Any, where: str) -> dict[str, Any]:
    """Jaeger's typed key/values (``{"key", "type", "value"}``) as attributes."""
    if values is None:
        return {}
    if not isinstance(values, list):
        raise TraceFormatError(f"expected a list, got {preview(values)}", where=where)
    out: dict[str, Any] = {}
    for i, tag in enumerate(values):
        at = f"{where}[{i}]"
        if not isinstance(tag, dict) or not isinstance(tag.get("key"), str):
            raise TraceFormatError(f"expected {{key, type, value}}, got {preview(tag)}", where=at)
        out[text(tag["key"], f"{at}.key")] = _typed(tag.get("type"), tag.get("value"), at)
    return out


def _typed(kind: Any, value: Any, where: str) -> Any:
    kind = kind.lower() if isinstance(kind, str) else "string"
    at = f"{where}.value"
    if kind == "bool" and isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if kind == "int64" and isinstance(value, str) and _INTEGER.fullmatch(value):
        value = int(value)  # beyond 2**53 the UI's JSON writes it as text
    if kind == "float64" and isinstance(value, str) and _FLOAT.fullmatch(value):
        value = float(value)
    expected = {
        "bool": (bool,),
        "int64": (int,),
        "float64": (int, float),
        "string": (str,),
        "binary": (str,),
    }.get(kind)
    if expected is None:
        raise TraceFormatError(f"unknown tag type {preview(kind)}", where=f"{where}.type")
    if not isinstance(value, expected) or (kind != "bool" and isinstance(value, bool)):
        raise TraceFormatError(f"a {kind} tag holds {preview(value)}", where=at)
    return plain_value(value, at)


def status(tags: dict[str, Any]) -> tuple[int, str]:
    """The status the tags say, taking them out: ``otel.status_code`` with its description, else
    an ``error`` tag that is true."""
    code, description = tags.pop(_STATUS, None), tags.pop(_DESCRIPTION, None)
    message = description if isinstance(description, str) else ""
    if isinstance(code, str) and code.upper() in ("OK", "ERROR"):
        tags.pop("error", None)
        return (STATUS_OK if code.upper() == "OK" else STATUS_ERROR), message
    if tags.get("error") is True:
        del tags["error"]
        return STATUS_ERROR, message
    if tags.get("error") is False:
        del tags["error"]
    return STATUS_UNSET, message


def _parent(references: Any, trace_id: str) -> str:
    if references is None:
        return ""
    if not isinstance(references, list):
        raise TraceFormatError(f"expected a list, got {preview(references)}", where="references")
    found: dict[str, str] = {}
    for i, ref in enumerate(references):
        at = f"references[{i}]"
        if not isinstance(ref, dict):
            raise TraceFormatError(f"expected a reference, got {preview(ref)}", where=at)
        kind = ref.get("refType", "CHILD_OF")
        if kind not in ("CHILD_OF", "FOLLOWS_FROM"):
            raise TraceFormatError(f"unknown refType {preview(kind)}", where=f"{at}.refType")
        ref_trace = hex_id(ref.get("traceID"), 16, f"{at}.traceID")
        span_id = hex_id(ref.get("spanID"), 8, f"{at}.spanID")
        if span_id and ref_trace in ("", trace_id):
            found.setdefault(kind, span_id)
    return found.get("CHILD_OF") or found.get("FOLLOWS_FROM") or ""


def _event(log: Any, where: str) -> SpanEvent:
    if not isinstance(log, dict):
        raise TraceFormatError(f"expected a log, got {preview(log)}", where=where)
    fields = typed_values(log.get("fields"), f"{where}.fields")
    name = fields.pop("event", "")
    return SpanEvent(
        name=name if isinstance(name, str) else str(name),
        time_unix_nano=micros(log.get("timestamp"), f"{where}.timestamp") * 1000,
        attributes=fields,
    )


def _resource(
    span: dict[str, Any], processes: dict[str, Any], resources: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The span's process as a resource: its own ``process``, or ``processID`` into the trace's."""
    if "process" in span:
        return _process(span["process"], "process")
    key = span.get("processID")
    if key is None:
        return {}
    if not isinstance(key, str) or key not in processes:
        raise TraceFormatError(
            f"processID {preview(key)} is not among the trace's processes", where="processID"
        )
    if key not in resources:
        resources[key] = _process(processes[key], f"processes.{key}")
    return dict(resources[key])


def _process(process: Any, where: str) -> dict[str, Any]:
    if not isinstance(process, dict):
        raise TraceFormatError(f"expected a process, got {preview(process)}", where=where)
    out = typed_values(process.get("tags"), f"{where}.tags")
    service = process.get("serviceName")
    if isinstance(service, str) and service:
        out["service.name"] = text(service, f"{where}.serviceName")
    return out
