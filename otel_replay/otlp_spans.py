"""What a run's spans say of it, in the conventions other tools read.

`step_attributes` is a step in OpenInference's attributes (``openinference.span.kind``,
``llm.input_messages.*``, ``llm.output_messages.*``, ``input.value``/``output.value``, ``tool.name``),
what ``record --otlp-out`` and the runs ``--otlp-endpoint`` sends carry (`otel_replay.replay`
emits them through the SDK). `genai_attributes` is the same step in OTel GenAI's
(``gen_ai.operation.name``, ``gen_ai.input.messages``/``gen_ai.output.messages`` as JSON,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``/``result``, the
tokens). `recording_attributes` and `lineage_attributes` are what a root span says of a run made
by running its agent and of where a made run came from; `trace_id_of`, `span_id_of` and
`root_span_of` the ids a run's spans carry. `otel_replay.otlp_trace` writes a stored run with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from otel_replay.hashing import digest
from otel_replay.messages import assistant_message, conversation
from otel_replay.model import Step, StepKind, StepStatus, Trajectory

__all__ = [
    "LINEAGE_ATTRIBUTES",
    "MADE_ATTRIBUTES",
    "OTHER_STEP_KIND",
    "OTHER_STEP_NAME",
    "genai_attributes",
    "lineage_attributes",
    "root_span_of",
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


def root_span_of(run: Trajectory) -> int:
    """The span id of ``run``'s root span: the one its span tree names, else the one `run_spans`
    gives it."""
    roots = [node.span_id for node in run.spans if node.parent_span_id is None]
    if len(roots) == 1 and _HEX[16].fullmatch(roots[0]) and int(roots[0], 16):
        return int(roots[0], 16)
    return span_id_of(run.id, 0)


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
