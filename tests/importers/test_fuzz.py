"""Fuzzing every reader: whatever the bytes, the answer is trajectories or the project's own error.

Traces hold arbitrary model output and arrive from anywhere, so no input may end in anything but
success (runs the store can hold: hashed, summarized, serialized) or a `TraceFormatError` (file, line
or offset, what was wrong). Inputs are generated three ways: plausible documents with hostile values
(hypothesis strategies for OTLP JSON, native JSONL, the span dumps SDK console exporters print,
flat span lists and any-agent traces),
OTLP protobuf requests (bare and length-prefixed, built from what protobuf can hold), and byte-level
mutations of the published samples and of protobuf encodings. The default tier runs a small number
of examples; the ``fuzz`` tier (``pytest -m fuzz``, run by CI) runs many more.
"""

from __future__ import annotations

import base64
import gzip
import json
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay import ReadOptions, TraceFormatError, read_path
from otel_replay.hashing import canonical_json
from otel_replay.otlp_encode import write_otlp_proto, write_otlp_proto_stream
from otel_replay.store._trajectories import summarize
from tests.conftest import CORPUS, SAMPLES

FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Values a hostile or buggy producer might put anywhere.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(["--5", "1e3", "0x10", "18446744073709551616", "9" * 40, "", "NaN", "\x1b[2J"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
ids = st.one_of(
    st.sampled_from(["0123456789abcdef0123456789abcdef", "00f067aa0ba902b7", ""]),
    st.text(alphabet="0123456789abcdefABCDEF", max_size=34),
    st.binary(max_size=20).map(lambda b: base64.b64encode(b).decode()),
    json_values,
)
any_values = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.one_of(st.text(max_size=40), json_values)),
    st.builds(lambda v: {"intValue": v}, json_values),
    st.builds(lambda v: {"doubleValue": v}, json_values),
    st.builds(lambda v: {"boolValue": v}, json_values),
    st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(json_values, max_size=3)),
    st.builds(lambda v: {"kvlistValue": {"values": v}}, json_values),
    json_values,
)
attribute_keys = st.one_of(
    st.sampled_from(
        [
            "openinference.span.kind",
            "gen_ai.operation.name",
            "tool.name",
            "llm.model_name",
            "llm.input_messages.0.message.role",
            "llm.input_messages.0.message.content",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
            "input.value",
            "output.value",
            "gen_ai.input.messages",
            "traceloop.entity.output",
            "agent_replay.outcome",
            "retrieval.documents.0.document.content",
        ]
    ),
    st.text(max_size=20),
)
attributes = (
    st.lists(st.fixed_dictionaries({"key": attribute_keys, "value": any_values}), max_size=6)
    | json_values
)
spans = st.fixed_dictionaries(
    {
        "traceId": ids,
        "spanId": ids,
        "name": st.one_of(st.text(max_size=20), json_values),
        "startTimeUnixNano": st.one_of(json_values, st.integers(min_value=0, max_value=2**70)),
        "endTimeUnixNano": st.one_of(json_values, st.integers(min_value=0, max_value=2**70)),
        "attributes": attributes,
    },
    optional={
        "parentSpanId": ids,
        "kind": json_values,
        "status": json_values,
        "events": st.one_of(
            json_values,
            st.lists(
                st.fixed_dictionaries({"name": json_values, "attributes": attributes}), max_size=2
            ),
        ),
    },
)
otlp_documents = st.one_of(
    st.builds(
        lambda s: {"resourceSpans": [{"scopeSpans": [{"spans": s}]}]}, st.lists(spans, max_size=4)
    ),
    st.builds(lambda v: {"resourceSpans": v}, json_values),
    json_values,
)
native_lines = st.one_of(
    st.fixed_dictionaries(
        {"trajectory_id": st.one_of(st.text(min_size=1, max_size=8), json_values)},
        optional={
            "steps": st.one_of(
                json_values,
                st.lists(
                    st.dictionaries(
                        st.sampled_from(
                            [
                                "kind",
                                "name",
                                "inputs",
                                "output",
                                "status",
                                "error",
                                "start_time_unix_nano",
                                "span_id",
                                "resamplable",
                                "index",
                                "hash",
                            ]
                        ),
                        json_values,
                    ),
                    max_size=3,
                ),
            ),
            "spans": json_values,
            "metadata": json_values,
            "outcome": json_values,
            "final_hash": st.one_of(json_values, st.just("0" * 64)),
            "kind": st.sampled_from(["tool", "llm", "robot"]),
            "name": json_values,
        },
    ),
    json_values,
)


