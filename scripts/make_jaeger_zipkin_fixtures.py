"""Generate the LLM-agent traces of ``tests/fixtures/platforms/zipkin/`` and ``.../jaeger/``.

    /work/venvs/zipkin/bin/python scripts/make_jaeger_zipkin_fixtures.py          # rewrite them
    /work/venvs/zipkin/bin/python scripts/make_jaeger_zipkin_fixtures.py --check  # exit 1 if stale

Runs in a venv holding ``opentelemetry-sdk`` and ``opentelemetry-exporter-zipkin-json`` (not the
project's: nothing here is imported by the package or its tests). One run of a small support agent
is traced by the real OpenTelemetry SDK with OTel GenAI attributes: the root span (``invoke_agent``,
the run's outcome in ``agent_replay.outcome``), a model call that asks for two tools at once, the
two tool calls running side by side (``issue_refund`` fails), and the model's last answer. Ids and
clocks are fixed, so the files are the same byte for byte every run. Files written:

* ``zipkin/support-agent.zipkin.json``: the body the real Zipkin JSON v2 exporter POSTs, captured by a
  loopback server this script starts (nothing is edited; it is only pretty-printed). The exporter's
  tag limit is raised from its default of 128 characters (which cuts the messages) to 16K, as a user
  who wants the content would.
* ``jaeger/support-agent.jaeger.json``: the same run, and a passing run a day later, as Jaeger's
  query API answers ``GET /api/traces?service=support-agent`` (what the UI downloads). No Python library writes Jaeger JSON any more
  (the Jaeger exporters were removed from opentelemetry-python in 2023 and sent Thrift or protobuf
  anyway), so the SDK's spans are converted here by the mapping Jaeger documents and applies when it
  stores OTLP spans: ``span.kind``, ``error: true`` and ``otel.status_description`` for the status,
  ``otel.scope.name``/``version`` tags, the parent as a ``CHILD_OF`` reference, events as logs named
  by an ``event`` field, attributes typed (lists as their JSON text), and the resource as the
  process (``service.name`` its ``serviceName``). This converter was written from that description;
  it copies no code.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.exporter.zipkin.json import ZipkinExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

REPO_ROOT = Path(__file__).resolve().parents[1]
OUT = REPO_ROOT / "tests" / "fixtures" / "platforms"
T0 = 1_773_500_000_000_000_000  # 2026-03-14T14:53:20Z
MS = 1_000_000
MODEL = "gpt-4o-mini"
TASK = "My order 1042 arrived broken. Where is the replacement, and can I have a refund?"
SYSTEM = "You are the support agent of a web shop. Use the tools; never invent an order's state."
TOOLS = [
    {"type": "function", "name": "lookup_order", "parameters": {"order_id": "string"}},
    {"type": "function", "name": "issue_refund", "parameters": {"order_id": "string"}},
]


class FixedIds(IdGenerator):
    """Ids from a seeded generator, so every run writes the same files."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64)

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128)


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _chat_attributes(inputs: list[dict[str, Any]], output: dict[str, Any], usage: tuple[int, int]):
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": MODEL,
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps([output]),
        "gen_ai.tool.definitions": json.dumps(TOOLS),
        "gen_ai.response.finish_reasons": [output["finish_reason"]],
        "gen_ai.usage.input_tokens": usage[0],
        "gen_ai.usage.output_tokens": usage[1],
    }


