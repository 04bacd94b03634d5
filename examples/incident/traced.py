"""Run one incident investigation under the real OpenTelemetry SDK, byte-reproducibly.

Everything that normally varies between runs is pinned: trace and span ids come from an
``IdGenerator`` seeded with the run's seed, every span gets explicit start/end times from a fake
clock seeded the same way, the resource, sampler and span limits are set explicitly (so ``OTEL_*``
environment variables cannot change the output), and exception stack traces are rewritten with
repository-relative paths. Two runs with the same arguments therefore produce identical spans.

Span tree (names for the ``openinference`` flavour; :mod:`.conventions` has both)::

    investigate                    AGENT, carries agent_replay.outcome
    ├─ ChatCompletion              LLM   (one per model turn)
    ├─ list_deploys                TOOL  (siblings of the LLM spans)
    └─ search_logs                 TOOL
       └─ HTTP GET                 plain client span no AI convention recognises
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from .conventions import AGENT_NAME, TASK, Attributes, Conventions, GenAI, OpenInference, dumps
from .model import SYSTEM_PROMPT, respond
from .world import ToolError, World

__all__ = [
    "CULPRIT",
    "MAX_TURNS",
    "Flavour",
    "Investigation",
    "SeededIdGenerator",
    "investigate",
    "outcome_of",
    "run_traced",
]

CULPRIT = "v841"
# The policy needs at most six turns; the cap only guards against a policy bug looping forever.
MAX_TURNS = 8
# 2026-03-14T14:15:00Z, a few minutes after the pager fired.
_EPOCH_NS = 1_773_497_700_000_000_000
_MS = 1_000_000
_REPO_ROOT = Path(__file__).resolve().parents[2]

Message = dict[str, Any]


class Flavour(str, Enum):
    """Which semantic convention the spans follow."""

    OPENINFERENCE = "openinference"
    GENAI = "genai"


_CONVENTIONS: dict[Flavour, Conventions] = {
    Flavour.OPENINFERENCE: OpenInference(),
    Flavour.GENAI: GenAI(),
}


@dataclass(frozen=True)
class Investigation:
    """One finished run: its spans in end order (as an exporter receives them) and its result."""

    spans: tuple[ReadableSpan, ...]
    messages: tuple[Message, ...]
    answer: str
    outcome: float


def outcome_of(answer: str) -> float:
    """The verifier: 1.0 when the answer names the deploy that really caused the incident."""
    return 1.0 if CULPRIT in answer else 0.0


class SeededIdGenerator(IdGenerator):
    """Trace and span ids drawn from ``random.Random(seed)``: random-looking, but reproducible."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._nonzero(64)

    def generate_trace_id(self) -> int:
        return self._nonzero(128)

    def _nonzero(self, bits: int) -> int:
        # An all-zero id means "invalid" in OTel; redraw rather than emit one.
        while True:
            value = self._rng.getrandbits(bits)
            if value:
                return value


class _FakeClock:
    """Nanosecond clock that only moves forward, by seeded pseudo-random durations."""

    def __init__(self, seed: int) -> None:
        # A separate stream from the id generator's, so timing draws never shift the ids; a str
        # seed is hashed with SHA-512 by `random`, hence stable across processes.
        self._rng = random.Random(f"clock:{seed}")
        self.now_ns = _EPOCH_NS + (seed % 1000) * 60_000 * _MS

    def tick(self, low_ms: int, high_ms: int) -> int:
        self.now_ns += self._rng.randint(low_ms, high_ms) * _MS
        return self.now_ns


def _portable_stacktrace(exc: BaseException) -> str:
    """The traceback with repository-relative paths and no version-specific decorations."""
    lines = ["Traceback (most recent call last):\n"]
    for frame in traceback.extract_tb(exc.__traceback__):
        path = Path(frame.filename)
        shown = (
            path.relative_to(_REPO_ROOT).as_posix()
            if path.is_relative_to(_REPO_ROOT)
            else path.name
        )
        lines.append(f'  File "{shown}", line {frame.lineno}, in {frame.name}\n')
        if frame.line:
            lines.append(f"    {frame.line.strip()}\n")
    lines.append(f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}\n")
    return "".join(lines)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# UNSET means "no limit" and, unlike None, also ignores the OTEL_*_LIMIT environment variables.
_NO_LIMITS = SpanLimits(
    max_attributes=SpanLimits.UNSET,
    max_events=SpanLimits.UNSET,
    max_links=SpanLimits.UNSET,
    max_span_attributes=SpanLimits.UNSET,
    max_event_attributes=SpanLimits.UNSET,
    max_link_attributes=SpanLimits.UNSET,
    max_attribute_length=SpanLimits.UNSET,
    max_span_attribute_length=SpanLimits.UNSET,
)


def _resource(flavour: Flavour) -> Resource:
    # Built directly rather than with Resource.create(), which would add the SDK version and
    # OTEL_RESOURCE_ATTRIBUTES and so make the bytes depend on the environment.
    attributes: Attributes = {
        "service.name": AGENT_NAME,
        "service.version": "1.0.0",
        "telemetry.sdk.language": "python",
        "telemetry.sdk.name": "opentelemetry",
    }
    if flavour is Flavour.OPENINFERENCE:
        attributes["openinference.project.name"] = "incident-investigations"
    return Resource(attributes)


