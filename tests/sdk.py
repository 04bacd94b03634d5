"""Spans from the real OpenTelemetry SDK, written in every encoding a pipeline produces.

`Recorder` gives a tracer whose spans take explicit timestamps (so step order is known) and land in an
`InMemorySpanExporter`; `encodings` writes them as OTLP JSON Lines (children first, one span per line),
one pretty OTLP JSON document, protobuf's generic JSON printer (base64 ids, enum names, snake_case),
a bare protobuf body and a Collector ``format: proto`` stream.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from otel_replay.otlp_encode import (
    request_to_otlp_json,
    spans_to_request,
    write_otlp_json_lines,
    write_otlp_proto,
    write_otlp_proto_stream,
)

T0 = 1_760_000_000_000_000_000
MS = 1_000_000


class Recorder:
    def __init__(self, service: str = "test-agent", limits: SpanLimits | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service}), span_limits=limits
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests.sdk")
        self.clock = T0

    def tick(self, ms: int = 10) -> int:
        self.clock += ms * MS
        return self.clock

    @contextmanager
    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue] | None = None,
        *,
        error: BaseException | None = None,
    ) -> Iterator[Span]:
        """A span started now (by the fake clock) and ended when the block exits."""
        span = self.tracer.start_span(
            name, attributes=dict(attributes or {}), start_time=self.tick()
        )
        with trace.use_span(span, end_on_exit=False):
            yield span
        if error is not None:
            span.record_exception(error, timestamp=self.tick(1), escaped=True)
            span.set_status(Status(StatusCode.ERROR, str(error)))
        span.end(end_time=self.tick())

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()


def encodings(spans: tuple[ReadableSpan, ...], directory: Path) -> dict[str, Path]:
    """Write ``spans`` (in SDK end order: children before parents) in every encoding."""
    directory.mkdir(parents=True, exist_ok=True)
    per_span = [spans_to_request([s]) for s in spans]
    whole = spans_to_request(spans)
    paths = {
        "otlp-jsonl": directory / "spans.otlp.jsonl",
        "otlp-json-pretty": directory / "spans.otlp.json",
        "generic-json-printer": directory / "spans.generic.json",
        "proto-body": directory / "spans.pb",
        "proto-stream": directory / "spans.stream.pb",
    }
    write_otlp_json_lines(per_span, paths["otlp-jsonl"])
    paths["otlp-json-pretty"].write_bytes(
        orjson.dumps(request_to_otlp_json(whole), option=orjson.OPT_INDENT_2)
    )
    paths["generic-json-printer"].write_text(
        json_format.MessageToJson(whole, preserving_proto_field_name=True)
    )
    write_otlp_proto(whole, paths["proto-body"])
    write_otlp_proto_stream(per_span, paths["proto-stream"])
    return paths


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()
