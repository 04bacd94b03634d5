"""``export --format otlp-proto`` read by a real Phoenix (issue 39): the requests of an export, sent
to Phoenix's OTLP/HTTP endpoint as a Collector would forward them, are taken whole; Phoenix files
the steps' spans under OpenInference's kinds, and ``import phoenix://`` gives back the very run
that went out."""

from __future__ import annotations

import json
import struct
import time
import urllib.request
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from typer.testing import CliRunner

from examples.incident import investigate
from otel_replay import Store, Trajectory
from otel_replay.errors import ReplayError
from otel_replay.otlp_encode import destination, send_otlp, spans_to_request, write_otlp_proto
from otel_replay.platforms.phoenix import read_phoenix
from tests.cli_helpers import invoke, ok
from tests.platforms.phoenix_server import Phoenix

PROJECT = "export-otlp"


def _arrived(url: str, count: int) -> list[Trajectory]:
    """The runs of a project once Phoenix has stored ``count`` of them (it inserts a moment after
    it answers the export)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            runs = list(read_phoenix(url))
        except ReplayError:  # the project appears with its first span
            runs = []
        if len(runs) >= count or time.monotonic() > deadline:
            return runs
        time.sleep(0.3)


def test_an_export_sent_to_phoenix_comes_back_the_same(phoenix: Phoenix, tmp_path: Path) -> None:
    # a run of its own: Phoenix files a trace id under the first project it arrives in
    trace = tmp_path / "trace.otlp.pb"
    write_otlp_proto(spans_to_request(investigate("openinference", 131, {}).spans), trace)
    store = tmp_path / "store.db"
    ok(invoke(CliRunner(), store, "import", str(trace)))
    with Store.open(store, read_only=True) as db:
        (summary,) = db.summaries()
        run = db.get(summary.id)
    out = tmp_path / "out.otlp.pb"
    ok(invoke(CliRunner(), store, "export", "--format", "otlp-proto", "--out", str(out)))

    data = out.read_bytes()
    (length,) = struct.unpack_from(">I", data)
    assert len(data) == 4 + length  # one run, one request
    request = ExportTraceServiceRequest.FromString(data[4:])
    sent = send_otlp(request, destination(phoenix.base, [f"x-project-name={PROJECT}"]))
    assert sent.rejected == 0 and sent.spans == len(run.steps) + 1

    phoenix.wait_for(PROJECT, sent.spans)
    (back,) = _arrived(f"phoenix://{phoenix.address}/{PROJECT}", 1)
    assert back.id == run.id
    assert back.identity == run.identity
    assert back.outcome == run.outcome
    assert [(s.kind, s.name, s.inputs, s.output, s.status, s.error) for s in back.steps] == [
        (s.kind, s.name, s.inputs, s.output, s.status, s.error) for s in run.steps
    ]
    # Phoenix read the steps' spans as OpenInference's kinds
    url = f"{phoenix.base}/v1/projects/{PROJECT}/spans?limit=100"
    with urllib.request.urlopen(url, timeout=10) as response:
        kinds = {span["span_kind"] for span in json.loads(response.read())["data"]}
    assert kinds == {"AGENT", "LLM", "TOOL"}
