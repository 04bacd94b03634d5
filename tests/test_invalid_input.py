"""Bad input through ``agent-replay import``: one line naming the file and where, exit 1, store unchanged.

Every case is a real file made from the bundled samples (produced by the OpenTelemetry SDK) with one
thing broken, so each row differs from a valid input in exactly the way its id says.
"""

from __future__ import annotations

import gzip
import json
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from typer.testing import CliRunner, Result

from otel_replay import ReadOptions, Store, TraceFormatError, read_path
from otel_replay.cli import app
from tests.conftest import SAMPLES, proto_frames

OTLP_JSONL = SAMPLES / "incident.otlp.jsonl"
OTLP_STREAM = SAMPLES / "incident.otlp.pb"

# --- building blocks -------------------------------------------------------------------------------


def _otlp_lines() -> list[bytes]:
    """The sample's OTLP JSON Lines records (each a whole ``ExportTraceServiceRequest``)."""
    return OTLP_JSONL.read_bytes().splitlines()


def _spans_of(line: bytes) -> list[dict[str, Any]]:
    request = orjson.loads(line)
    return [
        span
        for resource_spans in request["resourceSpans"]
        for scope_spans in resource_spans["scopeSpans"]
        for span in scope_spans["spans"]
    ]


def _with_span(line: bytes, change: Callable[[dict[str, Any]], None], kind: str | None) -> bytes:
    """``line`` with ``change`` applied to its first span (of OpenInference ``kind`` if given)."""
    request = orjson.loads(line)
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    target = next(
        span
        for span in spans
        if kind is None
        or {"key": "openinference.span.kind", "value": {"stringValue": kind}} in span["attributes"]
    )
    change(target)
    return orjson.dumps(request)


def _jsonl(*lines: bytes) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _otlp_line_3(change: Callable[[dict[str, Any]], None], kind: str | None = None) -> bytes:
    """Three sample lines, the third with its first span (of OpenInference ``kind``) changed."""
    first, second, third = _otlp_lines()[:3]
    return _jsonl(first, second, _with_span(third, change, kind))


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(span: dict[str, Any]) -> None:
        span[key] = value

    return change


