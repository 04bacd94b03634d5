"""A loopback Jaeger query service that replays captured answers, for the ``jaeger://`` client.

No Jaeger server installs here (it is a Go binary or a container; neither is available to the
tests), so this server answers the two requests the client makes from answers Jaeger itself wrote:
the traces are those of the published files in ``tests/fixtures/platforms/jaeger/`` (Jaeger's own
``otlp2jaeger-out.json`` and ``ui_01.json``, and the support agent's runs), never written by hand.

* ``GET /api/services``: the services of those traces' processes, in Jaeger's answer envelope
  (``{"data", "total", "limit", "offset", "errors"}``).
* ``GET /api/traces?service=&start=&end=&limit=``: as Jaeger's search, the whole traces having a
  span of the service that started in ``[start, end]`` (microseconds), at most ``limit`` of them.
  They are handed out oldest first, an order Jaeger does not promise either way, so a client that
  assumed newest first would miss traces.

`JaegerReplay.asked` keeps every request's path and query; ``fail_after`` makes the search answer
HTTP 500 with Jaeger's error envelope from that request on.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "platforms" / "jaeger"
ANSWERS = ("support-agent.jaeger.json", "otlp2jaeger-out.json", "ui_01.json")


def captured_traces() -> list[dict[str, Any]]:
    """The traces of the published answers, each as Jaeger sent it."""
    traces: list[dict[str, Any]] = []
    for name in ANSWERS:
        document = json.loads((FIXTURES / name).read_text())
        traces.extend(document.get("data", [document]))
    return traces


def _services(trace: dict[str, Any]) -> dict[str, list[int]]:
    """Each service of the trace and the start times of its spans."""
    processes = trace.get("processes") or {}
    out: dict[str, list[int]] = {}
    for span in trace["spans"]:
        service = processes.get(span.get("processID"), {}).get("serviceName")
        if service and isinstance(span.get("startTime"), int):  # a damaged one is not searched
            out.setdefault(service, []).append(span["startTime"])
    return out


def _envelope(data: Any, errors: Any = None) -> dict[str, Any]:
    return {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": errors}


@dataclass
class JaegerReplay:
    traces: list[dict[str, Any]]
    base: str = ""
    fail_after: int | None = None
    asked: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        self.asked.append((path, query))
        if path == "/api/services":
            names = sorted({s for t in self.traces for s in _services(t)})
            return 200, _envelope(names)
        if path != "/api/traces":
            return 404, _envelope(None, [{"code": 404, "msg": "404 page not found"}])
        searches = sum(1 for p, _ in self.asked if p == "/api/traces")
        if self.fail_after is not None and searches > self.fail_after:
            return 500, _envelope(None, [{"code": 500, "msg": "storage unavailable"}])
        service, start, end = query["service"], int(query["start"]), int(query["end"])
        found = [
            t
            for t in self.traces
            if any(start <= at <= end for at in _services(t).get(service, []))
        ]
        found.sort(key=lambda t: min(min(at) for at in _services(t).values()))
        return 200, _envelope(found[: int(query.get("limit") or 20)])


@contextmanager
def serve(traces: list[dict[str, Any]] | None = None, **options: Any) -> Iterator[JaegerReplay]:
    """A replaying server on a free loopback port, for the block."""
    replay = JaegerReplay(captured_traces() if traces is None else traces, **options)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            status, document = replay.answer(url.path, query)
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    replay.base = f"127.0.0.1:{server.server_port}"
    try:
        yield replay
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
