"""Runs as OTLP spans: what a step's span says of it, and a stored run as one OTLP trace.

`step_attributes` is a step in OpenInference's attributes (``openinference.span.kind``,
``llm.input_messages.*``, ``llm.output_messages.*``, ``input.value``/``output.value``, ``tool.name``),
what ``record --otlp-out`` and the runs ``--otlp-endpoint`` sends carry (`otel_replay.replay`
emits them through the SDK). `genai_attributes` is the same step in OTel GenAI's
(``gen_ai.operation.name``, ``gen_ai.input.messages``/``gen_ai.output.messages`` as JSON,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``/``result``, the
tokens). `run_request` writes a stored run as one trace with both, for ``export --format
otlp-json|otlp-proto``:

* a root span (the run: ``agent_replay.run_id``, ``agent_replay.outcome``, ``agent_replay.task``,
  ``service.name`` on the resource) and a span per step;
* an imported run keeps its trace id, its spans' ids, names, times and tree (the structure spans
  among them, as a structure span with no attributes of a convention); a run agent-replay made
  (recorded, forked, resumed) gets ids derived from its id and each step's position (`span_id_of`:
  the same ids `otel_replay.replay.run_spans` gives it) and times from its steps;
* a fork or a resumed run links to its source's root span and to the step it was made at, and
  names both in attributes (some backends drop links);
* a kept attribution report, when given, is written on the root (``agent_replay.verdict``,
  ``agent_replay.point_of_commitment``, ``agent_replay.explanation``) and on the culprit step's
  span (``agent_replay.verdict``, ``agent_replay.attribution`` and its interval).

Each step's span also carries the step's own record (`otel_replay.importers.RECORD_ATTRIBUTE`:
kind, name, inputs, output, status, error as JSON), which the importer reads back as the step, so
an exported run imports here to the same content whichever conventions its content fits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from otel_replay.hashing import digest
from otel_replay.importers._exported import RECORD_ATTRIBUTE
from otel_replay.messages import assistant_message, conversation
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.transcript import task

if TYPE_CHECKING:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

__all__ = [
    "LINEAGE_ATTRIBUTES",
    "MADE_ATTRIBUTES",
    "OTHER_STEP_KIND",
    "OTHER_STEP_NAME",
    "genai_attributes",
    "lineage_attributes",
    "root_span_of",
    "run_request",
    "span_id_of",
    "step_attributes",
    "trace_id_of",
]

_SPAN_KINDS = {
    StepKind.LLM: "LLM",
    StepKind.TOOL: "TOOL",
    StepKind.RETRIEVER: "RETRIEVER",
    StepKind.EMBEDDING: "EMBEDDING",
    StepKind.RERANKER: "RERANKER",
    StepKind.GUARDRAIL: "GUARDRAIL",
    StepKind.OTHER: "CHAIN",
}

#: OTel GenAI's ``gen_ai.operation.name`` of the kinds it names.
_GENAI_OPERATIONS = {
    StepKind.LLM: "chat",
    StepKind.TOOL: "execute_tool",
    StepKind.EMBEDDING: "embeddings",
    StepKind.RETRIEVER: "retrieval",
}

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


def _json(value: Any) -> str:
    # key order as recorded: an imported copy must serve outputs exactly as the agent saw them
    return orjson.dumps(value).decode()


def step_attributes(step: Step) -> dict[str, Any]:
    """``step`` in OpenInference's attributes (and, for an ``other`` step, agent-replay's)."""
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


def genai_attributes(step: Step, usage: Mapping[str, int] | None = None) -> dict[str, Any]:
    """``step`` in OTel GenAI's attributes, with its tokens (``input_tokens``, ``output_tokens``,
    ``total_tokens``, as the importers keep them) in GenAI's and OpenInference's names."""
    attributes: dict[str, Any] = {}
    operation = _GENAI_OPERATIONS.get(step.kind)
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
    if step.kind is StepKind.TOOL:
        attributes["gen_ai.tool.name"] = step.name
        call_id = step.inputs.get("tool_call_id")
        if isinstance(call_id, str):
            attributes["gen_ai.tool.call.id"] = call_id
            attributes["tool_call.id"] = call_id  # OpenInference's
        if "arguments" in step.inputs:
            attributes["gen_ai.tool.call.arguments"] = _json(step.inputs["arguments"])
        if step.status is StepStatus.OK:
            attributes["gen_ai.tool.call.result"] = _json(step.output)
    elif step.kind is StepKind.LLM:
        model = step.inputs.get("model", step.name)
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        messages = [_genai_message(m) for m in conversation(step.inputs)]
        if messages:
            attributes["gen_ai.input.messages"] = _json(messages)
        reply = assistant_message(step.output)
        if reply is not None:
            said = _genai_message(reply)
            said["finish_reason"] = str(reply.get("finish_reason") or "stop")
            attributes["gen_ai.output.messages"] = _json([said])
        if step.inputs.get("tools"):
            attributes["gen_ai.tool.definitions"] = _json(step.inputs["tools"])
    elif step.kind is StepKind.EMBEDDING and isinstance(step.inputs.get("model"), str):
        attributes["gen_ai.request.model"] = step.inputs["model"]
    if step.status is StepStatus.ERROR:
        attributes["error.type"] = "_OTHER"  # GenAI's value when the error's type is not known
    for ours, genai, openinference in (
        ("input_tokens", "gen_ai.usage.input_tokens", "llm.token_count.prompt"),
        ("output_tokens", "gen_ai.usage.output_tokens", "llm.token_count.completion"),
        ("total_tokens", None, "llm.token_count.total"),
    ):
        count = (usage or {}).get(ours)
        if isinstance(count, int):
            if genai is not None:
                attributes[genai] = count
            attributes[openinference] = count
    return attributes


def _genai_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message of the store's shape as GenAI's (``{"role", "parts": [...]}``)."""
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if message.get("role") == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}
        )
    elif isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                parts.append({"type": "text", "content": part})
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append({"type": "text", "content": part["text"]})
            elif isinstance(part, dict):
                parts.append({"type": str(part.get("type") or "unknown"), **part})
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": call.get("arguments"),
                }
            )
    said: dict[str, Any] = {"role": str(message.get("role") or "user"), "parts": parts}
    if isinstance(message.get("name"), str) and message.get("role") != "tool":
        said["name"] = message["name"]
    return said


