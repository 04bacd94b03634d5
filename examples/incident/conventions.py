"""How the investigator's spans are named and annotated in each semantic convention.

* :class:`OpenInference` (docs/importing.md, "From spans to steps"): AGENT root ``investigate``; LLM
  spans with flattened ``llm.input_messages.<i>.message.*`` / ``llm.output_messages.0.message.*``,
  the raw request and response as JSON in ``input.value`` / ``output.value``; TOOL spans with
  ``tool.name``, ``tool.id`` (the tool-call id) and JSON ``input.value`` / ``output.value``.
  Successful spans are marked OK.
* :class:`GenAI` (the same page; the current, v1.37 and later, form): ``invoke_agent``, ``chat`` and
  ``execute_tool`` spans; messages are JSON strings in the parts format. Successful spans stay
  UNSET.

Messages given to these builders are the conversation dicts of :mod:`.model`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from .model import MODEL_NAME
from .world import TOOL_DEFINITIONS

__all__ = [
    "AGENT_NAME",
    "OUTCOME_ATTRIBUTE",
    "TASK",
    "Attributes",
    "Conventions",
    "GenAI",
    "OpenInference",
    "dumps",
]

AGENT_NAME = "incident-investigator"
OUTCOME_ATTRIBUTE = "agent_replay.outcome"
TASK = (
    "PagerDuty alert for service checkout: error rate above 5% since 14:07 UTC on 2026-03-14. "
    "Find the root cause."
)
# The model does not call a hosted provider; GenAI allows any provider string.
_PROVIDER = "local"

Attributes = dict[str, AttributeValue]
Message = Mapping[str, Any]


def dumps(value: Any) -> str:
    """Compact JSON text, the form every JSON-valued attribute and tool message uses."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Conventions(Protocol):
    """Span names, kinds and attributes for one semantic convention."""

    @property
    def mark_ok(self) -> bool:
        """Whether successful spans get status OK (else they stay UNSET)."""
        ...

    def root(self) -> tuple[str, SpanKind, Attributes]: ...
    def root_end(self, answer: str, outcome: float) -> Attributes: ...
    def llm(self) -> tuple[str, SpanKind]: ...
    def llm_attributes(self, messages: Sequence[Message], reply: Message) -> Attributes: ...
    def tool(self, call: Message) -> tuple[str, SpanKind, Attributes]: ...
    def tool_result(self, result: Any) -> Attributes: ...
    def tool_error(self, exc: BaseException) -> Attributes: ...


def _openai_message(message: Message) -> dict[str, Any]:
    """A conversation message as the OpenAI wire format spells it (arguments as JSON text)."""
    wire: dict[str, Any] = {"role": message["role"], "content": message.get("content")}
    if message.get("tool_calls"):
        wire["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": dumps(call["arguments"])},
            }
            for call in message["tool_calls"]
        ]
    for key in ("tool_call_id", "name"):
        if key in message:
            wire[key] = message[key]
    return wire


def _flatten_message(prefix: str, message: Message) -> Attributes:
    """OpenInference's flattened attributes of one message under ``prefix`` (``….message``)."""
    flat: Attributes = {f"{prefix}.role": message["role"]}
    if message.get("content") is not None:
        flat[f"{prefix}.content"] = message["content"]
    if message.get("role") == "tool":
        flat[f"{prefix}.name"] = message["name"]
        flat[f"{prefix}.tool_call_id"] = message["tool_call_id"]
    for k, call in enumerate(message.get("tool_calls") or []):
        base = f"{prefix}.tool_calls.{k}.tool_call"
        flat[f"{base}.id"] = call["id"]
        flat[f"{base}.function.name"] = call["name"]
        flat[f"{base}.function.arguments"] = dumps(call["arguments"])
    return flat


