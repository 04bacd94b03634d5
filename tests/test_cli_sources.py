"""How ``list`` and ``import`` show where a run came from: a file's path relative to the working
directory, a URL as it is (issue 38: the receiver's ``http://`` read as a path lost a slash)."""

from __future__ import annotations

import os
import subprocess
import sys
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
from tests.cli_helpers import invoke, ok, one_line_error


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


def test_import_refuses_a_url_naming_it_whole(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    line = one_line_error(invoke(CliRunner(), store, "import", "http://127.0.0.1:4318/v1/traces"))
    assert line.startswith("error: http://127.0.0.1:4318/v1/traces is a URL: import reads")
    assert "agent-replay serve" in line
    assert not store.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["export", "--out", "http://host/runs.jsonl"],
        ["report", "html", "http://host/report.json"],
        ["list", "--store", "http://host/store.db"],
    ],
    ids=["export --out", "report html", "--store"],
)
def test_a_url_for_a_file_is_a_usage_error_and_nothing_is_written(
    tmp_path: Path, args: list[str]
) -> None:
    """Read as a path, ``http://host/x`` is ``http:/host/x``: a folder ``http:`` made and written
    in, or a file that is not there. The command says it is a URL instead."""
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "250"},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    url = next(a for a in args if "://" in a)
    command = "report html" if args[0] == "report" else args[0]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: Invalid value for ")
    assert line.endswith(f": {url} is a URL, not a file path (see: agent-replay {command} --help)")
    assert list(tmp_path.iterdir()) == []