def trace_id_of(run_id: str) -> int:
    """The trace id a run's spans carry: its own id when that is a trace id (an imported or recorded
    run), else one derived from it."""
    if _HEX[32].fullmatch(run_id) and int(run_id, 16):
        return int(run_id, 16)
    return int(digest(f"trace:{run_id}".encode())[:32], 16) or 1


def span_id_of(run_id: str, n: int) -> int:
    """The span id derived for the ``n``-th span of a run that has no span ids of its own (its
    root is 0, its steps 1, 2, …)."""
    return int(digest(f"span:{run_id}:{n}".encode())[:16], 16) or 1


def _node_id(run_id: str, given: str) -> int:
    """A span id of an imported run's tree: its own when it is one (16 hex digits, not all 0),
    else one derived from it."""
    if _HEX[16].fullmatch(given) and int(given, 16):
        return int(given, 16)
    return int(digest(f"node:{run_id}:{given}".encode())[:16], 16) or 1


def root_span_of(run: Trajectory) -> int:
    """The span id of ``run``'s root span: the one its span tree names, else the one `run_spans`
    gives it."""
    roots = [node.span_id for node in run.spans if node.parent_span_id is None]
    if len(roots) == 1 and _HEX[16].fullmatch(roots[0]) and int(roots[0], 16):
        return int(roots[0], 16)
    return span_id_of(run.id, 0)


def step_span_of(run: Trajectory, index: int) -> int:
    """The span id of step ``index`` of ``run`` as `run_request` writes it."""
    return _step_ids(run)[index]


