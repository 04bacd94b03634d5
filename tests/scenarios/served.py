"""Runs of a user's agent traced by an OpenTelemetry instrumentor into the real SDK and sent by the
OTLP/HTTP exporter to an ``agent-replay serve`` the test starts on a free loopback port."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_replay.store import Store
from tests.conftest import ROOT

T = TypeVar("T")


def traced_to_serve(
    store: Path, instrumentor: Any, service: str, runs: Callable[[], T]
) -> tuple[T, list[str]]:
    """What ``runs()`` returned while ``instrumentor`` traced it to ``serve`` (which stores into
    ``store`` and must stop cleanly), and the stored runs' ids in the order they started."""
    command = [sys.executable, "-m", "otel_replay", "--store", str(store), "serve", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert "receiving OTLP/HTTP traces at http://127.0.0.1:" in line, line
        endpoint = line.split("at ")[1].split()[0]
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        instrumentor.instrument(tracer_provider=provider)
        answered = runs()
        provider.shutdown()
    finally:
        instrumentor.uninstrument()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    with Store.open(store, read_only=True) as db:
        stored = sorted(db.summaries(), key=lambda s: s.start_time_unix_nano or 0)
    return answered, [run.id for run in stored]