def run_agent(provider: TracerProvider, refund_fails: bool = True, day: int = 0) -> None:
    """One run of the support agent, its clock fixed (``day`` days after `T0`): spans start and
    end at given times. The refund fails (a timeout), or is made."""
    t0 = T0 + day * 86_400_000 * MS
    tracer = provider.get_tracer("support_agent", "0.1.0")
    calls = [
        {"type": "tool_call", "id": "call_lookup", "name": "lookup_order",
         "arguments": {"order_id": "1042"}},
        {"type": "tool_call", "id": "call_refund", "name": "issue_refund",
         "arguments": {"order_id": "1042"}},
    ]  # fmt: skip
    asked = {"role": "assistant", "parts": calls, "finish_reason": "tool_call"}
    order = {"order_id": "1042", "status": "replacement shipped", "eta": "2026-03-17"}
    root = tracer.start_span(
        "invoke_agent support_agent",
        start_time=t0,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support_agent",
            "gen_ai.input.messages": json.dumps([_text("user", TASK)]),
        },
    )
    inside = set_span_in_context(root)
    first = tracer.start_span(
        f"chat {MODEL}", inside, SpanKind.CLIENT, start_time=t0 + 5 * MS,
        attributes=_chat_attributes([_text("user", TASK)], asked, (182, 41)),
    )  # fmt: skip
    first.end(end_time=t0 + 905 * MS)
    lookup = tracer.start_span(
        "execute_tool lookup_order", inside, SpanKind.INTERNAL, start_time=t0 + 910 * MS,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "call_lookup",
            "gen_ai.tool.call.arguments": json.dumps(calls[0]["arguments"]),
        },
    )  # fmt: skip
    refund = tracer.start_span(
        "execute_tool issue_refund", inside, SpanKind.INTERNAL, start_time=t0 + 911 * MS,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "issue_refund",
            "gen_ai.tool.call.id": "call_refund",
            "gen_ai.tool.call.arguments": json.dumps(calls[1]["arguments"]),
        },
    )  # fmt: skip
    lookup.set_attribute("gen_ai.tool.call.result", json.dumps(order))
    lookup.end(end_time=t0 + 960 * MS)
    if refund_fails:
        # never raised, so its stack trace is its one line (no path of this checkout in the files)
        failure = TimeoutError("payments service did not answer within 30 s")
        refund.record_exception(failure, timestamp=t0 + 1911 * MS)
        refund.set_attribute("error.type", "TimeoutError")
        refund.set_status(Status(StatusCode.ERROR, str(failure)))
        refund.end(end_time=t0 + 1912 * MS)
        refunded = json.dumps({"error": str(failure)})
        answer = (
            "Your replacement for order 1042 has shipped and should arrive on 2026-03-17. I could "
            "not issue the refund: the payments service timed out. Please try again later."
        )
    else:
        refunded = json.dumps({"refund_id": "R-7731", "amount": 49.0})
        refund.set_attribute("gen_ai.tool.call.result", refunded)
        refund.end(end_time=t0 + 1412 * MS)
        answer = (
            "Your replacement for order 1042 has shipped and should arrive on 2026-03-17, and "
            "your refund of 49.00 is on its way (reference R-7731)."
        )
    results = [
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_lookup",
                                    "response": json.dumps(order)}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_refund",
                                    "response": refunded}]},
    ]  # fmt: skip
    last = tracer.start_span(
        f"chat {MODEL}", inside, SpanKind.CLIENT, start_time=t0 + 1920 * MS,
        attributes=_chat_attributes(
            [_text("user", TASK), asked, *results],
            {**_text("assistant", answer), "finish_reason": "stop"},
            (301, 52),
        ),
    )  # fmt: skip
    last.end(end_time=t0 + 2850 * MS)
    root.set_attribute("gen_ai.output.messages", json.dumps([_text("assistant", answer)]))
    root.set_attribute("agent_replay.outcome", 0.0 if refund_fails else 1.0)
    root.end(end_time=t0 + 2860 * MS)


def _provider(seed: int) -> tuple[TracerProvider, InMemorySpanExporter]:
    # not Resource.create: its SDK version and random service.instance.id would change the files
    resource = Resource({"service.name": "support-agent", "deployment.environment": "dev"})
    provider = TracerProvider(resource=resource, id_generator=FixedIds(seed))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def zipkin_body() -> list[Any]:
    """What the Zipkin exporter POSTs, received by a loopback server."""
    bodies: list[bytes] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(202)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        provider, _ = _provider(39)
        endpoint = f"http://127.0.0.1:{server.server_port}/api/v2/spans"
        exporter = ZipkinExporter(endpoint=endpoint, max_tag_value_length=16384)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        run_agent(provider)
        provider.shutdown()
    finally:
        server.shutdown()
    spans: list[Any] = []
    for body in bodies:  # one POST per span (a simple processor)
        spans.extend(json.loads(body))
    return spans


