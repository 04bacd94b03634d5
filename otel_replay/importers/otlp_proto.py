"""OTLP protobuf: a bare ``ExportTraceServiceRequest`` body (what OTLP/HTTP sends) or the Collector file
exporter's ``format: proto`` stream (each message prefixed by its 4-byte big-endian length).

Decoding is protobuf's own (``ParseFromString``); this module only walks the decoded messages. Large
streams, and every gzip stream, are scanned first with a message type that declares nothing but
``trace_id`` (protobuf skips the rest without building it), so each trace is assembled right after the
last message that mentions it. No message longer than ``max_record_bytes`` is read into memory.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.errors import TraceFormatError
from otel_replay.importers._buffer import TraceBuffer, UntracedId
from otel_replay.importers._framing import PREFIX, is_length_prefixed
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._source import is_compressed, open_trace_file
from otel_replay.importers._spans import SpanEvent, SpanRecord, json_safe_float
from otel_replay.model import Trajectory

#: Streams larger than this (on disk) are scanned first; gzip streams always are.
TWO_PASS_THRESHOLD_BYTES = 32 * 1024 * 1024
_HEAD_BYTES = 4096


def read_otlp_proto(path: str | Path, options: ReadOptions | None = None) -> Iterator[Trajectory]:
    """Yield the trajectories of an OTLP protobuf file (bare request or length-prefixed stream)."""
    path = Path(path)
    options = options or ReadOptions()
    size = path.stat().st_size
    compressed = is_compressed(path)
    with open_trace_file(path) as (stream, _):
        head = stream.read(_HEAD_BYTES)
    # a compressed file's size says nothing about the length of its first message
    if is_length_prefixed(head, 1 << 62 if compressed else size):
        two_pass = compressed or size > TWO_PASS_THRESHOLD_BYTES
        last = _last_messages(path, options.max_record_bytes) if two_pass else None
        yield from _read_stream(path, options, last)
        return
    with open_trace_file(path) as (stream, raw):
        data = stream.read(options.max_record_bytes + 1)
        if options.progress:
            options.progress(raw.tell())
    if len(data) > options.max_record_bytes:
        raise options.too_large("a protobuf request").located(path=path, offset=0)
    try:
        spans = list(_spans(_parse(data, path, 0), 0))
    except TraceFormatError as exc:
        raise exc.located(path=path, offset=0) from None
    buffer = TraceBuffer(options, {"source": str(path), "format": "otlp-proto"})
    options.report.records += 1
    untraced = UntracedId(data)
    for span in spans:
        buffer.add(span, untraced)
    yield from buffer.drain()


def _frames(path: Path, options: ReadOptions) -> Iterator[tuple[int, bytes]]:
    """Yield ``(byte offset, message bytes)`` of a length-prefixed stream. A message longer than
    ``options.max_record_bytes`` is refused, or (skipping invalid records) read past, never held."""
    limit = options.max_record_bytes
    with open_trace_file(path) as (stream, raw):
        offset = 0
        count = 0
        while True:
            prefix = stream.read(4)
            if not prefix:
                break
            if len(prefix) < 4:
                raise TraceFormatError(
                    f"protobuf data is cut off inside a length prefix ({len(prefix)} of 4 bytes)",
                    path=path,
                    offset=offset,
                )
            (length,) = PREFIX.unpack(prefix)
            if length > limit:
                error = options.too_large(f"a protobuf message of {length} bytes")
                options.invalid(error.located(path=path, offset=offset))
                body, got = b"", _read_past(stream, length)
            else:
                body = stream.read(length)
                got = len(body)
            if got < length:
                raise TraceFormatError(
                    f"protobuf data is cut off: a message of {length} bytes ends after {got} bytes",
                    path=path,
                    offset=offset,
                )
            if length <= limit:
                yield offset, body
            offset += 4 + length
            count += 1
            if options.progress and count % 16 == 0:
                options.progress(raw.tell())
        if options.progress:
            options.progress(raw.tell())


def _read_stream(
    path: Path, options: ReadOptions, last: dict[bytes, int] | None
) -> Iterator[Trajectory]:
    buffer = TraceBuffer(options, {"source": str(path), "format": "otlp-proto-stream"})
    order = 0
    for number, (offset, body) in enumerate(_frames(path, options)):
        try:
            spans = list(_spans(_parse(body, path, offset), order))
        except TraceFormatError as exc:
            options.invalid(exc.located(path=path, offset=offset))
            continue
        options.report.records += 1
        untraced = UntracedId(body)
        touched: set[str] = set()
        for span in spans:
            key = buffer.add(span, untraced, offset=offset)
            if key is not None:
                touched.add(key)
            order += 1
        if last is not None:
            for key in sorted(touched):
                if key.startswith("untraced-") or last.get(bytes.fromhex(key), -1) <= number:
                    yield buffer.pop(key)
    yield from buffer.drain()


def _parse(data: bytes, path: Path, offset: int) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:
        raise TraceFormatError(
            f"not an OTLP protobuf ExportTraceServiceRequest ({exc})", path=path, offset=offset
        ) from None
    return request


def _spans(request: ExportTraceServiceRequest, order: int) -> Iterator[SpanRecord]:
    for resource_spans in request.resource_spans:
        resource = proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            for pb2_span in scope_spans.spans:
                yield proto_span(pb2_span, resource, scope_name, order)
                order += 1


def _hex(raw: bytes) -> str:
    return "" if not raw.strip(b"\x00") else raw.hex()


_MAX_TIME = (1 << 63) - 1


def proto_span(pb2_span: Span, resource: dict[str, Any], scope_name: str, order: int) -> SpanRecord:
    """One protobuf span, decoded (its resource's attributes already are)."""
    for value in (pb2_span.start_time_unix_nano, pb2_span.end_time_unix_nano):
        if value > _MAX_TIME:
            raise TraceFormatError(
                f"span {pb2_span.name!r}: timestamp {value} is out of range (0 to 2**63 - 1 ns)"
            )
    return SpanRecord(
        trace_id=_hex(pb2_span.trace_id),
        span_id=_hex(pb2_span.span_id),
        parent_span_id=_hex(pb2_span.parent_span_id),
        name=pb2_span.name,
        kind=pb2_span.kind,
        start_time_unix_nano=pb2_span.start_time_unix_nano,
        end_time_unix_nano=pb2_span.end_time_unix_nano,
        attributes=proto_attributes(pb2_span.attributes),
        status_code=pb2_span.status.code,
        status_message=pb2_span.status.message,
        events=[
            SpanEvent(e.name, e.time_unix_nano, proto_attributes(e.attributes))
            for e in pb2_span.events
        ],
        resource=resource,
        scope_name=scope_name,
        order=order,
    )


def proto_attributes(items: Any) -> dict[str, Any]:
    """Attributes as a plain dict of JSON data."""
    out: dict[str, Any] = {}
    for kv in items:
        value = kv.value
        # Most values are strings: take them without a call per attribute.
        if value.WhichOneof("value") == "string_value":
            out[kv.key] = value.string_value
        else:
            out[kv.key] = proto_value(value)
    return out


def proto_value(value: AnyValue) -> Any:
    """One attribute value as JSON data."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        return json_safe_float(value.double_value)
    if which == "bool_value":
        return value.bool_value
    if which == "array_value":
        return [proto_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return proto_attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


# --- scan pass: a message type that knows only trace ids --------------------------------------------


def _trace_id_only_type() -> Any:
    """Build ``Req{repeated RS 1} RS{repeated SS 2} SS{repeated S 2} S{bytes trace_id 1}`` at runtime."""
    file = descriptor_pb2.FileDescriptorProto(
        name="otel_replay_scan.proto", package="otel_replay_scan"
    )
    layout = (("Req", 1, "RS"), ("RS", 2, "SS"), ("SS", 2, "S"))
    for name, number, child in layout:
        message = file.message_type.add(name=name)
        message.field.add(
            name="items",
            number=number,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
            type_name=f".otel_replay_scan.{child}",
        )
    span = file.message_type.add(name="S")
    span.field.add(
        name="trace_id",
        number=1,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("otel_replay_scan.Req"))


def _read_past(stream: BinaryIO, length: int) -> int:
    """Read and drop ``length`` bytes a chunk at a time; return how many there were."""
    got = 0
    while got < length and (chunk := stream.read(min(length - got, 1 << 20))):
        got += len(chunk)
    return got


def _last_messages(path: Path, limit: int) -> dict[bytes, int]:
    """Scan pass: the index of the last message that carries a span of each trace."""
    scan_type = _trace_id_only_type()
    last: dict[bytes, int] = {}
    # a message over the limit is passed over here: the decoding pass refuses or skips it
    frames = _frames(path, ReadOptions(skip_invalid=True, max_record_bytes=limit))
    for number, (_, body) in enumerate(frames):
        try:
            request = scan_type.FromString(body)
        except DecodeError:
            continue  # the decoding pass reports it with its offset
        for resource_spans in request.items:
            for scope_spans in resource_spans.items:
                for span in scope_spans.items:
                    last[span.trace_id] = number
    return last