# --- span dumps (docs/importing.md, "What it reads"): what SDK console exporters print ------------

# Only the Python decoder (used for objects written back to back) lets these through: NaN and
# Infinity literals, integers beyond 64 bits kept exact, and lone surrogates from ``\\ud800`` escapes.
dump_scalars = st.one_of(
    scalars,
    st.sampled_from(
        ["\ud800", float("nan"), float("inf"), float("-inf"), 2**63, 2**64, -(2**63) - 1, 2**100]
    ),
)
dump_values = st.recursive(
    dump_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
dump_ids = st.one_of(
    ids,
    st.binary(min_size=8, max_size=16).map(lambda b: "0x" + b.hex()),
    st.uuids().map(str),
)
hrtimes = st.one_of(
    st.tuples(st.integers(0, 2**33), st.integers(0, 999_999_999)).map(list),
    st.lists(st.one_of(st.integers(-(2**70), 2**70), scalars), max_size=3),
    st.sampled_from([[2**64, 0], [0, 10**9], [-1, 0], [9_223_372_036, 854_775_808], [1, "1e3"]]),
)
iso_times = st.builds(
    lambda moment, zulu: moment.isoformat().replace("+00:00", "Z" if zulu else "+00:00"),
    st.datetimes(
        timezones=st.sampled_from(
            [None, timezone.utc, timezone(timedelta(hours=14)), timezone(-timedelta(hours=23))]
        )
    ),
    st.booleans(),
)
dump_times = st.one_of(hrtimes, iso_times, st.integers(-(2**70), 2**70), dump_values)
dump_attributes = st.one_of(st.dictionaries(attribute_keys, dump_values, max_size=6), dump_values)
dump_kinds = st.one_of(
    st.integers(0, 5), st.sampled_from(["SpanKind.CLIENT", "SERVER", "INTERNAL"]), dump_values
)
js_statuses = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "code": st.one_of(st.integers(0, 2), st.sampled_from(["ERROR", "STATUS_CODE_OK"])),
            "message": st.one_of(st.text(max_size=10), dump_values),
        },
    ),
    dump_values,
)
js_events = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"name": st.one_of(st.text(max_size=10), dump_values), "time": dump_times},
            optional={"attributes": dump_attributes, "droppedAttributesCount": dump_values},
        ),
        max_size=3,
    ),
    dump_values,
)
js_contexts = st.one_of(
    st.fixed_dictionaries(
        {"traceId": dump_ids, "spanId": dump_ids}, optional={"traceFlags": dump_values}
    ),
    dump_values,
)
resources = st.one_of(
    st.fixed_dictionaries({"attributes": dump_attributes}, optional={"schema_url": dump_values}),
    dump_attributes,
)
# the OpenTelemetry JS ``ReadableSpan`` (what ``JSON.stringify(span)`` prints)
js_spans = st.fixed_dictionaries(
    {
        "name": st.one_of(st.text(max_size=12), dump_values),
        "spanContext": js_contexts,
        "startTime": dump_times,
        "endTime": dump_times,
        "attributes": dump_attributes,
    },
    optional={
        "parentSpanId": dump_ids,
        "parentSpanContext": js_contexts,
        "kind": dump_kinds,
        "status": js_statuses,
        "events": js_events,
        "links": dump_values,
        "resource": resources,
        "duration": hrtimes,
        "ended": dump_values,
    },
)
# the OpenTelemetry JS ``ConsoleSpanExporter`` line (no span context object: refused, never a crash)
js_console_spans = st.fixed_dictionaries(
    {
        "traceId": dump_ids,
        "id": dump_ids,
        "name": st.one_of(st.text(max_size=12), dump_values),
        "timestamp": st.one_of(st.integers(0, 2**62), dump_values),
        "duration": st.one_of(st.integers(0, 2**40), dump_values),
        "attributes": dump_attributes,
        "status": js_statuses,
        "events": js_events,
    },
    optional={
        "parentId": dump_ids,
        "parentSpanContext": js_contexts,
        "kind": dump_kinds,
        "resource": resources,
        "instrumentationScope": dump_values,
        "links": dump_values,
    },
)
# the Python SDK ``ConsoleSpanExporter`` (``span.to_json()``); Phoenix adds ``span_kind``
python_spans = st.fixed_dictionaries(
    {
        "name": st.one_of(st.text(max_size=12), dump_values),
        "context": st.one_of(
            st.fixed_dictionaries(
                {"trace_id": dump_ids, "span_id": dump_ids, "trace_state": st.just("[]")}
            ),
            dump_values,
        ),
        "kind": dump_kinds,
        "parent_id": st.one_of(st.none(), dump_ids),
        "start_time": st.one_of(iso_times, dump_times),
        "end_time": st.one_of(iso_times, dump_times),
        "status": st.one_of(
            st.fixed_dictionaries(
                {"status_code": st.one_of(st.sampled_from(["UNSET", "OK", "ERROR"]), dump_values)},
                optional={"description": dump_values},
            ),
            dump_values,
        ),
        "attributes": dump_attributes,
        "events": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "name": st.one_of(st.text(max_size=10), dump_values),
                        "timestamp": st.one_of(iso_times, dump_times),
                        "attributes": dump_attributes,
                    }
                ),
                max_size=2,
            ),
            dump_values,
        ),
        "links": dump_values,
        "resource": resources,
    },
    optional={"span_kind": st.one_of(st.sampled_from(["LLM", "TOOL", "AGENT"]), dump_values)},
)
span_dumps = st.lists(st.one_of(js_spans, js_console_spans, python_spans), min_size=1, max_size=3)
# how a dump reaches a file: a JSON array (JS), or pretty objects back to back (Python's exporter),
# or one pretty array holding literals only Python's decoder reads
DUMP_LAYOUTS = ("array", "objects", "pretty-array")


