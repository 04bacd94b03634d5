"""A real Arize Phoenix for the platform tests: ``phoenix serve`` from its own venv (``.phoenix-venv``,
which ``.ci/run`` installs), on free loopback ports, with its SQLite database in a temporary folder.

Starting it takes about 20 seconds, so one server serves the whole session (``phoenix``); the server
with authentication on (``phoenix_auth``) starts only when a test asks for it. Without the venv the
tests skip with the reason; under CI (the ``CI`` variable set) they fail instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import ROOT

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

PHOENIX_VENV = ROOT / ".phoenix-venv"
PHOENIX = PHOENIX_VENV / "bin" / "phoenix"
_READY_SECONDS = 180.0
# the secrets of the server with authentication on (Phoenix wants 32 characters, digits, lower case)
_SECRET = "agent-replay-test-secret-0123456789"
ADMIN_KEY = "agent-replay-test-admin-9876543210"


@dataclass(frozen=True)
class Phoenix:
    """A running server: ``address`` is HOST:PORT, as ``phoenix://`` URLs name it."""

    address: str
    key: str | None = None
    started_in: float = 0.0

    @property
    def base(self) -> str:
        return f"http://{self.address}"

    def send(self, spans: Sequence[ReadableSpan], project: str) -> None:
        """Export ``spans`` into ``project`` through the real OTLP/HTTP exporter."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import SpanExportResult

        headers = {"x-project-name": project}
        if self.key:
            headers["authorization"] = f"Bearer {self.key}"
        exporter = OTLPSpanExporter(endpoint=f"{self.base}/v1/traces", headers=headers)
        try:
            assert exporter.export(spans) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        # Phoenix queues what it receives and inserts it a moment later: wait until it is there
        trace_ids = sorted({format(s.context.trace_id, "032x") for s in spans if s.context})
        query = urllib.parse.urlencode([("limit", "1000"), *(("trace_id", t) for t in trace_ids)])
        request = urllib.request.Request(
            f"{self.base}/v1/projects/{urllib.parse.quote(project)}/spans/otlpv1?{query}",
            headers={"authorization": f"Bearer {self.key}"} if self.key else {},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    if len(json.loads(response.read())["data"]) >= len(spans):
                        return
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # the project appears with its first span
                    raise
            assert time.monotonic() < deadline, f"Phoenix did not store the spans of {trace_ids}"
            time.sleep(0.2)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _require_phoenix() -> None:
    if PHOENIX.exists():
        return
    reason = (
        f"Arize Phoenix is not installed in {PHOENIX_VENV} (python3 -m venv .phoenix-venv && "
        ".phoenix-venv/bin/pip install arize-phoenix==20.26.1; .ci/run does it)"
    )
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def _serve(folder: Path, extra: dict[str, str], key: str | None) -> Iterator[Phoenix]:
    _require_phoenix()
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        **extra,
    }
    log = folder / "phoenix.log"
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=out, stderr=out)
    try:
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                pytest.fail(f"phoenix serve exited with {process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() - started > _READY_SECONDS:
                    pytest.fail(f"phoenix serve not ready after {_READY_SECONDS:.0f} s")
                time.sleep(0.25)
        yield Phoenix(f"127.0.0.1:{port}", key, time.monotonic() - started)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """A Phoenix without authentication, for the whole session."""
    yield from _serve(tmp_path_factory.mktemp("phoenix"), {}, None)


@pytest.fixture(scope="session")
def phoenix_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """A Phoenix with authentication on; ``key`` (its admin secret) is a key it accepts."""
    extra = {
        "PHOENIX_ENABLE_AUTH": "true",
        "PHOENIX_SECRET": _SECRET,
        "PHOENIX_ADMIN_SECRET": ADMIN_KEY,
    }
    yield from _serve(tmp_path_factory.mktemp("phoenix-auth"), extra, ADMIN_KEY)