class _Run:
    """The mutable state of one investigation: tracer, clock, world and conversation."""

    def __init__(self, tracer: Tracer, conventions: Conventions, seed: int, world: World) -> None:
        self.tracer = tracer
        self.conventions = conventions
        self.clock = _FakeClock(seed)
        self.world = world
        self.messages: list[Message] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": TASK},
        ]

    def start(self, name: str, parent: Span, kind: SpanKind, attributes: Attributes) -> Span:
        return self.tracer.start_span(
            name,
            context=trace.set_span_in_context(parent),
            kind=kind,
            attributes=attributes,
            start_time=self.clock.tick(1, 4),
        )

    def llm_turn(self, root: Span) -> Message:
        name, kind = self.conventions.llm()
        span = self.start(name, root, kind, {})
        reply = respond(self.messages)
        span.set_attributes(self.conventions.llm_attributes(self.messages, reply))
        if self.conventions.mark_ok:
            span.set_status(Status(StatusCode.OK))
        span.end(end_time=self.clock.tick(450, 1400))
        self.messages.append(reply)
        return reply

    def tool_call(self, root: Span, call: Mapping[str, Any]) -> None:
        name, kind, attributes = self.conventions.tool(call)
        span = self.start(name, root, kind, attributes)
        try:
            result = self._call_world(span, call)
        except ToolError as exc:
            # The SDK's own stack trace holds absolute paths; override it to stay reproducible.
            span.record_exception(
                exc,
                attributes={"exception.stacktrace": _portable_stacktrace(exc)},
                timestamp=self.clock.tick(1, 3),
            )
            span.set_status(Status(StatusCode.ERROR, _error_text(exc)))
            span.set_attributes(self.conventions.tool_error(exc))
            content = dumps({"error": _error_text(exc)})
        else:
            span.set_attributes(self.conventions.tool_result(result))
            if self.conventions.mark_ok:
                span.set_status(Status(StatusCode.OK))
            content = dumps(result)
        span.end(end_time=self.clock.tick(2, 30))
        self.messages.append(
            {"role": "tool", "tool_call_id": call["id"], "name": call["name"], "content": content}
        )

    def _call_world(self, tool_span: Span, call: Mapping[str, Any]) -> Any:
        if call["name"] != "search_logs":
            self.clock.tick(30, 250)
            return self.world.call(call["name"], call["arguments"])
        # The log backend is reached over HTTP; this child is the kind of framework span an
        # importer must fold into the enclosing tool step.
        service = call["arguments"].get("service", "")
        query = str(call["arguments"].get("query", "")).replace(" ", "+")
        http_attributes: Attributes = {
            "http.method": "GET",
            "http.url": f"http://logs.internal:9200/{service}/_search?q={query}",
        }
        http = self.start("HTTP GET", tool_span, SpanKind.CLIENT, http_attributes)
        try:
            self.clock.tick(40, 300)
            result = self.world.call(call["name"], call["arguments"])
        except ToolError:
            http.set_attribute("http.status_code", 503)
            http.set_status(Status(StatusCode.ERROR))
            raise
        else:
            http.set_attribute("http.status_code", 200)
            return result
        finally:
            http.end(end_time=self.clock.tick(1, 3))


def investigate(
    flavour: Flavour | str, seed: int, faults: Mapping[str, str] | None = None
) -> Investigation:
    """Run the investigator once and return its spans and result.

    Args:
        flavour: ``"openinference"`` or ``"genai"`` attributes.
        seed: fixes the trace/span ids and all timestamps; different seeds give different traces.
        faults: tool name → fault mode (see :data:`examples.incident.world.FAULT_MODES`), e.g.
            ``{"list_deploys": "empty"}`` makes the agent miss ``v841`` and blame the database, and
            ``{"list_deploys": "error_once"}`` gives an ERROR tool span the agent recovers from.
    """
    flavour = Flavour(flavour)
    conventions = _CONVENTIONS[flavour]
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        sampler=ALWAYS_ON,
        resource=_resource(flavour),
        shutdown_on_exit=False,
        id_generator=SeededIdGenerator(seed),
        span_limits=_NO_LIMITS,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("examples.incident", "1.0.0")
    run = _Run(tracer, conventions, seed, World(faults))

    name, kind, attributes = conventions.root()
    # An explicit empty context keeps the run a root trace even if the caller has a span active.
    root = tracer.start_span(
        name, context=Context(), kind=kind, attributes=attributes, start_time=run.clock.now_ns
    )
    answer = f"Gave up after {MAX_TURNS} turns without a root cause."
    for _ in range(MAX_TURNS):
        reply = run.llm_turn(root)
        if not reply.get("tool_calls"):
            answer = str(reply.get("content") or "")
            break
        for call in reply["tool_calls"]:
            run.tool_call(root, call)
    outcome = outcome_of(answer)
    root.set_attributes(conventions.root_end(answer, outcome))
    if conventions.mark_ok:
        root.set_status(Status(StatusCode.OK))
    root.end(end_time=run.clock.tick(2, 8))
    spans = exporter.get_finished_spans()
    provider.shutdown()
    return Investigation(tuple(spans), tuple(run.messages), answer, outcome)


def run_traced(
    flavour: Flavour | str, seed: int, faults: Mapping[str, str] | None = None
) -> list[ReadableSpan]:
    """The finished spans of one run, in end order (children before parents, as exported)."""
    return list(investigate(flavour, seed, faults).spans)