def _dump_bytes(spans: list[Any], layout: str) -> bytes:
    if layout == "array":
        return _dumps(spans) + b"\n"
    if layout == "objects":
        return "".join(json.dumps(span, indent=4) + "\n" for span in spans).encode()
    return json.dumps(spans, indent=2).encode()


# --- flat span lists and any-agent traces: one object per span, ids at its top level ---------------

# integer ids of any size (any-agent writes 128-bit ones), and the floats orjson would make of them
flat_ids = st.one_of(
    dump_ids,
    st.integers(-(2**130), 2**130),
    st.sampled_from([2**127 + 1, 2**64 - 1, 2**64, 0, 1.5e38, True]),
)
flat_times = st.one_of(
    dump_times, st.integers(0, 2**63).map(str), st.sampled_from(["9" * 25, "0", "-1"])
)
flat_attributes = st.one_of(
    dump_attributes, attributes
)  # an object (flat or nested), or OTLP's list
flat_statuses = st.one_of(
    js_statuses,
    st.fixed_dictionaries(
        {},
        optional={
            "code": st.sampled_from(["OK", "UNSET", "ERROR", "ok"]),
            "description": dump_values,
        },
    ),
    st.sampled_from(["ERROR", "ok", 2]),
)
flat_events = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"name": st.one_of(st.text(max_size=10), dump_values)},
            optional={
                "time_unix_nano": flat_times,
                "timestamp": flat_times,
                "attributes": flat_attributes,
            },
        ),
        max_size=2,
    ),
    dump_values,
)


