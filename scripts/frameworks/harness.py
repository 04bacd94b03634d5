"""What every framework's ``run.py`` shares: the tools, the three runs, the tracer, the export.

A framework script calls `main` with a function that instruments the framework and one function per
run. Each run is wrapped in a root span ``support run <name>`` carrying the run's outcome
(``agent_replay.outcome``: 1.0 when the answer is the right one) and what the scenario performed:
``agent_replay.scenario.model_requests`` (the model requests the fake server answered during the
run) and ``agent_replay.scenario.tool_executions`` (the calls of the scenario's tool functions,
failed ones included), the tally the corpus test holds each run's steps to. Span and trace ids come from a
seeded generator, so a regenerated corpus keeps its ids (timestamps are real). The spans are written
as one bare OTLP protobuf body (``ExportTraceServiceRequest``) to the path given on the command line;
`scripts/make_framework_fixtures.py` turns it into OTLP JSON Lines as well.

Runs:

* ``pass`` — "Where is my order A-1001 ...": lookup_order, track_shipment, search_policies, answer.
* ``tool-error`` — the same question; ``lookup_order`` raises, the agent apologises (outcome 0).
* ``retrieval`` — "What is your refund policy ...": the refund policy retrieved, then answered.
* ``parallel`` — "Look order A-1001 up and check the refund policy at once ...": the model's first
  response asks for two tool calls (lookup_order and search_policies), then track_shipment, answer.
  Only the frameworks whose ``run.py`` passes it run it (`ALL_RUNS`); the others' fixtures predate it.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import fake_models
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

ORDER_QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"
POLICY_QUESTION = "What is your refund policy for late deliveries?"
PARALLEL_QUESTION = fake_models.PARALLEL_QUESTION
SYSTEM_PROMPT = (
    "You are a customer-support agent. Use the tools to look orders up, track shipments and check "
    "the policies before you answer."
)
RUNS = ("pass", "tool-error", "retrieval")
ALL_RUNS = (*RUNS, "parallel")

_failing: set[str] = set()
#: The calls of the tool functions below during the current run (`main` resets it).
_executions = [0]


class ToolFailure(RuntimeError):
    pass


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    _executions[0] += 1
    if "lookup_order" in _failing:
        raise ToolFailure("order service unavailable (HTTP 503)")
    return dict(fake_models.ORDER, order_id=order_id)


def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is, by its tracking id."""
    _executions[0] += 1
    return dict(fake_models.SHIPMENT, tracking_id=tracking_id)


def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    _executions[0] += 1
    words = set(query.lower().split())
    return [p for p in fake_models.POLICIES if words & set(p.lower().replace(":", " ").split())][:2]


def question(run: str) -> str:
    if run == "parallel":
        return PARALLEL_QUESTION
    return POLICY_QUESTION if run == "retrieval" else ORDER_QUESTION


def _outcome(run: str, answer: Any) -> float:
    text = str(answer)
    if run == "retrieval":
        return 1.0 if "refund" in text.lower() else 0.0
    return 1.0 if "delayed" in text else 0.0


class SeededIds(IdGenerator):
    """Span and trace ids from a seeded generator: the same corpus ids on every regeneration."""

    def __init__(self, seed: str) -> None:
        self._random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128) or 1


def main(
    framework: str,
    instrument: Callable[[TracerProvider], None],
    runs: dict[str, Callable[[str], Any]],
    handler: type[BaseHTTPRequestHandler] = fake_models.Handler,
) -> None:
    """Instrument, start the fake model server, run each run under its root span, write the spans.

    Each run function takes the fake server's base URL (``http://127.0.0.1:PORT``) and returns the
    agent's answer.
    """
    out = Path(sys.argv[1])
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": f"support-agent-{framework}"}),
        id_generator=SeededIds(framework),
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    instrument(provider)
    tracer = provider.get_tracer("agent-replay.framework-corpus")
    _, url = fake_models.serve(handler=handler)
    for run in ALL_RUNS:
        if run not in runs:
            continue
        _failing.clear()
        if run == "tool-error":
            _failing.add("lookup_order")
        _executions[0] = fake_models.SERVED["model"] = 0
        with tracer.start_as_current_span(f"support run {run}") as span:
            answer = runs[run](url)
            span.set_attribute("agent_replay.outcome", _outcome(run, answer))
            span.set_attribute("agent_replay.scenario.model_requests", fake_models.SERVED["model"])
            span.set_attribute("agent_replay.scenario.tool_executions", _executions[0])
        print(f"{framework} {run}: {str(answer)[:100]!r}", file=sys.stderr)
    provider.force_flush()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
    print(f"{framework}: {len(exporter.get_finished_spans())} spans -> {out}", file=sys.stderr)
