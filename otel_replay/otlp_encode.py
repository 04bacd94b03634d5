"""Write traces the way an OpenTelemetry pipeline would: OTLP JSON, JSON Lines and protobuf.

The contract:

* :func:`request_to_otlp_json` turns an ``ExportTraceServiceRequest`` into the OTLP JSON mapping
  of the OTLP specification ("JSON Protobuf Encoding"), which is *not* the generic protobuf JSON
  mapping: keys are lowerCamelCase, trace/span/parent ids (also in links) are lower-case hex, enums
  are integers, 64-bit integers (timestamps, ``intValue``) are decimal strings, fields at their
  default are omitted, other ``bytes`` (``bytesValue``) are standard base64, and non-finite doubles
  are the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``. A set oneof member is always written,
  even at its default (``{"stringValue": ""}``), so an empty ``AnyValue`` stays ``{}``.
* :func:`write_otlp_json_lines` writes one compact object per line, ``\\n`` terminated, like the
  Collector file exporter with ``format: json``.
* :func:`write_otlp_proto_stream` writes the Collector file exporter ``format: proto`` framing: per
  message a 4-byte big-endian unsigned length, then the serialized request.
* :func:`write_otlp_proto` writes one bare serialized request (an OTLP/HTTP protobuf body).

Output is a pure function of the input messages, so fixtures generated with it are byte-stable.
"""

from __future__ import annotations

import base64
import math
import os
import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "request_to_otlp_json",
    "spans_to_request",
    "write_otlp_json_lines",
    "write_otlp_proto",
    "write_otlp_proto_stream",
]

PathLike = str | os.PathLike[str]

# OTLP overrides the protobuf JSON mapping for exactly these bytes fields (Span, Span.Link,
# LogRecord); matching by name keeps the walker generic over every OTLP message type.
_HEX_ID_FIELDS = frozenset({"trace_id", "span_id", "parent_span_id"})

_INT64_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_FLOAT_TYPES = frozenset({FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})

# The length prefix is an unsigned 32-bit integer; a bigger message cannot be framed.
_MAX_FRAME = 0xFFFFFFFF


def request_to_otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """Return the OTLP JSON object (``{"resourceSpans": [...]}``) for one export request."""
    return _message_to_json(request)


def _message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # ListFields yields only populated fields (plus set oneof members) in field-number order,
    # which gives "defaults omitted" for free and a stable key order.
    for field, value in message.ListFields():
        if field.is_repeated:
            out[field.json_name] = [_scalar_or_message(field, item) for item in value]
        else:
            out[field.json_name] = _scalar_or_message(field, value)
    return out


def _scalar_or_message(field: FieldDescriptor, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.GetOptions().map_entry:
            # No OTLP message has a map field; refusing beats silently emitting a wrong shape.
            raise TypeError(f"map field {field.full_name} is not part of OTLP")
        return _message_to_json(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        data = bytes(value)
        if field.name in _HEX_ID_FIELDS:
            return data.hex()
        return base64.b64encode(data).decode("ascii")
    if kind in _INT64_TYPES:
        # Nanosecond timestamps exceed 2**53; a JSON number would lose digits in JavaScript readers.
        return str(int(value))
    if kind in _FLOAT_TYPES:
        number = float(value)
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return number
    # Enums are already plain ints (OTLP requires integers, not names); bool/str/int32 pass through.
    return value


def spans_to_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """Encode finished SDK spans exactly as the OTLP exporters of the Python SDK would."""
    # Imported here because it pulls in the SDK, which only callers holding SDK spans need.
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans)


def _json_line(request: ExportTraceServiceRequest) -> bytes:
    return orjson.dumps(request_to_otlp_json(request)) + b"\n"


def write_otlp_json_lines(requests: Iterable[ExportTraceServiceRequest], path: PathLike) -> None:
    """Write one compact OTLP JSON object per request and line (Collector ``format: json``)."""
    with open(path, "wb") as out:
        out.writelines(_json_line(request) for request in requests)


def _serialize(request: ExportTraceServiceRequest) -> bytes:
    # deterministic=True pins the byte order of anything unordered, so fixtures are reproducible.
    body: bytes = request.SerializeToString(deterministic=True)
    return body


def write_otlp_proto_stream(requests: Iterable[ExportTraceServiceRequest], path: PathLike) -> None:
    """Write length-prefixed serialized requests (Collector file exporter ``format: proto``)."""
    with open(path, "wb") as out:
        for request in requests:
            body = _serialize(request)
            if len(body) > _MAX_FRAME:
                raise ValueError(
                    f"request of {len(body)} bytes does not fit a 4-byte length prefix"
                )
            out.write(struct.pack(">I", len(body)))
            out.write(body)


def write_otlp_proto(request: ExportTraceServiceRequest, path: PathLike) -> None:
    """Write one bare serialized ``ExportTraceServiceRequest`` (no framing)."""
    with open(path, "wb") as out:
        out.write(_serialize(request))
