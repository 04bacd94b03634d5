"""Values of the wrong type in span dumps, native JSONL and OTLP JSON (issue 11, item 5).

Each case is a valid input with one value replaced. Reading it raises `TraceFormatError` naming the
file, the position and the value, never anything else; with ``skip_invalid`` only the bad span (span
dumps) or line (JSON Lines) is skipped and counted, and the rest still imports; ``agent-replay
import`` prints the error as one line, exits 1 and leaves the store as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from typer.testing import CliRunner

from otel_replay import ReadOptions, Store, TraceFormatError, read_path
from otel_replay.cli import app
from otel_replay.hashing import canonical_json
from otel_replay.store._trajectories import summarize
from tests.conftest import SAMPLES

# --- valid spans the cases break -------------------------------------------------------------------

TRACE_ID = "b3e700af9eab81e19f72f964d62a35af"

# an OpenTelemetry JS ``ReadableSpan`` as ``JSON.stringify`` prints it
JS_SPAN: dict[str, Any] = {
    "name": "lookup",
    "spanContext": {"traceId": TRACE_ID, "spanId": "39d6e9b3ddec9996"},
    "attributes": {"openinference.span.kind": "TOOL", "tool.name": "lookup"},
    "status": {"code": 0},
    "startTime": [1770131992, 242000000],
    "endTime": [1770131994, 21415667],
    "events": [{"name": "started", "time": [1770131992, 300000000], "attributes": {"n": 1}}],
}

# the Python SDK's ``span.to_json()`` (what its ``ConsoleSpanExporter`` prints)
PY_SPAN: dict[str, Any] = {
    "name": "lookup",
    "context": {"trace_id": "0x" + TRACE_ID, "span_id": "0x39d6e9b3ddec9996", "trace_state": "[]"},
    "kind": "SpanKind.INTERNAL",
    "parent_id": None,
    "start_time": "2026-01-01T00:00:00.000000Z",
    "end_time": "2026-01-01T00:00:01.000000Z",
    "status": {"status_code": "UNSET"},
    "attributes": {"openinference.span.kind": "TOOL", "tool.name": "lookup"},
    "events": [{"name": "started", "timestamp": "2026-01-01T00:00:00.5Z", "attributes": {}}],
    "links": [],
    "resource": {"attributes": {"service.name": "agent"}, "schema_url": ""},
}


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _js_dump(tmp_path: Path, changes: dict[str, Any]) -> Path:
    """A JSON array (what the JS SDK's spans are dumped as): a valid span, then the broken one."""
    good = {**JS_SPAN, "spanContext": {"traceId": TRACE_ID, "spanId": "1111111111111111"}}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([good, {**JS_SPAN, **changes}]))
    return path


def _py_dump(tmp_path: Path, changes: dict[str, Any]) -> Path:
    """Pretty objects back to back, as the Python console exporter prints them: read by Python's
    own decoder, which keeps integers exact and lets lone surrogates (``\\ud800``) through."""
    good = {**PY_SPAN, "context": {**PY_SPAN["context"], "span_id": "0x1111111111111111"}}
    path = tmp_path / "console.txt"
    path.write_text(
        json.dumps(good, indent=4) + "\n" + json.dumps({**PY_SPAN, **changes}, indent=4)
    )
    return path


class Case(NamedTuple):
    layout: str  # "js" or "python"
    changes: dict[str, Any]
    where: str  # the position the message names, after the file
    says: str  # a fragment of the reason