def _flat_span(snake: bool) -> Any:
    def key(name: str) -> str:
        if snake:
            return name
        head, *rest = name.split("_")
        return head + "".join(part.title() for part in rest)

    return st.fixed_dictionaries(
        {key("trace_id"): flat_ids, key("span_id"): flat_ids},
        optional={
            key("parent_span_id"): flat_ids,
            "parent": st.one_of(
                st.fixed_dictionaries({"span_id": flat_ids}, optional={"trace_id": flat_ids}),
                flat_ids,
            ),
            "name": st.one_of(st.text(max_size=12), dump_values),
            key("start_time"): flat_times,
            key("end_time"): flat_times,
            "kind": dump_kinds,
            "attributes": flat_attributes,
            "status": flat_statuses,
            "status_code": st.one_of(st.sampled_from(["ERROR", "OK"]), dump_values),
            "status_message": dump_values,
            "span_events": flat_events,
            "events": flat_events,
            "scope": st.one_of(
                st.fixed_dictionaries({"name": dump_values, "version": dump_values}), dump_values
            ),
            "resource": resources,
        },
    )


flat_spans = st.lists(
    st.one_of(_flat_span(True), _flat_span(False), dump_values), min_size=1, max_size=4
)
any_agent_traces = st.fixed_dictionaries(
    {
        "spans": st.lists(
            st.one_of(
                python_spans.map(
                    lambda span: (
                        {k: v for k, v in span.items() if k != "parent_id"}
                        | {"parent": span.get("parent_id")}
                    )
                ),
                st.builds(
                    lambda span, context: {**span, "context": context},
                    python_spans,
                    st.fixed_dictionaries({"trace_id": flat_ids, "span_id": flat_ids}),
                ),
                dump_values,
            ),
            max_size=4,
        ),
        "final_output": dump_values,
    }
)
# a JSON list, JSON Lines (one span a line), or pretty objects back to back
FLAT_LAYOUTS = ("array", "lines", "objects")


def _flat_bytes(spans: list[Any], layout: str) -> bytes:
    if layout == "lines":
        return b"".join(_dumps(span) + b"\n" for span in spans)
    return _dump_bytes(spans, layout)


# --- OTLP protobuf: the OTLP strategy's shape, holding only what protobuf can hold ----------------

pb_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "LLM",
            "TOOL",
            "AGENT",
            "chat",
            "execute_tool",
            '[{"role": "user", "content": "hi"}]',
            '{"a": ' + "9" * 30 + "}",
            "[" * 250 + "]" * 250,
            "NaN",
            "\x1b[2J",
        ]
    ),
)
pb_any_values = st.recursive(
    st.one_of(
        st.builds(lambda v: {"string_value": v}, pb_text),
        st.builds(lambda v: {"int_value": v}, st.integers(-(2**63), 2**63 - 1)),
        st.builds(lambda v: {"double_value": v}, st.floats()),
        st.builds(lambda v: {"bool_value": v}, st.booleans()),
        st.builds(lambda v: {"bytes_value": v}, st.binary(max_size=12)),
        st.just({}),
    ),
    lambda inner: st.one_of(
        st.builds(lambda v: {"array_value": {"values": v}}, st.lists(inner, max_size=3)),
        st.builds(
            lambda v: {"kvlist_value": {"values": v}},
            st.lists(st.fixed_dictionaries({"key": attribute_keys, "value": inner}), max_size=3),
        ),
    ),
    max_leaves=6,
)
pb_attributes = st.lists(
    st.fixed_dictionaries({"key": attribute_keys, "value": pb_any_values}), max_size=4
)
# a few ids shared between spans make trees; any length, all-zero included
pb_ids = st.one_of(
    st.sampled_from([bytes([n]) * 8 for n in range(4)]),
    st.sampled_from([bytes.fromhex("0123456789abcdef0123456789abcdef"), bytes(16)]),
    st.binary(max_size=20),
)
pb_times = st.one_of(
    st.integers(0, 2**64 - 1),
    st.integers(1_700_000_000 * 10**9, 1_800_000_000 * 10**9),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1]),
)
pb_enums = st.one_of(st.integers(0, 5), st.integers(-(2**31), 2**31 - 1))
pb_spans = st.fixed_dictionaries(
    {
        "trace_id": pb_ids,
        "span_id": pb_ids,
        "name": pb_text,
        "start_time_unix_nano": pb_times,
        "end_time_unix_nano": pb_times,
        "attributes": pb_attributes,
    },
    optional={
        "parent_span_id": pb_ids,
        "kind": pb_enums,
        "status": st.fixed_dictionaries({}, optional={"code": pb_enums, "message": pb_text}),
        "events": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.one_of(pb_text, st.sampled_from(["exception", "gen_ai.choice"])),
                    "time_unix_nano": pb_times,
                    "attributes": pb_attributes,
                }
            ),
            max_size=2,
        ),
        "links": st.lists(
            st.fixed_dictionaries({"trace_id": pb_ids, "span_id": pb_ids}), max_size=1
        ),
        "trace_state": pb_text,
        "flags": st.integers(0, 2**32 - 1),
    },
)
pb_requests = st.fixed_dictionaries(
    {
        "resource_spans": st.lists(
            st.fixed_dictionaries(
                {
                    "scope_spans": st.lists(
                        st.fixed_dictionaries(
                            {"spans": st.lists(pb_spans, max_size=3)},
                            optional={
                                "scope": st.fixed_dictionaries(
                                    {}, optional={"name": pb_text, "version": pb_text}
                                )
                            },
                        ),
                        max_size=2,
                    )
                },
                optional={"resource": st.fixed_dictionaries({"attributes": pb_attributes})},
            ),
            max_size=2,
        )
    }
).map(lambda fields: _fill(ExportTraceServiceRequest(), fields))