def _step_ids(run: Trajectory) -> list[int]:
    ids: list[int] = []
    taken: set[int] = set()
    for step in run.steps:
        given = step.span_id
        mine = _node_id(run.id, given) if given else span_id_of(run.id, step.index + 1)
        if mine in taken:  # two steps read from one span: the second gets its own
            mine = span_id_of(run.id, step.index + 1)
        taken.add(mine)
        ids.append(mine)
    return ids


def lineage_attributes(
    run: Trajectory, source: Trajectory | None
) -> tuple[dict[str, Any], list[tuple[int, int, dict[str, Any]]]]:
    """What ``run``'s root span says of where it came from (`LINEAGE_ATTRIBUTES`, as
    ``agent_replay.<key>``, and ``agent_replay.run_id``), and its link to ``source``'s root span
    (``(trace id, span id, attributes)``; its trace and span id also as
    ``agent_replay.source_trace_id`` and ``source_span_id``: some backends, Phoenix, drop links)."""
    meta = run.metadata
    lineage: dict[str, Any] = {"agent_replay.run_id": run.id}
    for key in LINEAGE_ATTRIBUTES:
        if meta.get(key) is not None:
            value = meta[key]
            plain = isinstance(value, str | int | float) and not isinstance(value, bool)
            lineage[f"agent_replay.{key}"] = value if plain else _json(value)
    links: list[tuple[int, int, dict[str, Any]]] = []
    if source is not None:
        said = {"agent_replay.link": "source", "agent_replay.run_id": source.id}
        links.append((trace_id_of(source.id), root_span_of(source), said))
        lineage["agent_replay.source_trace_id"] = format(trace_id_of(source.id), "032x")
        lineage["agent_replay.source_span_id"] = format(root_span_of(source), "016x")
    return lineage, links


