"""What the importers work out once and reuse: the id of a record's untraced spans (hashed only
when a span needs it), and the meaning of a flattened message key (read once per distinct key)."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay import ReadOptions, read_path
from otel_replay.importers import _messages
from otel_replay.importers._buffer import TraceBuffer, UntracedId
from otel_replay.importers._messages import flattened_messages, normalize_messages, unflatten
from otel_replay.importers._spans import SpanRecord


def _span(span_id: str, trace_id: str, attributes: dict[str, str]) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": "lookup",
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


TOOL = {"openinference.span.kind": "TOOL", "tool.name": "lookup"}
TRACE = "0123456789abcdef0123456789abcdef"


def _untraced(record: bytes) -> str:
    return "untraced-" + hashlib.sha256(record).hexdigest()[:16]


def test_untraced_spans_of_a_json_line_are_named_by_the_line_hash(tmp_path: Path) -> None:
    traced = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        _span("aaaaaaaaaaaaaaaa", TRACE, TOOL)]}]}]}) + b"\n"  # fmt: skip
    untraced = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        _span("bbbbbbbbbbbbbbbb", "", TOOL), _span("cccccccccccccccc", "", TOOL)]}]}]}) + b"\n"  # fmt: skip
    path = tmp_path / "mixed.otlp.jsonl"
    path.write_bytes(traced + untraced)

    ids = sorted(run.id for run in read_path(path))

    assert ids == sorted([TRACE, _untraced(untraced)])


def test_untraced_spans_of_a_protobuf_message_are_named_by_its_hash(tmp_path: Path) -> None:
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for span_id, trace_id in ((b"\x01" * 8, bytes.fromhex(TRACE)), (b"\x02" * 8, b"")):
        span = spans.add(span_id=span_id, trace_id=trace_id, name="lookup")
        for key, value in TOOL.items():
            span.attributes.add(key=key).value.string_value = value
    body = request.SerializeToString()
    path = tmp_path / "mixed.otlp.pb"
    path.write_bytes(struct.pack(">I", len(body)) + body)

    ids = sorted(run.id for run in read_path(path))

    assert ids == sorted([TRACE, _untraced(body)])


def test_a_buffer_files_untraced_spans_under_a_fixed_or_a_computed_id() -> None:
    def span(span_id: str) -> SpanRecord:
        return SpanRecord("", span_id, "", "lookup", 1, 1000, 2000, dict(TOOL))

    buffer = TraceBuffer(ReadOptions(), {})
    record = b'{"resourceSpans": []}'

    assert buffer.add(span("a" * 16), "untraced-phoenix") == "untraced-phoenix"  # as Phoenix does
    assert buffer.add(span("b" * 16), UntracedId(record)) == _untraced(record)


P = "llm.input_messages"
SHAPES: dict[str, dict[str, Any]] = {
    "plain": {f"{P}.0.message.role": "user", f"{P}.0.message.content": "hi", "llm.model": "m"},
    "sparse-and-unordered": {
        f"{P}.10.message.content": "ten",
        f"{P}.2.message.role": "assistant",
        f"{P}.10.message.role": "user",
        f"{P}.2.message.content": "",
    },
    "tool-calls": {
        f"{P}.0.message.role": "assistant",
        f"{P}.0.message.tool_calls.1.tool_call.function.name": "'second'",
        f"{P}.0.message.tool_calls.0.tool_call.id": " call-1 ",
        f"{P}.0.message.tool_calls.0.tool_call.function.name": "first",
        f"{P}.0.message.tool_calls.0.tool_call.function.arguments": '{"a": 1}',
        f"{P}.1.message.role": "tool",
        f"{P}.1.message.tool_call_id": "call-1",
        f"{P}.1.message.content": "done",
    },
    "multi-part-contents": {
        f"{P}.0.message.role": "user",
        f"{P}.0.message.contents.0.message_content.type": "text",
        f"{P}.0.message.contents.0.message_content.text": "look",
        f"{P}.0.message.contents.1.message_content.type": "image",
        f"{P}.0.message.contents.1.message_content.image.image.url": "http://x/y.png",
    },
    "not-a-string-content": {f"{P}.0.message.role": "user", f"{P}.0.message.content": ["a"]},
    "not-an-index": {f"{P}.x.message.role": "user", f"{P}.0.message.role": "system"},
    "index-spelt-twice": {f"{P}.1.message.role": "user", f"{P}.01.message.role": "system"},
    "none": {"llm.model": "m", "input.value": "hello"},
}


@pytest.mark.parametrize("attributes", SHAPES.values(), ids=SHAPES.keys())
def test_flattened_messages_read_as_the_general_path_reads_them(
    attributes: dict[str, Any],
) -> None:
    expected = normalize_messages(unflatten(attributes, P))
    assert flattened_messages(attributes, P) == expected
    assert flattened_messages(dict(attributes), P) == expected  # the keys' meanings remembered


def test_the_remembered_key_meanings_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_messages, "_SLOTS_PER_PREFIX", 10)
    monkeypatch.setattr(_messages, "_SLOTS", {})
    for n in range(50):
        attributes = {f"{P}.{n}.message.role": "user", f"{P}.{n}.message.content": f"m{n}"}
        assert flattened_messages(attributes, P) == [{"role": "user", "content": f"m{n}"}]
        assert len(_messages._SLOTS[P]) <= 12