def _fill(message: Any, fields: dict[str, Any]) -> Any:
    """Set ``fields`` (protobuf field names, nested dicts and lists) on ``message``; return it."""
    for key, value in fields.items():
        field = message.DESCRIPTOR.fields_by_name[key]
        if field.message_type is None:
            setattr(message, key, value)
        elif field.is_repeated:
            for item in value:
                _fill(getattr(message, key).add(), item)
        else:
            child = getattr(message, key)
            child.SetInParent()  # an empty message is set too (an AnyValue's empty array)
            _fill(child, value)
    return message


def _write_proto(path: Path, requests: list[Any], stream: bool, gzipped: bool) -> None:
    if stream:
        write_otlp_proto_stream(requests, path)
    else:
        write_otlp_proto(requests[0], path)
    if gzipped:
        path.write_bytes(gzip.compress(path.read_bytes()))


def _read_all(path: Path, skip: bool, strict: bool = False) -> None:
    try:
        for run in read_path(path, options=ReadOptions(skip_invalid=skip, strict=strict)):
            # what the store does with a run it is given: a run that reads must also store
            summarize(run)
            canonical_json(run.to_record())
    except TraceFormatError:
        pass  # the project's own one-line error: allowed


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits, lone surrogates: the text JSON allows for them
        return json.dumps(value).encode()


def _check_otlp(tmp_path: Path, document: Any, gzipped: bool, skip: bool) -> None:
    path = tmp_path / ("fuzz.otlp.json.gz" if gzipped else "fuzz.otlp.json")
    data = _dumps(document) + b"\n"
    path.write_bytes(gzip.compress(data) if gzipped else data)
    _read_all(path, skip)


def _check_native(tmp_path: Path, lines: list[Any], skip: bool, strict: bool) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"".join(_dumps(line) + b"\n" for line in lines))
    _read_all(path, skip, strict)


def _check_dump(tmp_path: Path, spans: list[Any], layout: str, skip: bool) -> None:
    path = tmp_path / "fuzz.spans.json"
    path.write_bytes(_dump_bytes(spans, layout))
    _read_all(path, skip)


def _check_flat(tmp_path: Path, spans: list[Any], layout: str, skip: bool) -> None:
    path = tmp_path / "fuzz.flat.json"
    path.write_bytes(_flat_bytes(spans, layout))
    _read_all(path, skip)


def _check_any_agent(tmp_path: Path, document: Any, skip: bool) -> None:
    path = tmp_path / "fuzz.any-agent.json"
    path.write_bytes(json.dumps(document, indent=2).encode())
    _read_all(path, skip)