DUMP_CASES = {
    # the three reproduced cases of the issue come first
    "events-a-number": Case("js", {"events": 5}, "[1].events", "expected a list, got 5"),
    "hrtime-nanos-as-text": Case(
        "js", {"startTime": [1, "1e3"]}, "[1].startTime", "hrtime [1, '1e3'] is not [seconds"
    ),
    "hrtime-one-part": Case("js", {"startTime": [1]}, "[1].startTime", "hrtime [1] is not"),
    "hrtime-three-parts": Case("js", {"endTime": [1, 2, 3]}, "[1].endTime", "hrtime [1, 2, 3]"),
    "hrtime-nulls": Case("js", {"startTime": [None, None]}, "[1].startTime", "[None, None]"),
    "hrtime-float-seconds": Case("js", {"startTime": [1.5, 2]}, "[1].startTime", "[1.5, 2]"),
    "hrtime-boolean": Case("js", {"startTime": [True, 1]}, "[1].startTime", "[True, 1]"),
    "hrtime-nanos-negative": Case(
        "js", {"startTime": [1, -5]}, "[1].startTime", "nanoseconds must be 0 to 999999999"
    ),
    "hrtime-nanos-a-second-or-more": Case(
        "js", {"startTime": [1, 10**9]}, "[1].startTime", "nanoseconds must be 0 to 999999999"
    ),
    "hrtime-beyond-2**63-ns": Case(
        "js", {"endTime": [9_223_372_037, 0]}, "[1].endTime", "out of range"
    ),
    "hrtime-beyond-2**64-ns": Case("js", {"endTime": [2**64, 0]}, "[1].endTime", "hrtime"),
    "hrtime-seconds-negative": Case("js", {"startTime": [-1, 0]}, "[1].startTime", "out of range"),
    "time-negative-nanoseconds": Case("js", {"startTime": -5}, "[1].startTime", "out of range"),
    "time-a-float": Case("js", {"startTime": 1.5}, "[1].startTime", "unreadable timestamp 1.5"),
    "time-a-boolean": Case("js", {"startTime": True}, "[1].startTime", "unreadable timestamp"),
    "events-an-object": Case("js", {"events": {"a": 1}}, "[1].events", "expected a list"),
    "event-a-number": Case("js", {"events": [5]}, "[1].events[0]", "expected an object, got 5"),
    "event-attributes-a-number": Case(
        "js", {"events": [{"name": "e", "attributes": 5}]}, "[1].events[0].attributes", "got 5"
    ),
    "event-attributes-a-list": Case(
        "js", {"events": [{"name": "e", "attributes": [1]}]}, "[1].events[0].attributes", "[1]"
    ),
    "event-hrtime-with-text": Case(
        "js", {"events": [{"name": "e", "time": [1, "x"]}]}, "[1].events[0].time", "[1, 'x']"
    ),
    "status-a-number": Case("js", {"status": 5}, "[1].status", "expected an object, got 5"),
    "status-a-string": Case("js", {"status": "ERROR"}, "[1].status", "got 'ERROR'"),
    "status-code-an-object": Case(
        "js", {"status": {"code": {"a": 1}}}, "[1].status.code", "expected a name or number"
    ),
    "status-code-a-boolean": Case("js", {"status": {"code": True}}, "[1].status.code", "True"),
    "kind-a-list": Case("js", {"kind": [1]}, "[1].kind", "expected a name or number, got [1]"),
    "kind-a-float": Case("js", {"kind": 1.5}, "[1].kind", "got 1.5"),
    "name-an-object": Case("js", {"name": {"a": 1}}, "[1].name", "span name must be a string"),
    "resource-a-number": Case("js", {"resource": 5}, "[1].resource", "expected an object, got 5"),
    "resource-attributes-a-list": Case(
        "python", {"resource": {"attributes": [1]}}, "[1].resource.attributes", "got [1]"
    ),
    "parent-context-a-number": Case(
        "js", {"parentSpanContext": 5}, "[1].parentSpanContext", "expected an object, got 5"
    ),
    "span-context-a-list": Case("js", {"spanContext": [1]}, "[1].spanContext", "got [1]"),
    "iso-time-year-1": Case(
        "python", {"start_time": "0001-01-01T00:00:00+00:00"}, "[1].start_time", "out of range"
    ),
    "iso-time-year-9999": Case(
        "python", {"end_time": "9999-12-31T23:59:59+00:00"}, "[1].end_time", "out of range"
    ),
    "iso-time-before-1970": Case(
        "python", {"start_time": "1969-12-31T23:59:59.5+00:00"}, "[1].start_time", "out of range"
    ),
    "iso-time-naive-year-1": Case(
        "python", {"start_time": "0001-01-01T00:00:00"}, "[1].start_time", "out of range"
    ),
    "event-iso-time-year-1": Case(
        "python",
        {"events": [{"name": "e", "timestamp": "0001-01-01T00:00:00Z"}]},
        "[1].events[0].timestamp",
        "out of range",
    ),
    "attribute-beyond-64-bits": Case(
        "python", {"attributes": {"n": 2**70}}, "[1].attributes.n", "does not fit in 64 bits"
    ),
    "attribute-lone-surrogate": Case(
        "python", {"attributes": {"text": "\ud800"}}, "[1].attributes.text", "lone surrogate"
    ),
    "name-lone-surrogate": Case("python", {"name": "a\udfffb"}, "[1].name", "lone surrogate"),
    "attribute-nested-300-deep": Case(
        "python", {"attributes": {"deep": _nested(300)}}, "[1].attributes.deep", "nested deeper"
    ),
    "status-a-list": Case("python", {"status": [1]}, "[1].status", "expected an object, got [1]"),
    # an integer id is its value (any-agent writes them so); a float has lost the id's digits
    "context-trace-id-a-float": Case(
        "python",
        {"context": {"trace_id": 5.0, "span_id": "0x01"}},
        "[1]",
        "traceId 5.0 is a floating-point number",
    ),
    "context-trace-id-a-list": Case(
        "python", {"context": {"trace_id": [5], "span_id": "0x01"}}, "[1]", "traceId must be"
    ),
}


