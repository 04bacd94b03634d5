"""Fuzzing every reader: whatever the bytes, the answer is trajectories or the project's own error.

Traces hold arbitrary model output and arrive from anywhere, so no input may end in anything but
success or a `TraceFormatError` (file, line or offset, what was wrong). Inputs are generated three
ways: plausible documents with hostile values (hypothesis strategies for OTLP JSON, native JSONL and
span dumps), the same encoded as protobuf, and byte-level mutations of the published samples. The
default tier runs a small number of examples; the ``fuzz`` tier (``pytest -m fuzz``, run by CI)
runs many more.
"""

from __future__ import annotations

import base64
import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay import ReadOptions, TraceFormatError, read_path
from tests.conftest import SAMPLES

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
            "kind": st.sampled_from(["tool", "llm", "robot"]),
            "name": json_values,
        },
    ),
    json_values,
)


def _read_all(path: Path, skip: bool) -> None:
    try:
        for run in read_path(path, options=ReadOptions(skip_invalid=skip)):
            run.final_hash  # noqa: B018  (building every step is part of reading)
    except TraceFormatError:
        pass  # the project's own one-line error: allowed


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits: write them as the text JSON allows
        import json

        return json.dumps(value).encode()


def _check_otlp(tmp_path: Path, document: Any, gzipped: bool, skip: bool) -> None:
    path = tmp_path / ("fuzz.otlp.json.gz" if gzipped else "fuzz.otlp.json")
    data = _dumps(document) + b"\n"
    path.write_bytes(gzip.compress(data) if gzipped else data)
    _read_all(path, skip)


def _check_native(tmp_path: Path, lines: list[Any], skip: bool) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"".join(_dumps(line) + b"\n" for line in lines))
    _read_all(path, skip)


@FAST
@given(document=otlp_documents, gzipped=st.booleans(), skip=st.booleans())
def test_otlp_json_documents(tmp_path: Path, document: Any, gzipped: bool, skip: bool) -> None:
    _check_otlp(tmp_path, document, gzipped, skip)


@FAST
@given(lines=st.lists(native_lines, min_size=1, max_size=4), skip=st.booleans())
def test_native_jsonl_lines(tmp_path: Path, lines: list[Any], skip: bool) -> None:
    _check_native(tmp_path, lines, skip)


SAMPLE_FILES = ["incident.otlp.jsonl", "incident.otlp.pb", "incident.steps.jsonl"]


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
    path = tmp_path / name
    path.write_bytes(_mutated((SAMPLES / name).read_bytes(), changes))
    _read_all(path, skip)


@pytest.mark.fuzz
@SLOW
@given(document=otlp_documents, gzipped=st.booleans(), skip=st.booleans())
def test_otlp_json_documents_at_length(
    tmp_path: Path, document: Any, gzipped: bool, skip: bool
) -> None:
    _check_otlp(tmp_path, document, gzipped, skip)


@pytest.mark.fuzz
@SLOW
@given(lines=st.lists(native_lines, min_size=1, max_size=6), skip=st.booleans())
def test_native_jsonl_lines_at_length(tmp_path: Path, lines: list[Any], skip: bool) -> None:
    _check_native(tmp_path, lines, skip)


@pytest.mark.fuzz
@SLOW
@given(name=st.sampled_from(SAMPLE_FILES), changes=edits, skip=st.booleans())
def test_mutations_of_the_samples_at_length(
    tmp_path: Path, name: str, changes: list[Any], skip: bool
) -> None:
    path = tmp_path / name
    path.write_bytes(_mutated((SAMPLES / name).read_bytes(), changes))
    _read_all(path, skip)
