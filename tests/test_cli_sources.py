"""How ``list`` and ``import`` show where a run came from: a file's path relative to the working
directory, a URL as it is (issue 38: the receiver's ``http://`` read as a path lost a slash)."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from typer.testing import CliRunner

from otel_replay import Store
from otel_replay.cli._common import display_path
from otel_replay.receiver._http import Receiver
from tests.cli_helpers import invoke, ok


def _send_one_run(url: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("tests.sources")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span(
            "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
        ):
            pass
    provider.shutdown()


def test_list_shows_the_receivers_url_with_both_slashes(tmp_path: Path) -> None:
    store_file = tmp_path / "store.db"
    receiver = Receiver(lambda: Store.open(store_file), "127.0.0.1", 0, flush_after=30.0)
    receiver.start()
    try:
        _send_one_run(receiver.url)
    finally:
        receiver.stop()
    shown = ok(invoke(CliRunner(), store_file, "list")).output
    assert f"otlp-http {receiver.url}" in shown, shown
    assert "http:/1" not in shown


@pytest.mark.parametrize(
    "source",
    [
        "otlp-http http://127.0.0.1:4318",
        "phoenix://localhost:6006/default",
        "https://example.com/a//b",
    ],
)
def test_a_url_is_shown_as_it_is(source: str) -> None:
    assert display_path(source, spare=-500) == source


def test_a_file_below_the_working_directory_is_shown_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert display_path(str(tmp_path / "traces" / "run.json"), spare=-500) == "traces/run.json"
