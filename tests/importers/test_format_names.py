"""One vocabulary for formats (issue 11, item 25), and sniffing that does not take a protobuf request
for JSON.

Before: `agent-replay list` showed `otlp-jsonl` (and `span-dump`, `otlp-proto-stream`) while
`--format otlp-jsonl` was refused; a bare protobuf request whose length byte happens to be ``{``
was sniffed as JSON and refused.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from typer.testing import CliRunner

from otel_replay import TraceFormatError, read_path
from otel_replay.cli import app
from otel_replay.importers import Format
from otel_replay.importers._sniff import detect
from tests.cli_helpers import invoke, ok
from tests.conftest import SAMPLES


def test_every_format_list_shows_is_accepted_by_format(runner: CliRunner, tmp_path: Path) -> None:
    sources = {
        "incident.otlp.jsonl": "otlp-jsonl",
        "incident.otlp.pb": "otlp-proto-stream",
        "incident.steps.jsonl": "jsonl",
    }
    for name, shown_as in sources.items():
        store = tmp_path / f"first-{shown_as}" / "store.db"
        ok(invoke(runner, store, "import", str(SAMPLES / name)))
        listed = orjson.loads(ok(invoke(runner, store, "list", "--json")).stdout)
        assert {run["format"] for run in listed} == {shown_as}
        again = tmp_path / f"again-{shown_as}" / "store.db"
        ok(invoke(runner, again, "import", str(SAMPLES / name), "--format", shown_as))
    assert {f.value for f in Format} >= {"otlp-jsonl", "span-dump", "otlp-proto-stream"}


def _request_with_length_byte(first: int) -> bytes:
    """A bare request whose first resource_spans length byte is ``first`` (the span name grows until
    the encoding's second byte is it)."""
    for size in range(1, 200):
        request = ExportTraceServiceRequest()
        span = request.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id = bytes(range(16))
        span.span_id = bytes(range(8))
        span.name = "s" * size
        span.start_time_unix_nano, span.end_time_unix_nano = 1, 2
        data = request.SerializeToString()
        if data[1] == first:
            return data
    raise AssertionError(f"no request with length byte {first:#x}")


@pytest.mark.parametrize("first", [ord("{"), ord("[")])
def test_a_protobuf_request_whose_length_reads_as_json_is_protobuf(
    tmp_path: Path, first: int
) -> None:
    path = tmp_path / "request.bin"
    path.write_bytes(_request_with_length_byte(first))
    assert detect(path) is Format.OTLP_PROTO
    (run,) = read_path(path)
    assert len(run.spans) == 1


def test_json_with_leading_blank_lines_is_still_json(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(b"\n\n" + (SAMPLES / "incident.otlp.jsonl").read_bytes().splitlines()[0])
    assert detect(path) is Format.OTLP_JSON


FLAT_SPAN = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}


@pytest.mark.parametrize("fmt", ["langfuse", "any-agent", "phoenix-otlp", "span-dump"])
def test_a_document_format_given_by_name_refuses_another_format(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "flat.json"
    path.write_bytes(orjson.dumps([FLAT_SPAN], option=orjson.OPT_INDENT_2))
    assert [r.metadata["format"] for r in read_path(path)] == ["flat-spans"]  # its own shape
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path, fmt))
    assert f"not a {fmt} document, the format it was given as" in str(caught.value)


def test_a_document_format_given_by_name_reads_what_it_claims(tmp_path: Path) -> None:
    path = tmp_path / "flat.jsonl"
    path.write_bytes(orjson.dumps(FLAT_SPAN) + b"\n")  # one span per line
    (run,) = read_path(path, "flat-spans")
    assert run.metadata["format"] == "flat-spans" and len(run.spans) == 1
    with pytest.raises(TraceFormatError, match="not a langfuse document"):
        list(read_path(path, "langfuse"))


def test_the_cli_refuses_a_file_of_another_format_than_given(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "flat.json"
    path.write_bytes(orjson.dumps([FLAT_SPAN]))
    store = tmp_path / "store.db"
    result = runner.invoke(
        app, ["import", str(path), "--store", str(store), "--format", "any-agent"]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "not a any-agent document" in result.stderr
