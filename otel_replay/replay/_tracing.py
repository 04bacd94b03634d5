"""A recorded run as real OpenTelemetry spans (OpenInference attributes), through the OTel SDK.

The spans carry the steps' own timestamps, so an exported recording looks like any other agent trace:
``record --otlp-out FILE`` writes it, and ``import`` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay.messages import assistant_message, conversation
from otel_replay.model import Step, StepKind, StepStatus
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


#: The metadata of how a run was made that its root span carries (``agent_replay.<key>``).
MADE_ATTRIBUTES = ("instrument", "verifier", "redact")


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
) -> RecordedSpans:
    """Emit the run's spans with the SDK and return them encoded as one OTLP request. ``made``:
    how the run was made (its metadata's ``instrument``, ``verifier``, ``redact``), carried on the
    root span as ``agent_replay.*`` so an exported recording remembers it after import."""
    # The SDK is imported here, not at module level: only `record` needs it, and every CLI
    # command would otherwise pay for it at start-up.
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": agent_name}))
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
    root = tracer.start_span(agent_name, attributes=root_attributes, start_time=started)
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
