"""One OTLP/HTTP request body → spans; spans ↔ bytes, for spans kept waiting; spans → a run.

The receiver (`otel_replay.receiver`) takes spans a request at a time, as the exporter batched them:
a trace's spans arrive over many requests, children before parents. It keeps the spans of a trace
whose root has not come in the store (`span_bytes`, `span_from_bytes`), and builds the run when it
does (`assemble_trace`), exactly as a file reader builds it from the same spans.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import NamedTuple

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.errors import TraceFormatError
from otel_replay.importers._assemble import assemble
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._otlp_json_decode import decode_request
from otel_replay.importers._spans import SpanEvent, SpanRecord
from otel_replay.importers._storable import check_span
from otel_replay.importers.otlp_proto import proto_attributes, proto_span
from otel_replay.model import Trajectory

#: The format a run built from received spans is stored with (it merges as OTLP files do).
_RECEIVED = "otlp-http"


class RequestSpans(NamedTuple):
    """The ``spans`` of one request, and why each span ``rejected`` was."""

    spans: list[SpanRecord]
    rejected: list[TraceFormatError]


def spans_of_request(body: bytes, *, json: bool) -> RequestSpans:
    """The spans of one ``ExportTraceServiceRequest`` (OTLP JSON or protobuf), and why each span it
    could not decode, or that holds what no run can keep (`check_span`), was rejected. Raises
    `TraceFormatError` when the body is not a request."""
    rejected: list[TraceFormatError] = []
    if json:
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise TraceFormatError(f"the body is not JSON ({exc})") from None
        return RequestSpans(_kept(decode_request(document, rejected.append), rejected), rejected)
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise TraceFormatError(f"the body is not an ExportTraceServiceRequest ({exc})") from None
    spans = []
    for resource_spans in request.resource_spans:
        resource = proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                try:
                    spans.append(proto_span(span, resource, scope_spans.scope.name, 0))
                except TraceFormatError as exc:
                    rejected.append(exc)
    return RequestSpans(_kept(spans, rejected), rejected)


def _kept(spans: Iterable[SpanRecord], rejected: list[TraceFormatError]) -> list[SpanRecord]:
    """``spans`` but those `check_span` refuses, which join ``rejected``."""
    kept = []
    for span in spans:
        try:
            check_span(span)
        except TraceFormatError as exc:
            rejected.append(exc)
            continue
        kept.append(span)
    return kept


_FIELDS = [f.name for f in dataclasses.fields(SpanRecord) if f.name not in ("events", "order")]


def span_bytes(span: SpanRecord) -> bytes:
    """``span`` as JSON, to keep it until its trace is built."""
    fields = {name: getattr(span, name) for name in _FIELDS}
    fields["events"] = [(e.name, e.time_unix_nano, e.attributes) for e in span.events]
    return orjson.dumps(fields)


def span_from_bytes(data: bytes) -> SpanRecord:
    """The span `span_bytes` kept."""
    fields = orjson.loads(data)
    fields["events"] = [SpanEvent(*event) for event in fields["events"]]
    return SpanRecord(**fields)


def assemble_trace(
    trajectory_id: str,
    spans: Iterable[SpanRecord],
    source: str,
    outcome_attribute: str | None = None,
) -> Trajectory:
    """The run of one trace from its spans, in the order they arrived, received from ``source``; a
    span delivered twice (OTLP delivery is at least once) counts once. ``outcome_attribute``: the
    root-span attribute holding the run's score (`ReadOptions.outcome_attribute`)."""
    seen: set[str] = set()
    kept: list[SpanRecord] = []
    for span in spans:
        if span.span_id and span.span_id in seen:
            continue
        seen.add(span.span_id)
        span.order = len(kept)  # the spans are the receiver's own, decoded for this run
        kept.append(span)
    options = ReadOptions(outcome_attribute=outcome_attribute)
    return assemble(trajectory_id, kept, options, {"source": source, "format": _RECEIVED})