def _dump(tmp_path: Path, case: Case) -> Path:
    return (_js_dump if case.layout == "js" else _py_dump)(tmp_path, case.changes)


def _read(path: Path, options: ReadOptions | None = None) -> None:
    """Read every run and do with it what the store does (a run that reads must also store)."""
    for run in read_path(path, options=options):
        summarize(run)
        canonical_json(run.to_record())


@pytest.mark.parametrize("case", list(DUMP_CASES.values()), ids=list(DUMP_CASES))
def test_span_dump_value_of_the_wrong_type_is_a_located_error(tmp_path: Path, case: Case) -> None:
    path = _dump(tmp_path, case)
    with pytest.raises(TraceFormatError) as caught:
        _read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    assert message.endswith(f" at {case.where}"), message
    assert case.says in message, message
    assert "\n" not in message


@pytest.mark.parametrize("case", list(DUMP_CASES.values()), ids=list(DUMP_CASES))
def test_skip_invalid_skips_only_the_bad_span(tmp_path: Path, case: Case) -> None:
    options = ReadOptions(skip_invalid=True)
    runs = list(read_path(_dump(tmp_path, case), options=options))
    (run,) = runs  # the valid span of the same trace still makes the run
    assert [s.name for s in run.steps] == ["lookup"]
    assert run.metadata["format"] == "span-dump"
    (skipped,) = options.report.skipped
    assert f" at {case.where}" in str(skipped)


def test_span_dumps_that_are_right_still_read(tmp_path: Path) -> None:
    """The hardening refuses what is wrong, nothing else: both SDK shapes, Phoenix's nested
    attributes, ``Infinity``, a time without offset (read as UTC, not as local time)."""
    py = {
        **PY_SPAN,
        "start_time": "2026-01-01T00:00:00",  # no offset
        "attributes": {**PY_SPAN["attributes"], "budget": float("inf"), "llm": {"x": [1.5]}},
    }
    path = tmp_path / "console.txt"
    path.write_text(json.dumps(py, indent=4))
    (run,) = read_path(path)
    (step,) = run.steps
    assert step.start_time_unix_nano == 1_767_225_600 * 10**9
    assert step.end_time_unix_nano == 1_767_225_601 * 10**9
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([JS_SPAN]))
    (run,) = read_path(path)
    assert run.steps[0].start_time_unix_nano == 1770131992_242000000


