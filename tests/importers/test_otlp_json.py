"""The OTLP JSON reader: duplicate spans, blank lines, out-of-range timestamps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_replay import ReadOptions, TraceFormatError, read_path
from tests.conftest import SAMPLES


def _span(span_id: str, name: str, parent: str = "") -> dict[str, Any]:
    return {
        "traceId": "0123456789abcdef0123456789abcdef",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "TOOL"}},
            {"key": "tool.name", "value": {"stringValue": name}},
        ],
    }


def _line(*spans: dict[str, Any]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}) + b"\n"


def test_a_span_delivered_twice_is_one_step(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_bytes(_line(_span("aaaaaaaaaaaaaaaa", "lookup")) * 2)
    options = ReadOptions()
    (run,) = read_path(path, options=options)
    assert [s.name for s in run.steps] == ["lookup"]
    assert any("more than once" in w for w in options.report.warnings)


@pytest.mark.parametrize("prefix", [b"\n", b"\r\n\r\n", b"   \n"], ids=["blank", "crlf", "spaces"])
def test_blank_lines_before_the_first_record(tmp_path: Path, prefix: bytes) -> None:
    for name in ("incident.otlp.jsonl", "incident.steps.jsonl"):
        path = tmp_path / name
        path.write_bytes(prefix + (SAMPLES / name).read_bytes())
        assert len(list(read_path(path))) == 3


def test_timestamps_beyond_int64_are_a_located_error(tmp_path: Path) -> None:
    span = _span("aaaaaaaaaaaaaaaa", "lookup")
    span["startTimeUnixNano"] = "18446744073709551615"
    path = tmp_path / "late.jsonl"
    path.write_bytes(_line(span))
    with pytest.raises(TraceFormatError, match=r"late\.jsonl:1: timestamp .* out of range"):
        list(read_path(path))