class OpenInference:
    """Arize OpenInference attributes, as its OpenAI instrumentation would write them."""

    mark_ok = True

    def root(self) -> tuple[str, SpanKind, Attributes]:
        attributes: Attributes = {
            "openinference.span.kind": "AGENT",
            "agent.name": AGENT_NAME,
            "input.value": TASK,
            "input.mime_type": "text/plain",
        }
        return "investigate", SpanKind.INTERNAL, attributes

    def root_end(self, answer: str, outcome: float) -> Attributes:
        return {
            "output.value": answer,
            "output.mime_type": "text/plain",
            OUTCOME_ATTRIBUTE: outcome,
        }

    def llm(self) -> tuple[str, SpanKind]:
        return "ChatCompletion", SpanKind.INTERNAL

    def llm_attributes(self, messages: Sequence[Message], reply: Message) -> Attributes:
        attributes: Attributes = {
            "openinference.span.kind": "LLM",
            "llm.model_name": MODEL_NAME,
            "llm.invocation_parameters": dumps({"temperature": 0.0}),
        }
        for index, definition in enumerate(TOOL_DEFINITIONS):
            function = {key: value for key, value in definition.items() if key != "type"}
            schema = dumps({"type": "function", "function": function})
            attributes[f"llm.tools.{index}.tool.json_schema"] = schema
        for index, message in enumerate(messages):
            attributes.update(_flatten_message(f"llm.input_messages.{index}.message", message))
        attributes.update(_flatten_message("llm.output_messages.0.message", reply))
        request = {
            "model": MODEL_NAME,
            "temperature": 0.0,
            "messages": [_openai_message(message) for message in messages],
        }
        choice = {
            "index": 0,
            "message": _openai_message(reply),
            "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
        }
        response = {"object": "chat.completion", "model": MODEL_NAME, "choices": [choice]}
        attributes["input.value"] = dumps(request)
        attributes["input.mime_type"] = "application/json"
        attributes["output.value"] = dumps(response)
        attributes["output.mime_type"] = "application/json"
        return attributes

    def tool(self, call: Message) -> tuple[str, SpanKind, Attributes]:
        attributes: Attributes = {
            "openinference.span.kind": "TOOL",
            "tool.name": call["name"],
            "tool.id": call["id"],
            "input.value": dumps(call["arguments"]),
            "input.mime_type": "application/json",
        }
        return call["name"], SpanKind.INTERNAL, attributes

    def tool_result(self, result: Any) -> Attributes:
        return {"output.value": dumps(result), "output.mime_type": "application/json"}

    def tool_error(self, exc: BaseException) -> Attributes:
        # OpenInference records failures only through status and the exception event.
        return {}


def _genai_message(message: Message) -> dict[str, Any]:
    """A conversation message in the GenAI parts format."""
    parts: list[dict[str, Any]] = []
    if message["role"] == "tool":
        response = json.loads(message["content"])
        parts.append(
            {"type": "tool_call_response", "id": message["tool_call_id"], "response": response}
        )
    else:
        if message.get("content"):
            parts.append({"type": "text", "content": message["content"]})
        for call in message.get("tool_calls") or []:
            part = {"type": "tool_call", "id": call["id"], "name": call["name"]}
            parts.append(dict(part, arguments=call["arguments"]))
    return {"role": message["role"], "parts": parts}


class GenAI:
    """OpenTelemetry GenAI semantic conventions, content recorded on spans as JSON strings."""

    mark_ok = False

    def root(self) -> tuple[str, SpanKind, Attributes]:
        task = [{"role": "user", "parts": [{"type": "text", "content": TASK}]}]
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.provider.name": _PROVIDER,
            "gen_ai.request.model": MODEL_NAME,
            "gen_ai.input.messages": dumps(task),
        }
        return f"invoke_agent {AGENT_NAME}", SpanKind.INTERNAL, attributes

    def root_end(self, answer: str, outcome: float) -> Attributes:
        text = [{"type": "text", "content": answer}]
        output = [{"role": "assistant", "parts": text, "finish_reason": "stop"}]
        return {"gen_ai.output.messages": dumps(output), OUTCOME_ATTRIBUTE: outcome}

    def llm(self) -> tuple[str, SpanKind]:
        return f"chat {MODEL_NAME}", SpanKind.CLIENT

    def llm_attributes(self, messages: Sequence[Message], reply: Message) -> Attributes:
        finish = "tool_call" if reply.get("tool_calls") else "stop"
        output = dict(_genai_message(reply), finish_reason=finish)
        return {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _PROVIDER,
            "gen_ai.request.model": MODEL_NAME,
            "gen_ai.request.temperature": 0.0,
            "gen_ai.response.model": MODEL_NAME,
            "gen_ai.response.finish_reasons": [finish],
            "gen_ai.tool.definitions": dumps(TOOL_DEFINITIONS),
            "gen_ai.input.messages": dumps([_genai_message(message) for message in messages]),
            "gen_ai.output.messages": dumps([output]),
        }

    def tool(self, call: Message) -> tuple[str, SpanKind, Attributes]:
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call["name"],
            "gen_ai.tool.call.id": call["id"],
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": dumps(call["arguments"]),
        }
        return f"execute_tool {call['name']}", SpanKind.INTERNAL, attributes

    def tool_result(self, result: Any) -> Attributes:
        return {"gen_ai.tool.call.result": dumps(result)}

    def tool_error(self, exc: BaseException) -> Attributes:
        return {"error.type": type(exc).__qualname__}