def test_a_pretty_array_holding_nan_is_a_span_dump(tmp_path: Path) -> None:
    """``NaN`` sends the file to Python's decoder, which returns the array as one object: its spans
    are still the dump's spans (it used to be refused as 'not an OTLP JSON object')."""
    path = tmp_path / "spans.json"
    path.write_text(
        json.dumps(
            [{**JS_SPAN, "attributes": {**JS_SPAN["attributes"], "x": float("nan")}}], indent=2
        )
    )
    (run,) = read_path(path)
    assert run.metadata["format"] == "span-dump"
    assert [s.name for s in run.steps] == ["lookup"]


# --- native JSONL ----------------------------------------------------------------------------------

STEP = {"kind": "tool", "name": "lookup", "inputs": {"q": 1}, "output": "ok"}


class LineCase(NamedTuple):
    record: dict[str, Any]
    says: str


JSONL_CASES = {
    # the reproduced case: already a located error before this hardening, kept as a regression
    "spans-a-number": LineCase({"spans": 5}, "'spans' must be a list, got 5"),
    "spans-zero": LineCase({"spans": 0}, "'spans' must be a list, got 0"),
    "spans-false": LineCase({"spans": False}, "'spans' must be a list, got False"),
    "spans-empty-text": LineCase({"spans": ""}, "'spans' must be a list, got ''"),
    "metadata-zero": LineCase({"metadata": 0}, "'metadata' must be an object, got 0"),
    "metadata-empty-list": LineCase({"metadata": []}, "'metadata' must be an object, got []"),
    "reconstructed-steps-a-number": LineCase(
        {"metadata": {"reconstructed_steps": 5}}, "'metadata.reconstructed_steps' must be a list"
    ),
    "reconstructed-steps-nested": LineCase(
        {"metadata": {"reconstructed_steps": [[0]]}}, "list of step indexes, got [[0]]"
    ),
    "reconstructed-steps-booleans": LineCase(
        {"metadata": {"reconstructed_steps": [True]}}, "got [True]"
    ),
}


def _jsonl(tmp_path: Path, record: dict[str, Any]) -> Path:
    """A valid trajectory line, then the broken one (another trajectory)."""
    path = tmp_path / "runs.jsonl"
    lines = [
        {"trajectory_id": "good", "steps": [STEP]},
        {"trajectory_id": "bad", "steps": [STEP], **record},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("case", list(JSONL_CASES.values()), ids=list(JSONL_CASES))
def test_native_jsonl_value_of_the_wrong_type_is_a_located_error(
    tmp_path: Path, case: LineCase
) -> None:
    path = _jsonl(tmp_path, case.record)
    with pytest.raises(TraceFormatError) as caught:
        _read(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: "), message
    assert case.says in message, message
    options = ReadOptions(skip_invalid=True)
    assert [run.id for run in read_path(path, options=options)] == ["good"]
    assert len(options.report.skipped) == 1


def test_span_tree_records_are_read_for_display(tmp_path: Path) -> None:
    """A span record's name and role are shown as text; an unset name is empty (not 'None') and a
    step index that is not a non-negative integer means no step."""
    spans = [
        {"span_id": "a", "name": None, "step_index": True},
        {"span_id": "b", "role": None, "step_index": -1},
        {"span_id": "c", "name": 7, "step_index": 0},
    ]
    path = _jsonl(tmp_path, {"spans": spans})
    _, run = read_path(path)
    assert [(s.name, s.role, s.step_index) for s in run.spans] == [
        ("", "span", None),
        ("", "span", None),
        ("7", "span", 0),
    ]


# --- OTLP JSON -------------------------------------------------------------------------------------


def _array_value(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"intValue": "1"}
    for _ in range(depth):
        value = {"arrayValue": {"values": [value]}}
    return value


def test_otlp_attribute_nested_too_deep_is_a_located_error(tmp_path: Path) -> None:
    """An AnyValue nested 300 arrays deep decoded fine and then could not be hashed."""
    span = {
        "traceId": TRACE_ID,
        "spanId": "39d6e9b3ddec9996",
        "name": "deep",
        "attributes": [{"key": "deep", "value": _array_value(300)}],
    }
    path = tmp_path / "deep.json"
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}, indent=1)
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=r"nested deeper than 200 .* at resourceSpans\[0\]"):
        _read(path)
    options = ReadOptions(skip_invalid=True)
    assert list(read_path(path, options=options)) == []
    assert len(options.report.skipped) == 1