def _check_proto(
    tmp_path: Path, requests: list[Any], stream: bool, gzipped: bool, skip: bool
) -> None:
    path = tmp_path / ("fuzz.otlp.pb.gz" if gzipped else "fuzz.otlp.pb")
    _write_proto(path, requests, stream, gzipped)
    _read_all(path, skip)


def _check_proto_mutation(
    tmp_path: Path, requests: list[Any], stream: bool, changes: list[Any], skip: bool
) -> None:
    path = tmp_path / "fuzz.otlp.pb"
    _write_proto(path, requests, stream, gzipped=False)
    path.write_bytes(_mutated(path.read_bytes(), changes))
    _read_all(path, skip)


@FAST
@given(document=otlp_documents, gzipped=st.booleans(), skip=st.booleans())
def test_otlp_json_documents(tmp_path: Path, document: Any, gzipped: bool, skip: bool) -> None:
    _check_otlp(tmp_path, document, gzipped, skip)


@FAST
@given(
    lines=st.lists(native_lines, min_size=1, max_size=4), skip=st.booleans(), strict=st.booleans()
)
def test_native_jsonl_lines(tmp_path: Path, lines: list[Any], skip: bool, strict: bool) -> None:
    _check_native(tmp_path, lines, skip, strict)


@FAST
@given(spans=span_dumps, layout=st.sampled_from(DUMP_LAYOUTS), skip=st.booleans())
def test_span_dumps(tmp_path: Path, spans: list[Any], layout: str, skip: bool) -> None:
    _check_dump(tmp_path, spans, layout, skip)


@FAST
@given(spans=flat_spans, layout=st.sampled_from(FLAT_LAYOUTS), skip=st.booleans())
def test_flat_span_lists(tmp_path: Path, spans: list[Any], layout: str, skip: bool) -> None:
    _check_flat(tmp_path, spans, layout, skip)


@FAST
@given(document=any_agent_traces, skip=st.booleans())
def test_any_agent_traces(tmp_path: Path, document: Any, skip: bool) -> None:
    _check_any_agent(tmp_path, document, skip)


@pytest.mark.fuzz
@SLOW
@given(spans=flat_spans, layout=st.sampled_from(FLAT_LAYOUTS), skip=st.booleans())
def test_flat_span_lists_at_length(
    tmp_path: Path, spans: list[Any], layout: str, skip: bool
) -> None:
    _check_flat(tmp_path, spans, layout, skip)


@pytest.mark.fuzz
@SLOW
@given(document=any_agent_traces, skip=st.booleans())
def test_any_agent_traces_at_length(tmp_path: Path, document: Any, skip: bool) -> None:
    _check_any_agent(tmp_path, document, skip)


@FAST
@given(
    requests=st.lists(pb_requests, min_size=1, max_size=2),
    stream=st.booleans(),
    gzipped=st.booleans(),
    skip=st.booleans(),
)
def test_otlp_proto_requests(
    tmp_path: Path, requests: list[Any], stream: bool, gzipped: bool, skip: bool
) -> None:
    _check_proto(tmp_path, requests, stream, gzipped, skip)


SAMPLE_FILES = ["incident.otlp.jsonl", "incident.otlp.pb", "incident.steps.jsonl"]
# Every file of the published corpus beside the project (read there, never copied): what real
# producers write, mutated. Collected when the module loads; the `corpus` fixture skips (or, in CI,
# fails) when the corpus is missing.
CORPUS_FILES = sorted(
    str(p.relative_to(CORPUS))
    for p in (CORPUS.rglob("*") if CORPUS.is_dir() else [])
    if p.is_file() and p.suffix in (".json", ".jsonl", ".protobuf-bin")
) or ["<corpus missing>"]


def _check_mutation(tmp_path: Path, source: Path, changes: list[Any], skip: bool) -> None:
    """``source`` with ``changes`` made, read under its own name (the name picks the reader)."""
    path = tmp_path / source.name
    path.write_bytes(_mutated(source.read_bytes(), changes))
    _read_all(path, skip)


