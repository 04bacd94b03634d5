"""Generate ``tests/fixtures/platforms/datadog/`` from the real ddtrace: what it sends to an agent.

    python scripts/make_datadog_fixtures.py            # rewrite the files (about half a minute)
    python scripts/make_datadog_fixtures.py --venv DIR # the ddtrace environment (default below)
    python scripts/make_datadog_fixtures.py dropped    # some of the modes below

The support agent of the framework corpus (``examples/fake_model_server.py`` answers it on a
loopback port) is written against the raw OpenAI and Anthropic clients, its tools decorated with
LLM Observability's ``@tool`` and each run with ``@workflow``; ddtrace's openai and anthropic
integrations are patched. ddtrace's agent URL (``DD_TRACE_AGENT_URL``) is a loopback HTTP server this
script starts, which answers ``/info`` as an agent does and keeps what ddtrace sends: APM traces
(``PUT /v0.4/traces``, msgpack, decoded here with ``msgpack`` to JSON: each ``meta_struct`` value is
itself msgpack, decoded too) and LLM Observability span events (``POST
/evp_proxy/v2/api/v2/llmobs``, JSON as it came). Nothing in a file is edited after capture.

ddtrace runs three times, each in its own process (its settings are read at start):

* ``apm``: LLM Observability off: the integrations' APM spans alone (``openai.request`` with
  ``openai.request.model``, ``anthropic.request`` with ``anthropic.request.model`` ...), sent as
  ``/v0.4/traces`` (``DD_TRACE_API_VERSION=v0.4``);
* ``apm-v05``: the same as ddtrace sends them by default, ``/v0.5/traces`` (``[strings, traces]``,
  each span an array whose texts are indexes into the strings);
* ``llmobs-apm``: LLM Observability on with an agent: ddtrace 4 sends each LLM Observability span
  inside its APM span (``meta_struct._llmobs``) on the APM trace;
* ``split``: LLM Observability on with an agent, every trace sampled out
  (``DD_TRACE_SAMPLING_RULES``): ddtrace sends the APM traces (the agent would drop them) without
  their LLM Observability content and the span events apart through the EVP proxy: the same
  operations twice, ``split.traces.json`` and ``split.events.json``;
* ``dropped``: as ``llmobs``, with ``DD_LLMOBS_EVENT_SIZE_BYTES=1500``: a larger event's input and
  output are dropped (ddtrace writes a note in their place and ``collection_errors: ["dropped_io"]``);
* ``llmobs``: LLM Observability on with APM tracing off (``DD_APM_TRACING_ENABLED=false``): the span
  events go to the agent's EVP proxy, the payload ``[{"_dd.stage": "raw", "event_type": "span",
  "spans": [...]}, ...]``.

Each process runs four runs: ``openai-pass`` (lookup_order, track_shipment, search_policies, then the
answer), ``openai-tool-error`` (lookup_order raises; the agent hands the error to the model, which
apologises), ``openai-parallel`` (two tool calls in one model turn) and ``anthropic-pass``, each
under a plain APM span of the application's own (``support.request``). Files, what ddtrace sent in
the order it came: ``<mode>.traces.json`` (APM: the traces of all its ``/v0.4/traces`` payloads, a
list of span lists as each payload is; for ``apm-v05`` its one ``/v0.5/traces`` payload) and
``<mode>.events.json`` (LLM Observability: the payloads of the EVP proxy, each a list of payload
objects, concatenated).

ddtrace makes its own ids and the clock gives the times, so each generation writes new ids and
times (the steps and their content are the same); the tests name runs by their order, not their ids.

The ddtrace environment is made from ``scripts/datadog/requirements.txt`` (a frozen list) when it is
missing; ddtrace is needed here only, never by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import venv
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ROOT / "scripts" / "frameworks"
REQUIREMENTS = ROOT / "scripts" / "datadog" / "requirements.txt"
FIXTURES = ROOT / "tests" / "fixtures" / "platforms" / "datadog"
MODES = ("apm", "apm-v05", "llmobs-apm", "llmobs", "split", "dropped")
RUNS = ("openai-pass", "openai-tool-error", "openai-parallel", "anthropic-pass")


def environment(home: Path) -> Path:
    """The ddtrace environment, made from the frozen requirements when it is missing or stale."""
    python = home / "bin" / "python"
    stamp = home / "requirements.txt"
    if stamp.is_file() and stamp.read_bytes() == REQUIREMENTS.read_bytes():
        return python
    venv.create(home, with_pip=True, clear=True)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "-r", REQUIREMENTS], check=True
    )
    stamp.write_bytes(REQUIREMENTS.read_bytes())
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path("/work/venvs/ddtrace"))
    parser.add_argument("modes", nargs="*", choices=[*MODES, []], help="the modes to run (all)")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one process's part
    args = parser.parse_args()
    if args.mode is not None:
        run_mode(args.mode)
        return
    python = environment(args.venv)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for mode in args.modes or MODES:
        subprocess.run(
            [python, __file__, "--mode", mode],
            check=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(args.venv), "PYTHONPATH": str(FRAMEWORKS)},
        )


# --- the agent's side: a loopback server that keeps what ddtrace sends ---------------------------


class Capture(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    payloads: ClassVar[list[dict[str, Any]]] = []
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/") == "/info":
            return self._answer(
                {
                    "version": "7.60.0",
                    "endpoints": ["/v0.4/traces", "/v0.5/traces", "/evp_proxy/v2/"],
                    "client_drop_p0s": False,
                }
            )
        self._answer({})

    def do_PUT(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        import msgpack

        data = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?")[0]
        body: Any = None
        if path.endswith("/traces"):
            body = _plain(msgpack.unpackb(data, raw=False, strict_map_key=False))
        elif "llmobs" in path:
            body = json.loads(data)
        if body is not None:
            with self.lock:
                self.payloads.append({"path": path, "body": body})
        answer = {"rate_by_service": {"service:,env:": 1.0}} if path.endswith("/traces") else {}
        self._answer(answer)

    def _answer(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _plain(value: Any) -> Any:
    """A decoded msgpack value as JSON: ``meta_struct`` values (msgpack themselves) decoded."""
    import msgpack

    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "meta_struct" and isinstance(item, dict):
                item = {
                    k: msgpack.unpackb(v, raw=False) if isinstance(v, bytes) else v
                    for k, v in item.items()
                }
            out[key] = _plain(item)
        return out
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


# --- one process: ddtrace configured for one mode, the four runs -------------------------------------


def run_mode(mode: str) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    agent_url = f"http://127.0.0.1:{server.server_address[1]}"
    os.environ.update(
        {
            "DD_TRACE_AGENT_URL": agent_url,
            "DD_SERVICE": "support-agent",
            "DD_ENV": "fixtures",
            "DD_INSTRUMENTATION_TELEMETRY_ENABLED": "false",
            "DD_REMOTE_CONFIGURATION_ENABLED": "false",
            "DD_TRACE_STARTUP_LOGS": "false",
            "DD_LLMOBS_ML_APP": "support-agent",
            "DD_LLMOBS_AGENTLESS_ENABLED": "false",
            "DD_LLMOBS_ENABLED": "false" if mode.startswith("apm") else "true",
            "DD_TRACE_API_VERSION": "v0.5" if mode == "apm-v05" else "v0.4",
            "_DD_LLMOBS_WRITER_INTERVAL": "0.2",
        }
    )
    if mode in ("llmobs", "dropped"):
        os.environ["DD_APM_TRACING_ENABLED"] = "false"
    if mode == "dropped":  # an event over this size loses its input and output
        os.environ["DD_LLMOBS_EVENT_SIZE_BYTES"] = "1500"
    if mode == "split":  # every trace sampled out: the agent would drop it, so the events go apart
        os.environ["DD_TRACE_SAMPLING_RULES"] = '[{"sample_rate": 0}]'
    import agent  # scripts/datadog/agent.py: imports ddtrace, so after the settings above

    agent.run_all(RUNS)
    _wait_for(mode)
    server.shutdown()
    _write(mode)


def _wait_for(mode: str) -> None:
    """Flush ddtrace and wait until what it sends has come (a second with nothing new)."""
    from ddtrace.llmobs import LLMObs
    from ddtrace.trace import tracer

    if not mode.startswith("apm"):
        LLMObs.flush()
    tracer.flush()
    seen, quiet = -1, 0.0
    while quiet < 1.0:
        time.sleep(0.2)
        with Capture.lock:
            count = len(Capture.payloads)
        quiet = quiet + 0.2 if count == seen else 0.0
        seen = count
    if not mode.startswith("apm"):
        LLMObs.disable()
    tracer.shutdown()


def _write(mode: str) -> None:
    payloads = Capture.payloads
    if mode in ("llmobs", "split", "dropped"):
        events = [event for p in payloads if "llmobs" in p["path"] for event in p["body"]]
        (FIXTURES / f"{mode}.events.json").write_text(json.dumps(events, indent=1) + "\n")
        print(f"{mode}: {len(events)} span events", file=sys.stderr)
        if mode != "split":
            return
    if mode == "apm-v05":  # one payload: [strings, traces], each span an array of string indexes
        (bodies,) = [p["body"] for p in payloads if p["path"].endswith("/traces")]
        (FIXTURES / f"{mode}.traces.json").write_text(json.dumps(bodies, indent=1) + "\n")
        print(f"{mode}: {len(bodies[1])} traces", file=sys.stderr)
        return
    traces = [t for p in payloads if p["path"].endswith("/traces") for t in p["body"]]
    (FIXTURES / f"{mode}.traces.json").write_text(json.dumps(traces, indent=1) + "\n")
    spans = sum(len(t) for t in traces)
    print(f"{mode}: {len(traces)} traces, {spans} spans", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent / "datadog"))
    main()