# --- integers longer than Python converts ------------------------------------------------------------

LONG_NUMBER = (
    "9" * 5000
)  # beyond the 4300 digits Python turns into an int (a ValueError, not JSON's)


def test_a_document_with_a_5000_digit_number_is_a_located_error(tmp_path: Path) -> None:
    """orjson refuses the number, the fallback for Python's console dumps used to crash on it."""
    path = tmp_path / "spans.json"
    path.write_text(f'[{{"spanContext": {{}}, "attributes": {{"n": {LONG_NUMBER}}}}}]')
    with pytest.raises(TraceFormatError, match=r"spans\.json \(byte 0\): an integer with more"):
        _read(path)


def test_a_jsonl_line_with_a_5000_digit_number_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    good = json.dumps({"trajectory_id": "good", "steps": [STEP]})
    path.write_text(f'{good}\n{{"trajectory_id": "bad", "steps": [], "outcome": {LONG_NUMBER}}}\n')
    with pytest.raises(TraceFormatError, match=r"runs\.jsonl:2: an integer with more digits"):
        _read(path)
    options = ReadOptions(skip_invalid=True)
    assert [run.id for run in read_path(path, options=options)] == ["good"]
    assert len(options.report.skipped) == 1


# --- through the CLI -------------------------------------------------------------------------------

CLI_CASES = {
    "events-a-number": ("dump", "events-a-number"),
    "hrtime-nanos-as-text": ("dump", "hrtime-nanos-as-text"),
    "iso-time-year-1": ("dump", "iso-time-year-1"),
    "attribute-beyond-64-bits": ("dump", "attribute-beyond-64-bits"),
    "spans-a-number": ("jsonl", "spans-a-number"),
    "reconstructed-steps-a-number": ("jsonl", "reconstructed-steps-a-number"),
}


def _bad_file(tmp_path: Path, kind: str, name: str) -> Path:
    if kind == "dump":
        return _dump(tmp_path, DUMP_CASES[name])
    return _jsonl(tmp_path, JSONL_CASES[name].record)


def _counts(store_path: Path) -> dict[str, int]:
    with Store.open(store_path) as store:
        return store.counts()


@pytest.mark.parametrize(("kind", "name"), list(CLI_CASES.values()), ids=list(CLI_CASES))
def test_import_prints_one_line_and_leaves_the_store(
    runner: CliRunner, store_path: Path, tmp_path: Path, kind: str, name: str
) -> None:
    seed = runner.invoke(
        app, ["import", str(SAMPLES / "incident.steps.jsonl"), "--store", str(store_path)]
    )
    assert seed.exit_code == 0, seed.output
    before = _counts(store_path)
    path = _bad_file(tmp_path, kind, name)

    result = runner.invoke(app, ["import", str(path), "--store", str(store_path)])

    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert result.exit_code == 1, result.output
    error, *rest = [line for line in result.stderr.splitlines() if line.strip()]
    assert error.startswith(f"error: {path}"), error
    assert rest == [f"nothing from {path} was imported"], result.stderr
    assert _counts(store_path) == before

    skipping = runner.invoke(
        app, ["import", str(path), "--store", str(store_path), "--skip-invalid"]
    )
    assert skipping.exit_code == 0, skipping.output
    assert "skipped 1 invalid record" in skipping.stderr