def _mutated(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    out = bytearray(data)
    for kind, position, value in edits:
        at = position % max(len(out), 1)
        if kind == 0 and out:
            out[at] = value
        elif kind == 1:
            out.insert(at, value)
        elif kind == 2 and out:
            del out[at]
        else:
            del out[at:]  # cut off
    return bytes(out)


edits = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=6
)


@FAST
@given(name=st.sampled_from(SAMPLE_FILES), changes=edits, skip=st.booleans())
def test_mutations_of_the_samples(
    tmp_path: Path, name: str, changes: list[Any], skip: bool
) -> None:
    _check_mutation(tmp_path, SAMPLES / name, changes, skip)


@FAST
@given(
    requests=st.lists(pb_requests, min_size=1, max_size=2),
    stream=st.booleans(),
    changes=edits,
    skip=st.booleans(),
)
def test_mutations_of_otlp_proto_encodings(
    tmp_path: Path, requests: list[Any], stream: bool, changes: list[Any], skip: bool
) -> None:
    _check_proto_mutation(tmp_path, requests, stream, changes, skip)


@pytest.mark.fuzz
@SLOW
@given(document=otlp_documents, gzipped=st.booleans(), skip=st.booleans())
def test_otlp_json_documents_at_length(
    tmp_path: Path, document: Any, gzipped: bool, skip: bool
) -> None:
    _check_otlp(tmp_path, document, gzipped, skip)


@pytest.mark.fuzz
@SLOW
@given(
    lines=st.lists(native_lines, min_size=1, max_size=6), skip=st.booleans(), strict=st.booleans()
)
def test_native_jsonl_lines_at_length(
    tmp_path: Path, lines: list[Any], skip: bool, strict: bool
) -> None:
    _check_native(tmp_path, lines, skip, strict)


@FAST
@given(name=st.sampled_from(CORPUS_FILES), changes=edits, skip=st.booleans())
def test_mutations_of_the_corpus(
    tmp_path: Path, corpus: Path, name: str, changes: list[Any], skip: bool
) -> None:
    _check_mutation(tmp_path, corpus / name, changes, skip)


@pytest.mark.fuzz
@SLOW
@given(name=st.sampled_from(CORPUS_FILES), changes=edits, skip=st.booleans())
def test_mutations_of_the_corpus_at_length(
    tmp_path: Path, corpus: Path, name: str, changes: list[Any], skip: bool
) -> None:
    _check_mutation(tmp_path, corpus / name, changes, skip)


@pytest.mark.fuzz
@SLOW
@given(name=st.sampled_from(SAMPLE_FILES), changes=edits, skip=st.booleans())
def test_mutations_of_the_samples_at_length(
    tmp_path: Path, name: str, changes: list[Any], skip: bool
) -> None:
    _check_mutation(tmp_path, SAMPLES / name, changes, skip)


@pytest.mark.fuzz
@SLOW
@given(spans=span_dumps, layout=st.sampled_from(DUMP_LAYOUTS), skip=st.booleans())
def test_span_dumps_at_length(tmp_path: Path, spans: list[Any], layout: str, skip: bool) -> None:
    _check_dump(tmp_path, spans, layout, skip)


@pytest.mark.fuzz
@SLOW
@given(
    requests=st.lists(pb_requests, min_size=1, max_size=2),
    stream=st.booleans(),
    gzipped=st.booleans(),
    skip=st.booleans(),
)
def test_otlp_proto_requests_at_length(
    tmp_path: Path, requests: list[Any], stream: bool, gzipped: bool, skip: bool
) -> None:
    _check_proto(tmp_path, requests, stream, gzipped, skip)


@pytest.mark.fuzz
@SLOW
@given(
    requests=st.lists(pb_requests, min_size=1, max_size=2),
    stream=st.booleans(),
    changes=edits,
    skip=st.booleans(),
)
def test_mutations_of_otlp_proto_encodings_at_length(
    tmp_path: Path, requests: list[Any], stream: bool, changes: list[Any], skip: bool
) -> None:
    _check_proto_mutation(tmp_path, requests, stream, changes, skip)
