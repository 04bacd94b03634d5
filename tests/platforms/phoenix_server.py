"""Running a real Arize Phoenix (``phoenix serve`` from ``.phoenix-venv``) on free loopback ports,
and sending it spans through the real OTLP/HTTP exporter: for the platform tests and for
``scripts/make_phoenix_fixtures.py``."""

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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

ROOT = Path(__file__).resolve().parents[2]
PHOENIX_VENV = ROOT / ".phoenix-venv"
PHOENIX = PHOENIX_VENV / "bin" / "phoenix"
VERSION = "20.26.1"
MISSING = (
    f"Arize Phoenix is not installed in {PHOENIX_VENV} (python3 -m venv .phoenix-venv && "
    f".phoenix-venv/bin/pip install arize-phoenix=={VERSION}; .ci/run does it)"
)
_READY_SECONDS = 180.0


class PhoenixFailed(RuntimeError):
    """The server did not start, or did not store what it was sent."""


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
            exporter.shutdown()  # type: ignore[no-untyped-call]
        # Phoenix queues what it receives and inserts it a moment later: wait until it is there
        trace_ids = sorted({format(s.context.trace_id, "032x") for s in spans if s.context})
        self.wait_for(project, len(spans), trace_ids)

    def wait_for(self, project: str, count: int, trace_ids: Sequence[str] = ()) -> None:
        """Return once ``project`` holds ``count`` spans (of ``trace_ids``, when given): Phoenix
        answers an export before it has inserted all of it, and a run read half-inserted is a
        different run."""
        query = urllib.parse.urlencode([("limit", "1000"), *(("trace_id", t) for t in trace_ids)])
        request = urllib.request.Request(
            f"{self.base}/v1/projects/{urllib.parse.quote(project)}/spans/otlpv1?{query}",
            headers={"authorization": f"Bearer {self.key}"} if self.key else {},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    if len(json.loads(response.read())["data"]) >= count:
                        return
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # the project appears with its first span
                    raise
            if time.monotonic() > deadline:
                raise PhoenixFailed(f"Phoenix did not store {count} spans in {project!r}")
            time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve(
    folder: Path, extra: dict[str, str] | None = None, key: str | None = None
) -> Iterator[Phoenix]:
    """``phoenix serve`` with its database in ``folder``, until the block ends; ``extra``: more
    environment (authentication), ``key``: the key its clients send."""
    if not PHOENIX.exists():
        raise PhoenixFailed(MISSING)
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PYTHONHASHSEED": "0",  # Phoenix writes attributes in an order its string hashes decide
        **(extra or {}),
    }
    log = folder / "phoenix.log"
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=out, stderr=out)
    try:
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise PhoenixFailed(f"phoenix serve exited with {process.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() - started > _READY_SECONDS:
                    raise PhoenixFailed(
                        f"phoenix serve not ready after {_READY_SECONDS:.0f} s"
                    ) from None
                time.sleep(0.25)
        yield Phoenix(f"127.0.0.1:{port}", key, time.monotonic() - started)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