def _set_attribute(key: str, value: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(span: dict[str, Any]) -> None:
        kept = [kv for kv in span["attributes"] if kv["key"] != key]
        span["attributes"] = [*kept, {"key": key, "value": value}]

    return change


def _spans_not_a_list(line: bytes) -> bytes:
    request = orjson.loads(line)
    request["resourceSpans"][0]["scopeSpans"][0]["spans"] = {}
    return orjson.dumps(request)


def _frames() -> list[bytes]:
    return proto_frames(OTLP_STREAM)


def _truncated_second_frame() -> tuple[bytes, int, int]:
    """Frame 1 whole, then frame 2 cut 20 bytes in: (data, offset of frame 2, its declared length)."""
    first, second = _frames()[:2]
    (declared,) = struct.unpack_from(">I", second)
    return first + second[:20], len(first), declared


def _garbage_second_frame() -> tuple[bytes, int]:
    first, second, *rest = _frames()
    garbage = b"\x0a\xff\xff\xff\xff\xff\xff"
    return first + struct.pack(">I", len(garbage)) + garbage + second + b"".join(rest), len(first)


def _pretty_with_error_on_line_5() -> bytes:
    document = orjson.loads(_otlp_lines()[0])
    lines = orjson.dumps(document, option=orjson.OPT_INDENT_2).splitlines()
    lines.insert(4, b"  @")  # line 4 opens an object: '@' cannot start a key
    return b"\n".join(lines) + b"\n"


def _step(**changes: Any) -> bytes:
    step = {
        "trajectory_id": "native-1",
        "kind": "tool",
        "name": "query_metrics",
        "inputs": {"arguments": {"service": "checkout"}},
        "output": {"points": [1, 2, 3]},
    }
    return orjson.dumps({**step, **changes})


def _gzip_cut(data: bytes) -> bytes:
    compressed = gzip.compress(data)
    return compressed[: len(compressed) // 2]


# --- the table -------------------------------------------------------------------------------------


class Case(NamedTuple):
    suffix: str
    content: bytes
    #: ``":N"`` for a line, ``"byte N"`` for an offset, ``None`` when the whole file is wrong
    location: str | None
    #: what was wrong: every fragment must appear in the message (case-insensitive)
    fragments: tuple[str, ...]


_TRUNCATED, _TRUNCATED_AT, _DECLARED = _truncated_second_frame()
_GARBAGE, _GARBAGE_AT = _garbage_second_frame()
_INT64_OVERFLOW = "123456789012345678901234567890"

CASES = {
    "otlp-jsonl-malformed-line-2-of-3": Case(
        ".jsonl",
        _jsonl(_otlp_lines()[0], b'{"resourceSpans": [{"scopeSpans": [', _otlp_lines()[2]),
        ":2",
        ("JSON",),
    ),
    "otlp-jsonl-spans-not-a-list": Case(
        ".jsonl",
        _jsonl(*_otlp_lines()[:2], _spans_not_a_list(_otlp_lines()[2])),
        ":3",
        ("spans", "list"),
    ),
    "otlp-jsonl-start-time-not-a-number": Case(
        ".jsonl", _otlp_line_3(_set("startTimeUnixNano", "abc")), ":3", ("startTimeUnixNano", "abc")
    ),
    "otlp-jsonl-attributes-not-a-list": Case(
        ".jsonl",
        _otlp_line_3(_set("attributes", {"llm.model_name": "gpt"})),
        ":3",
        ("attributes", "llm.model_name"),
    ),
    "otlp-jsonl-trace-id-not-hex": Case(
        ".jsonl", _otlp_line_3(_set("traceId", "xyz")), ":3", ("traceId", "xyz")
    ),
    "otlp-jsonl-int-value-beyond-int64": Case(
        ".jsonl",
        _otlp_line_3(_set_attribute("input.value", {"intValue": _INT64_OVERFLOW}), "TOOL"),
        ":3",
        (_INT64_OVERFLOW,),
    ),
    "otlp-json-pretty-syntax-error": Case(".json", _pretty_with_error_on_line_5(), ":5", ("JSON",)),
    "json-not-a-trace": Case(".json", b'{"hello": 1}\n', None, ("not a trace document", "hello")),
    "otlp-logs-not-traces": Case(".json", b'{"resourceLogs": []}\n', None, ("logs",)),
    "protobuf-body-garbage": Case(
        ".pb", b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "byte 0", ("protobuf",)
    ),
    "proto-stream-second-frame-truncated": Case(
        ".pb", _TRUNCATED, f"byte {_TRUNCATED_AT}", (str(_DECLARED),)
    ),
    "proto-stream-second-frame-garbage": Case(
        ".pb", _GARBAGE, f"byte {_GARBAGE_AT}", ("protobuf",)
    ),
    "native-unknown-step-kind": Case(
        ".jsonl",
        _jsonl(_step(), _step(kind="teleport")),
        ":2",
        ("teleport", "llm", "tool", "retriever"),
    ),
    "native-inputs-not-an-object": Case(
        ".jsonl", _jsonl(_step(), _step(inputs=["a", "b"])), ":2", ("inputs", "['a', 'b']")
    ),
    "native-neither-trajectory-step-nor-outcome": Case(
        ".jsonl",
        _jsonl(_step(), orjson.dumps({"trajectory_id": "native-1", "score": 0.5})),
        ":2",
        ("score",),
    ),
    "native-malformed-json": Case(
        ".jsonl",
        _jsonl(_step(), b'{"trajectory_id": "native-1", "kind": ', _step()),
        ":2",
        ("JSON",),
    ),
    "native-bad-step-inside-trajectory": Case(
        ".jsonl",
        _jsonl(
            orjson.dumps(
                {
                    "trajectory_id": "native-2",
                    "outcome": 1.0,
                    "steps": [orjson.loads(_step()), {**orjson.loads(_step()), "status": "maybe"}],
                }
            )
        ),
        ":1",
        ("steps[1]", "maybe"),
    ),
    # rich markup in the offending value must be shown as typed, not interpreted (or crash)
    "native-kind-that-looks-like-markup": Case(
        ".jsonl", _jsonl(_step(), _step(kind="[/]")), ":2", ("'[/]'",)
    ),
    "empty-file": Case(".jsonl", b"", None, ("empty",)),
    "png-not-a-trace": Case(
        ".png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10", None, ("PNG",)
    ),
    "gzip-cut-off": Case(".jsonl.gz", _gzip_cut(OTLP_JSONL.read_bytes()), None, ("compress",)),
}

# --- fixtures and checks ---------------------------------------------------------------------------


class Snapshot(NamedTuple):
    counts: dict[str, int]
    listing: str


def _snapshot(runner: CliRunner, store_path: Path) -> Snapshot:
    with Store.open(store_path) as store:
        counts = store.counts()
    listing = runner.invoke(app, ["list", "--json", "--store", str(store_path)])
    assert listing.exit_code == 0, listing.output
    return Snapshot(counts, listing.stdout)


@pytest.fixture
def seeded(runner: CliRunner, store_path: Path, tmp_path: Path) -> Snapshot:
    """A store holding two valid trajectories; returns its state before the bad import."""
    valid = tmp_path / "valid.steps.jsonl"
    valid.write_bytes(
        _jsonl(_step(trajectory_id="seed-a"), _step(trajectory_id="seed-b", name="x"))
    )
    result = runner.invoke(app, ["import", str(valid), "--store", str(store_path)])
    assert result.exit_code == 0, result.output
    snapshot = _snapshot(runner, store_path)
    assert snapshot.counts["trajectories"] == 2
    return snapshot


def _import(
    runner: CliRunner, store_path: Path, *paths: Path, flags: tuple[str, ...] = ()
) -> Result:
    return runner.invoke(
        app,
        ["import", *map(str, paths), "--store", str(store_path), *flags],
        env={"COLUMNS": "200"},
    )


def _assert_no_crash(result: Result) -> None:
    """A user mistake ends in a message, never in an exception escaping the command."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output


def _error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines, f"no error message; output: {result.output!r}"
    return lines[0]


# --- tests -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_invalid_input_is_refused_with_a_located_message(
    case: Case, runner: CliRunner, store_path: Path, tmp_path: Path, seeded: Snapshot
) -> None:
    path = tmp_path / f"bad{case.suffix}"
    path.write_bytes(case.content)

    result = _import(runner, store_path, path)

    _assert_no_crash(result)
    assert result.exit_code == 1, result.output
    line = _error_line(result)
    assert str(path) in line, line
    if case.location is not None:
        if case.location.startswith(":"):
            assert re.search(re.escape(str(path) + case.location) + r"\b", line), line
        else:
            assert re.search(re.escape(case.location) + r"\b", line), line
    what = line.replace(str(path), "").lower()
    for fragment in case.fragments:
        assert fragment.lower() in what, f"{fragment!r} not in {line!r}"
    assert _snapshot(runner, store_path) == seeded


@pytest.mark.parametrize(
    ("suffix", "content", "valid_ids", "bad_line"),
    [
        pytest.param(
            ".jsonl",
            _jsonl(
                _step(trajectory_id="keep-1"),
                _step(trajectory_id="keep-2"),
                _step(trajectory_id="keep-2", kind="teleport"),
                _step(trajectory_id="keep-3"),
            ),
            {"keep-1", "keep-2", "keep-3"},
            3,
            id="native-unknown-kind",
        ),
        pytest.param(
            ".jsonl",
            _jsonl(_otlp_lines()[0], b'{"resourceSpans": [', *_otlp_lines()[1:]),
            {span["traceId"] for line in _otlp_lines() for span in _spans_of(line)},
            2,
            id="otlp-jsonl-malformed-line",
        ),
    ],
)
def test_skip_invalid_imports_the_rest_and_reports_why(
    runner: CliRunner,
    store_path: Path,
    tmp_path: Path,
    suffix: str,
    content: bytes,
    valid_ids: set[str],
    bad_line: int,
) -> None:
    path = tmp_path / f"mixed{suffix}"
    path.write_bytes(content)

    result = _import(runner, store_path, path, flags=("--skip-invalid",))

    _assert_no_crash(result)
    assert result.exit_code == 0, result.output
    assert re.search(r"skipped 1\b", result.stderr), result.stderr
    assert f"{path}:{bad_line}" in result.stderr
    with Store.open(store_path) as store:
        assert {s.id for s in store.summaries()} == valid_ids

    as_json = _import(runner, tmp_path / "other.db", path, flags=("--skip-invalid", "--json"))
    assert as_json.exit_code == 0, as_json.output
    (report,) = orjson.loads(as_json.stdout)
    assert len(report["skipped"]) == 1
    assert f"{path}:{bad_line}" in report["skipped"][0]


def test_skipped_step_is_not_silently_dropped_from_its_trajectory(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(_jsonl(_step(name="a"), _step(name="b", kind="teleport"), _step(name="c")))

    result = _import(runner, store_path, path, flags=("--skip-invalid",))

    assert result.exit_code == 0, result.output
    with Store.open(store_path) as store:
        trajectory = store.get("native-1")
    assert [s.name for s in trajectory.steps] == ["a", "c"]
    assert "skipped 1" in result.stderr


def test_multi_file_import_keeps_earlier_files_and_names_the_failed_one(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(_jsonl(_step(trajectory_id="from-good")))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(_jsonl(_step(trajectory_id="from-bad"), _step(kind="teleport")))

    result = _import(runner, store_path, good, bad)

    _assert_no_crash(result)
    assert result.exit_code == 1
    assert f"{bad}:2" in _error_line(result)
    assert any("nothing" in line and str(bad) in line for line in result.stderr.splitlines()), (
        result.stderr
    )
    with Store.open(store_path) as store:
        assert [s.id for s in store.summaries()] == ["from-good"]


def test_cut_off_last_line_without_newline_is_a_warning(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    lines = _otlp_lines()
    path = tmp_path / "still-writing.otlp.jsonl"
    # the Collector is mid-write: the last record has no newline yet and is cut short
    path.write_bytes(_jsonl(*lines[:-1]) + lines[-1][: len(lines[-1]) // 2])

    result = _import(runner, store_path, path)

    _assert_no_crash(result)
    assert result.exit_code == 0, result.output
    assert "warning" in result.stderr.lower()
    assert f"{path}:{len(lines)}" in result.stderr
    complete_ids = {span["traceId"] for line in lines[:-1] for span in _spans_of(line)}
    with Store.open(store_path) as store:
        assert {s.id for s in store.summaries()} == complete_ids


def test_cut_off_line_in_the_middle_is_still_an_error(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    lines = _otlp_lines()
    path = tmp_path / "damaged.otlp.jsonl"
    path.write_bytes(_jsonl(lines[0], lines[1][:100], *lines[2:]))

    result = _import(runner, store_path, path)

    assert result.exit_code == 1
    assert f"{path}:2" in _error_line(result)


def test_a_one_line_document_with_nan_and_no_newline_is_read_not_dropped(tmp_path: Path) -> None:
    span = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}
    path = tmp_path / "one-line.json"
    # Python's json.dumps writes NaN, which orjson refuses; a file of one line is not being written
    path.write_text(json.dumps({**span, "attributes": {"score": float("nan")}}))
    options = ReadOptions()
    (run,) = read_path(path, options=options)
    assert [s.name for s in run.spans] == ["agent"] and not options.report.warnings


def test_a_one_line_file_that_is_no_json_is_an_error_not_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "one-line.json"
    path.write_text('{"resourceSpans": [}')
    options = ReadOptions()
    with pytest.raises(TraceFormatError, match="malformed JSON"):
        list(read_path(path, options=options))
    assert not options.report.warnings
