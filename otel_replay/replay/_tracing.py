"""A recorded run as real OpenTelemetry spans (OpenInference attributes), through the OTel SDK.

The spans carry the steps' own timestamps, so an exported recording looks like any other agent trace:
``record --otlp-out FILE`` writes it, and ``import`` reads it back. A run agent-replay made (a fork,
a resumed run, a rollout) goes out the same way (`run_spans`), its root span naming the run it came
from and linked to that run's trace.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.hashing import digest
from otel_replay.messages import assistant_message, conversation
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.otlp_encode import spans_to_request

_SPAN_KINDS = {
    StepKind.LLM: "LLM",
    StepKind.TOOL: "TOOL",
    StepKind.RETRIEVER: "RETRIEVER",
    StepKind.EMBEDDING: "EMBEDDING",
    StepKind.RERANKER: "RERANKER",
    StepKind.GUARDRAIL: "GUARDRAIL",
    StepKind.OTHER: "CHAIN",
}


if TYPE_CHECKING:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    from otel_replay.otlp_encode import Destination, Sent

#: What an ``other`` step's span says of it beside OpenInference's ``CHAIN`` (which reads as a
#: container): its kind and name, so an exported recording imports with the step, a clock read
#: (`otel_replay.model.ENVIRONMENT_STEPS`) among them, and replays after import.
OTHER_STEP_KIND = "agent_replay.step.kind"
OTHER_STEP_NAME = "agent_replay.step.name"

#: The metadata of how a run was made that its root span carries (``agent_replay.<key>``).
MADE_ATTRIBUTES = ("instrument", "verifier", "redact")

#: The metadata that says where a made run came from and how, carried on its root span as
#: ``agent_replay.<key>`` (values that are not a string or a number as JSON).
LINEAGE_ATTRIBUTES = (
    "forked_from",
    "fork_at",
    "move",
    "injected",
    "do_step",
    "resumed_from",
    "frontier",
    "rollout_of",
    "plan",
    "plan_steps",
    "rollout",
)

_HEX = {32: re.compile("[0-9a-f]{32}"), 16: re.compile("[0-9a-f]{16}")}


@dataclass(frozen=True, slots=True)
class RecordedSpans:
    trace_id: str
    request: ExportTraceServiceRequest


def _json(value: Any) -> str:
    # key order as recorded: an imported copy must serve outputs exactly as the agent saw them
    return orjson.dumps(value).decode()


def _step_attributes(step: Step) -> dict[str, Any]:
    attributes: dict[str, Any] = {"openinference.span.kind": _SPAN_KINDS[step.kind]}
    inputs: Any = step.inputs
    if step.kind is StepKind.OTHER:  # no convention has the kind: said so it imports as one
        attributes[OTHER_STEP_KIND] = StepKind.OTHER.value
        attributes[OTHER_STEP_NAME] = step.name
    if step.kind is StepKind.TOOL:
        attributes["tool.name"] = step.name
        inputs = step.inputs.get("arguments", step.inputs)
    elif step.kind is StepKind.LLM:
        attributes["llm.model_name"] = step.inputs.get("model", step.name)
        for i, message in enumerate(conversation(step.inputs)):  # whichever API's shape
            _message(attributes, f"llm.input_messages.{i}", message)
        for i, tool in enumerate(step.inputs.get("tools") or []):
            attributes[f"llm.tools.{i}.tool.json_schema"] = _json(tool)
        if step.inputs.get("parameters"):
            attributes["llm.invocation_parameters"] = _json(step.inputs["parameters"])
        reply = assistant_message(step.output)
        if reply is not None:
            _message(attributes, "llm.output_messages.0", reply)
    attributes["input.value"] = _json(inputs)
    attributes["input.mime_type"] = "application/json"
    if step.status is StepStatus.OK:
        attributes["output.value"] = _json(step.output)
        attributes["output.mime_type"] = "application/json"
    return attributes


def _message(attributes: dict[str, Any], prefix: str, message: dict[str, Any]) -> None:
    for key in ("role", "content", "tool_call_id", "name"):
        value = message.get(key)
        if isinstance(value, str):
            attributes[f"{prefix}.message.{key}"] = value
    for k, call in enumerate(message.get("tool_calls") or []):
        if not isinstance(call, dict):
            continue
        base = f"{prefix}.message.tool_calls.{k}.tool_call"
        if isinstance(call.get("id"), str):
            attributes[f"{base}.id"] = call["id"]
        if isinstance(call.get("name"), str):
            attributes[f"{base}.function.name"] = call["name"]
        attributes[f"{base}.function.arguments"] = _json(call.get("arguments"))


def emit_spans(
    steps: Sequence[Step],
    *,
    agent_name: str,
    arguments: Any,
    answer: Any,
    outcome: float | None,
    started: int,
    ended: int,
    error: str | None = None,
    seed: int = 0,
    agent_spec: str = "",
    made: Mapping[str, Any] | None = None,
    also: Mapping[str, Any] | None = None,
    links: Sequence[tuple[int, int, Mapping[str, Any]]] = (),
    ids: IdGenerator | None = None,
) -> RecordedSpans:
    """Emit the run's spans with the SDK and return them encoded as one OTLP request. ``made``:
    how the run was made (its metadata's ``instrument``, ``verifier``, ``redact``), carried on the
    root span as ``agent_replay.*`` so an exported recording remembers it after import. ``also``:
    more attributes of the root span; ``links``: its links, ``(trace id, span id, attributes)``;
    ``ids``: where trace and span ids come from (default the SDK's random ones)."""
    # The SDK is imported here, not at module level: only `record` needs it, and every CLI
    # command would otherwise pay for it at start-up.
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Link, SpanContext, Status, StatusCode, TraceFlags

    exporter = InMemorySpanExporter()
    resource = Resource.create({"service.name": agent_name})
    provider = TracerProvider(resource=resource, id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("otel_replay.record")
    root_attributes: dict[str, Any] = {
        "openinference.span.kind": "AGENT",
        "agent.name": agent_name,
        "input.value": _json(arguments),
        "input.mime_type": "application/json",
        "output.value": _json(answer),
        "output.mime_type": "application/json",
    }
    if outcome is not None:
        root_attributes["agent_replay.outcome"] = outcome
    # what `replay` needs to re-run the agent, so an exported recording replays after import
    root_attributes["agent_replay.seed"] = seed
    root_attributes["agent_replay.input"] = _json(arguments)
    if agent_spec:
        root_attributes["agent_replay.agent"] = agent_spec
    for key, value in (made or {}).items():
        if key in MADE_ATTRIBUTES and value:
            root_attributes[f"agent_replay.{key}"] = (
                list(value) if isinstance(value, list) else value
            )
    root_attributes.update(also or {})
    linked = [
        Link(SpanContext(trace_id, span_id, True, TraceFlags(TraceFlags.SAMPLED)), dict(said))
        for trace_id, span_id, said in links
    ]
    root = tracer.start_span(
        agent_name, attributes=root_attributes, start_time=started, links=linked
    )
    context = trace.set_span_in_context(root)
    for step in steps:
        span = tracer.start_span(
            f"{step.kind.value} {step.name}",
            context=context,
            attributes=_step_attributes(step),
            start_time=step.start_time_unix_nano or started,
        )
        if step.status is StepStatus.ERROR:
            span.set_status(Status(StatusCode.ERROR, step.error or "failed"))
        span.end(end_time=step.end_time_unix_nano or started)
    if error is not None:
        root.set_status(Status(StatusCode.ERROR, error))
    root.end(end_time=ended)
    provider.shutdown()
    spans = exporter.get_finished_spans()
    trace_id = format(root.get_span_context().trace_id, "032x")
    return RecordedSpans(trace_id, spans_to_request(spans))


def _named_ids(run_id: str) -> IdGenerator:
    """Trace and span ids derived from a run's id (an SDK ``IdGenerator``): the same run sent
    twice is the same trace, and a run sent later links to it without having kept its ids."""
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class NamedIds(IdGenerator):
        spans = 0

        def generate_trace_id(self) -> int:
            return trace_id_of(run_id)

        def generate_span_id(self) -> int:
            self.spans += 1
            return _span_id(run_id, self.spans - 1)

    return NamedIds()


def trace_id_of(run_id: str) -> int:
    """The trace id a run's spans carry: its own id when that is a trace id (an imported or recorded
    run), else one derived from it."""
    if _HEX[32].fullmatch(run_id) and int(run_id, 16):
        return int(run_id, 16)
    return int(digest(f"trace:{run_id}".encode())[:32], 16) or 1


def _span_id(run_id: str, n: int) -> int:
    return int(digest(f"span:{run_id}:{n}".encode())[:16], 16) or 1


def root_span_of(run: Trajectory) -> int:
    """The span id of ``run``'s root span: the one its span tree names, else the one `run_spans`
    gives it."""
    roots = [node.span_id for node in run.spans if node.parent_span_id is None]
    if len(roots) == 1 and _HEX[16].fullmatch(roots[0]) and int(roots[0], 16):
        return int(roots[0], 16)
    return _span_id(run.id, 0)


#: The longest pause between two steps a made run's spans keep, in nanoseconds: a longer one is
#: the time between the record and the run made from it, not the agent's.
MAX_GAP = 60 * 10**9


def laid_out(steps: Sequence[Step], now: int) -> list[Step]:
    """``steps`` placed in time as a run made now: in their order, each keeping its duration and
    the pause before it (up to `MAX_GAP`; a step without times takes none), the last ending at
    ``now``. A fork's held steps were recorded long ago; the run made from them was made when it
    is sent, and a trace stretched back to the record would be filed there."""
    spans: list[tuple[int, int]] = []  # (pause before, duration)
    before: int | None = None
    for step in steps:
        start, end = step.start_time_unix_nano, step.end_time_unix_nano
        pause = start - before if start and before is not None else 0
        spans.append(
            (pause if 0 <= pause <= MAX_GAP else 0, max(0, end - start) if start and end else 0)
        )
        before = end or start or before
    clock = now - sum(pause + duration for pause, duration in spans)
    placed = []
    for step, (pause, duration) in zip(steps, spans, strict=True):
        clock += pause
        placed.append(
            dataclasses.replace(
                step, start_time_unix_nano=clock, end_time_unix_nano=clock + duration
            )
        )
        clock += duration
    return placed


def run_spans(
    run: Trajectory,
    *,
    source: Trajectory | None = None,
    also: Mapping[str, Any] | None = None,
    now: int | None = None,
) -> RecordedSpans:
    """``run``, a run agent-replay made (a fork, a resumed run, a rollout), as the spans `record`
    emits, with ids derived from its id. Its root span also carries ``agent_replay.run_id``, the
    lineage in its metadata (`LINEAGE_ATTRIBUTES`: the run it came from, the step and move of a
    fork, the frontier of a resumed run) and ``also``, and links to ``source``'s root span, the run
    it came from (its trace and span id also as ``agent_replay.source_trace_id`` and
    ``source_span_id``). The spans are laid out to end at ``now`` (`laid_out`; default: the clock's
    time)."""
    meta = run.metadata
    now = time.time_ns() if now is None else now
    steps = laid_out(run.steps, now)
    started = (steps[0].start_time_unix_nano if steps else None) or now
    lineage: dict[str, Any] = {"agent_replay.run_id": run.id}
    for key in LINEAGE_ATTRIBUTES:
        if meta.get(key) is not None:
            value = meta[key]
            plain = isinstance(value, str | int | float) and not isinstance(value, bool)
            lineage[f"agent_replay.{key}"] = value if plain else _json(value)
    links = []
    if source is not None:  # a link, and attributes too: some backends (Phoenix) drop links
        said = {"agent_replay.link": "source", "agent_replay.run_id": source.id}
        links.append((trace_id_of(source.id), root_span_of(source), said))
        lineage["agent_replay.source_trace_id"] = format(trace_id_of(source.id), "032x")
        lineage["agent_replay.source_span_id"] = format(root_span_of(source), "016x")
    agent = str(meta.get("agent") or "")
    name = str(meta.get("service") or agent.rpartition(":")[2] or "agent")
    return emit_spans(
        steps,
        agent_name=name,
        arguments=meta.get("input"),
        answer=meta.get("answer"),
        outcome=run.outcome,
        started=started,
        ended=now,
        error=meta.get("agent_error"),
        seed=seed if isinstance(seed := meta.get("seed"), int) else 0,
        agent_spec=agent,
        made={key: meta[key] for key in MADE_ATTRIBUTES if key in meta},
        also={**lineage, **(also or {})},
        links=links,
        ids=_named_ids(run.id),
    )


def send_run(
    run: Trajectory,
    to: Destination | str,
    *,
    source: Trajectory | None = None,
    also: Mapping[str, Any] | None = None,
) -> Sent:
    """Send ``run`` (`run_spans`: linked to ``source``, with ``also`` on its root span) to an
    OTLP/HTTP endpoint: ``to``, a `otel_replay.otlp_encode.Destination` or a URL (then with the
    ``OTEL_EXPORTER_OTLP_*`` headers and compression). Raises
    `otel_replay.errors.ExportError` when the endpoint cannot be reached or refuses it."""
    from otel_replay.otlp_encode import destination, send_otlp

    where = destination(to) if isinstance(to, str) else to
    return send_otlp(run_spans(run, source=source, also=also).request, where)