def recording_attributes(
    *,
    arguments: Any,
    answer: Any,
    outcome: float | None,
    seed: int,
    agent_spec: str,
    made: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What a root span says of a run made by running its agent, so that it replays after
    import: its input and answer, its outcome, the seed, the agent, how it was made
    (`MADE_ATTRIBUTES`)."""
    found: dict[str, Any] = {
        "input.value": _json(arguments),
        "input.mime_type": "application/json",
        "output.value": _json(answer),
        "output.mime_type": "application/json",
    }
    if outcome is not None:
        found["agent_replay.outcome"] = outcome
    found["agent_replay.seed"] = seed
    found["agent_replay.input"] = _json(arguments)
    if agent_spec:
        found["agent_replay.agent"] = agent_spec
    for key, value in (made or {}).items():
        if key in MADE_ATTRIBUTES and value:
            found[f"agent_replay.{key}"] = list(value) if isinstance(value, list) else value
    return found


@dataclass(frozen=True, slots=True)
class _Span:
    """One span to write: its ids, times, and what it says."""

    span_id: int
    parent: int | None
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    error: str | None = None  # the status message of a failed span ("" : failed, no message)
    client: bool = False


def run_request(
    run: Trajectory,
    *,
    source: Trajectory | None = None,
    report: Mapping[str, Any] | None = None,
) -> ExportTraceServiceRequest:
    """``run`` as one OTLP trace (the module docstring says what it holds): linked to ``source``
    (the run it was forked or resumed from, when the store has it), with ``report`` (a kept
    attribution report) on its root and culprit step."""
    trace_id = trace_id_of(run.id)
    step_ids = _step_ids(run)
    usage = run.metadata.get("token_usage")
    usage = usage if isinstance(usage, dict) else {}
    spans, root = _structure(run, step_ids)
    for step, span_id in zip(run.steps, step_ids, strict=True):
        node = _node_of(run, step)
        attributes = {
            **step_attributes(step),
            **genai_attributes(step, usage.get(step.span_id or "")),
            RECORD_ATTRIBUTE: _json(_record(step)),
        }
        parent = root.span_id
        if node is not None and node.parent_span_id is not None:
            parent = _node_id(run.id, node.parent_span_id)
        spans.append(
            _Span(
                span_id,
                parent,
                node.name if node is not None else f"{step.kind.value} {step.name}",
                step.start_time_unix_nano or 0,
                step.end_time_unix_nano or 0,
                attributes,
                (step.error or "") if step.status is StepStatus.ERROR else None,
                step.kind in (StepKind.LLM, StepKind.EMBEDDING),
            )
        )
    _verdict(report, run, step_ids, root.attributes, spans)
    links = _links(run, source, root.attributes)
    return _encoded(trace_id, _timed(run, spans), links, _service(run))


def _record(step: Step) -> dict[str, Any]:
    """What of a step its span carries as JSON (times and ids are the span's own)."""
    record = step.to_record()
    return {
        key: record[key]
        for key in ("index", "kind", "name", "inputs", "output", "status", "error", "resamplable")
    }


def _node_of(run: Trajectory, step: Step) -> Any:
    for node in run.spans:
        if node.step_index == step.index:
            return node
    return None


def _structure(run: Trajectory, step_ids: Sequence[int]) -> tuple[list[_Span], _Span]:
    """The root span and the structure spans of ``run``'s tree (not its steps')."""
    meta = run.metadata
    nodes = [node for node in run.spans if node.step_index is None]
    tops = [node for node in run.spans if node.parent_span_id is None]
    root_attributes: dict[str, Any] = {"openinference.span.kind": "AGENT"}
    if run.outcome is not None:
        root_attributes["agent_replay.outcome"] = run.outcome
    said = task(run.steps, meta)
    if said is not None:
        root_attributes["agent_replay.task"] = said
    if "input" in meta:  # made by running its agent: what replaying it needs
        seed = meta.get("seed")
        root_attributes.update(
            recording_attributes(
                arguments=meta.get("input"),
                answer=meta.get("answer"),
                outcome=run.outcome,
                seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else 0,
                agent_spec=str(meta.get("agent") or ""),
                made={key: meta[key] for key in MADE_ATTRIBUTES if key in meta},
            )
        )
    spans: list[_Span] = []
    if len(tops) == 1 and tops[0].step_index is None:  # the run's own root
        top = tops[0]
        root = _Span(
            _node_id(run.id, top.span_id),
            None,
            top.name,
            top.start_time_unix_nano or 0,
            top.end_time_unix_nano or 0,
            root_attributes,
            "" if top.status is StepStatus.ERROR else None,
        )
        nodes.remove(top)
    else:  # a root made for it: its top spans (or its steps) hang from it
        agent = str(meta.get("agent") or "")
        name = str(meta.get("service") or agent.rpartition(":")[2] or "agent")
        root = _Span(span_id_of(run.id, 0), None, name, 0, 0, root_attributes)
    spans.append(root)
    kinds = {"agent": "AGENT", "chain": "CHAIN"}
    for node in nodes:
        attributes = {"openinference.span.kind": kinds[node.role]} if node.role in kinds else {}
        spans.append(
            _Span(
                _node_id(run.id, node.span_id),
                root.span_id
                if node.parent_span_id is None
                else _node_id(run.id, node.parent_span_id),
                node.name,
                node.start_time_unix_nano or 0,
                node.end_time_unix_nano or 0,
                attributes,
                "" if node.status is StepStatus.ERROR else None,
            )
        )
    return spans, root


def _timed(run: Trajectory, spans: list[_Span]) -> list[_Span]:
    """``spans`` with times where they have none: a span without times starts where the one
    before it ended (takes no time), and a root made for the run covers all of it."""
    cursor = min((s.start for s in spans if s.start), default=0)
    placed: list[_Span] = []
    for span in spans:
        start = span.start or cursor
        end = max(span.end or start, start)
        cursor = max(cursor, end)
        placed.append(_replace(span, start, end))
    root = placed[0]
    if not spans[0].start and not spans[0].end:  # a root made for the run (or without times)
        earliest = min((s.start for s in placed[1:]), default=root.start)
        latest = max((s.end for s in placed), default=root.end)
        placed[0] = _replace(root, earliest, latest)
    return placed


def _replace(span: _Span, start: int, end: int) -> _Span:
    return _Span(
        span.span_id,
        span.parent,
        span.name,
        start,
        end,
        span.attributes,
        span.error,
        span.client,
    )


def _verdict(
    report: Mapping[str, Any] | None,
    run: Trajectory,
    step_ids: Sequence[int],
    root: dict[str, Any],
    spans: list[_Span],
) -> None:
    """A kept report's verdict on the root's attributes and its culprit step's."""
    if report is None:
        return
    verdict = str(report.get("verdict"))
    root["agent_replay.verdict"] = verdict
    explanation = report.get("explanation")
    if isinstance(explanation, str) and explanation:
        root["agent_replay.explanation"] = explanation
    at = report.get("point_of_commitment")
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at < len(run.steps):
        return
    root["agent_replay.point_of_commitment"] = at
    rows = [row for row in report.get("steps") or [] if row.get("index") == at]
    row = rows[0] if rows else {}
    step = next(s for s in spans if s.span_id == step_ids[at])
    step.attributes["agent_replay.verdict"] = verdict
    step.attributes["agent_replay.point_of_commitment"] = True
    for key in ("attribution", "ci_low", "ci_high"):
        value = row.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            step.attributes[f"agent_replay.{key}"] = float(value)


def _links(
    run: Trajectory, source: Trajectory | None, root: dict[str, Any]
) -> list[tuple[int, int, dict[str, Any]]]:
    """The root's lineage attributes (`lineage_attributes`), and its links: to the source's root
    span and to the source's step the run was made at (a fork's step, a resumed run's frontier)."""
    lineage, links = lineage_attributes(run, source)
    root.update(lineage)
    at = run.metadata.get("fork_at", run.metadata.get("frontier"))
    if source is not None and isinstance(at, int) and 0 <= at < len(source.steps):
        said = {"agent_replay.link": "source_step", "agent_replay.step": at}
        links.append((trace_id_of(source.id), step_span_of(source, at), said))
        root["agent_replay.source_step_span_id"] = format(step_span_of(source, at), "016x")
    return links


def _service(run: Trajectory) -> str:
    meta = run.metadata
    agent = str(meta.get("agent") or "")
    return str(meta.get("service") or agent.rpartition(":")[2] or "agent")


def _encoded(
    trace_id: int,
    spans: Sequence[_Span],
    links: Sequence[tuple[int, int, dict[str, Any]]],
    service: str,
) -> ExportTraceServiceRequest:
    """``spans`` (the root first) as SDK spans, encoded as the SDK's exporters would."""
    # the SDK is imported here: only an export needs it
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

    from otel_replay.otlp_encode import spans_to_request

    flags = TraceFlags(TraceFlags.SAMPLED)
    resource = Resource({"service.name": service})
    scope = InstrumentationScope("otel_replay.export")
    made = []
    for span in spans:
        parent = None if span.parent is None else SpanContext(trace_id, span.parent, False, flags)
        made.append(
            ReadableSpan(
                span.name,
                context=SpanContext(trace_id, span.span_id, False, flags),
                parent=parent,
                resource=resource,
                attributes=span.attributes,
                links=[Link(SpanContext(t, s, False, flags), dict(said)) for t, s, said in links]
                if span.parent is None
                else (),
                kind=SpanKind.CLIENT if span.client else SpanKind.INTERNAL,
                status=Status(StatusCode.ERROR, span.error or None)
                if span.error is not None
                else Status(StatusCode.UNSET),
                start_time=span.start,
                end_time=span.end,
                instrumentation_scope=scope,
            )
        )
    return spans_to_request(made)