def jaeger_answer() -> dict[str, Any]:
    """The failing run (the one the Zipkin file holds) and a passing run a day later, as Jaeger's
    query API answers ``GET /api/traces?service=support-agent``."""
    traces = []
    for seed, refund_fails, day in ((39, True, 0), (40, False, 1)):
        provider, memory = _provider(seed)
        run_agent(provider, refund_fails, day)
        provider.shutdown()
        traces.append(_trace(memory.get_finished_spans()))
    return {"data": traces, "total": 0, "limit": 0, "offset": 0, "errors": None}


def _trace(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    processes: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}
    converted = []
    for span in spans:
        process = _process(span)
        digest = json.dumps(process, sort_keys=True)
        if digest not in keys:
            keys[digest] = f"p{len(keys) + 1}"
            processes[keys[digest]] = process
        converted.append(_span(span, keys[digest]))
    trace_id = converted[0]["traceID"]
    return {"traceID": trace_id, "spans": converted, "processes": processes, "warnings": None}


def _tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, (list, tuple)):
        return {"key": key, "type": "string", "value": json.dumps(list(value))}
    return {"key": key, "type": "string", "value": str(value)}


def _process(span: ReadableSpan) -> dict[str, Any]:
    attributes = dict(span.resource.attributes)
    service = attributes.pop("service.name", "")
    return {"serviceName": service, "tags": [_tag(k, v) for k, v in attributes.items()]}


_KINDS = {
    SpanKind.CLIENT: "client",
    SpanKind.SERVER: "server",
    SpanKind.PRODUCER: "producer",
    SpanKind.CONSUMER: "consumer",
    SpanKind.INTERNAL: "internal",
}


def _span(span: ReadableSpan, process_id: str) -> dict[str, Any]:
    context = span.get_span_context()
    trace_id = format(context.trace_id, "032x")
    tags = []
    scope = span.instrumentation_scope
    if scope is not None and scope.name:
        tags.append(_tag("otel.scope.name", scope.name))
    if scope is not None and scope.version:
        tags.append(_tag("otel.scope.version", scope.version))
    tags += [_tag(k, v) for k, v in (span.attributes or {}).items()]
    tags.append(_tag("span.kind", _KINDS[span.kind]))
    if span.status.status_code is StatusCode.OK:
        tags.append(_tag("otel.status_code", "OK"))
    elif span.status.status_code is StatusCode.ERROR:
        tags.append(_tag("error", True))
    if span.status.description:
        tags.append(_tag("otel.status_description", span.status.description))
    references = []
    if span.parent is not None:
        references.append(
            {
                "refType": "CHILD_OF",
                "traceID": trace_id,
                "spanID": format(span.parent.span_id, "016x"),
            }
        )
    logs = [
        {
            "timestamp": event.timestamp // 1000,
            "fields": [_tag("event", event.name)]
            + [_tag(k, v) for k, v in (event.attributes or {}).items()],
        }
        for event in span.events
    ]
    assert span.start_time is not None and span.end_time is not None
    return {
        "traceID": trace_id,
        "spanID": format(context.span_id, "016x"),
        "operationName": span.name,
        "references": references,
        "startTime": span.start_time // 1000,
        "duration": (span.end_time - span.start_time) // 1000,
        "tags": tags,
        "logs": logs,
        "processID": process_id,
        "warnings": None,
    }


def generate(out: Path) -> list[Path]:
    (out / "zipkin").mkdir(parents=True, exist_ok=True)
    (out / "jaeger").mkdir(parents=True, exist_ok=True)
    written = {
        out / "zipkin" / "support-agent.zipkin.json": zipkin_body(),
        out / "jaeger" / "support-agent.jaeger.json": jaeger_answer(),
    }
    for path, document in written.items():
        path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return list(written)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are stale")
    args = parser.parse_args(argv)
    if not args.check:
        for path in generate(OUT):
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        stale = [
            path.relative_to(Path(scratch))
            for path in generate(Path(scratch))
            if path.read_bytes() != (OUT / path.relative_to(Path(scratch))).read_bytes()
        ]
    for path in stale:
        print(f"stale: {path}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
