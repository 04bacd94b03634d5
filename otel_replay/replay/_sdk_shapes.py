"""How each patched SDK method's responses become JSON and back (`SdkApi`): a response as recorded,
a stream's chunks or events added up to the message they make, and a resample function's answer (a
message in the importers' shape) as the response, or the stream, the SDK would have returned."""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from otel_replay.messages import wire_tool_calls


@dataclass(frozen=True, slots=True)
class SdkApi:
    """How one SDK method's responses become JSON and back: ``response`` the response type, ``item``
    the type of a stream's items, ``assemble`` a stream's items into the output, ``sdk`` the
    package whose lenient parser (the one it reads the wire with) builds the objects again."""

    sdk: str
    response: Callable[[], Any]
    item: Callable[[], Any]
    assemble: Callable[[list[dict[str, Any]]], dict[str, Any]]
    #: A resample function's answer (a message in the importers' shape: ``role``, ``content``,
    #: ``tool_calls`` of ``{id, name, arguments}``) as this API's response, and as its stream.
    answered: Callable[[dict[str, Any]], dict[str, Any]]
    streamed: Callable[[dict[str, Any]], list[dict[str, Any]]]

    def _build(self, kind: Any, value: Any) -> Any:
        construct = importlib.import_module(f"{self.sdk}._models").construct_type
        return construct(type_=kind, value=value)

    def completion(self, output: Any) -> Any:
        """The response the agent gets: as recorded, or a resample function's answer made one."""
        if _is_message(output):
            output = self.answered(output)
        return self._build(self.response(), output)

    def items(self, output: Any) -> list[Any]:
        """The stream the agent gets: the recorded chunks, or a resample function's answer as a
        stream (each part of it in one piece)."""
        chunks = self.streamed(output) if _is_message(output) else output.get("chunks") or []
        return [self._build(self.item(), chunk) for chunk in chunks]


def _is_message(output: Any) -> bool:
    """A resample function's answer (the importers' message shape), not a response as an API
    sent it (which the record holds for a call made live)."""
    return (
        isinstance(output, dict)
        and output.get("role") == "assistant"
        and "id" not in output
        and "chunks" not in output
    )


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments")
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {})


def _openai_wire_message(message: dict[str, Any]) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = wire_tool_calls(message.get("tool_calls"))
    if calls:
        wire["tool_calls"] = calls
    return wire


def _openai_finish(message: dict[str, Any]) -> str:
    reason = message.get("finish_reason")
    return reason if isinstance(reason, str) else ("tool_calls" if _calls(message) else "stop")


def _openai_chat_answered(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-resampled",
        "object": "chat.completion",
        "created": 0,
        "model": str(message.get("model") or ""),
        "choices": [
            {
                "index": 0,
                "message": _openai_wire_message(message),
                "finish_reason": _openai_finish(message),
            }
        ],
    }


def _openai_chat_streamed(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer as one chunk carrying the whole message (a stream may be cut anywhere)."""
    delta = _openai_wire_message(message)
    delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta.get("tool_calls", []))]
    if not delta["tool_calls"]:
        del delta["tool_calls"]
    return [
        {
            "id": "chatcmpl-resampled",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": str(message.get("model") or ""),
            "choices": [{"index": 0, "delta": delta, "finish_reason": _openai_finish(message)}],
        }
    ]


def _openai_responses_answered(message: dict[str, Any]) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(
            {
                "type": "message",
                "id": "msg_resampled",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for i, call in enumerate(_calls(message)):
        call_id = str(call.get("id") or f"call_{i}")
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": call.get("name"),
                "arguments": _arguments(call),
                "status": "completed",
            }
        )
    return {
        "id": "resp_resampled",
        "object": "response",
        "created_at": 0,
        "model": str(message.get("model") or ""),
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def _openai_responses_streamed(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of the answer: created, each item added, its text or arguments in one delta,
    done, completed."""
    whole = _openai_responses_answered(message)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**whole, "status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(whole["output"]):
        at = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "function_call":
            arguments = item["arguments"]
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                },
                {"type": "response.function_call_arguments.delta", **at, "delta": arguments},
                {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
            ]
        else:
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            at_part = {**at, "content_index": 0}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": [], "status": "in_progress"},
                },
                {"type": "response.content_part.added", **at_part, "part": part},
                {"type": "response.output_text.delta", **at_part, "delta": text, "logprobs": []},
                {"type": "response.output_text.done", **at_part, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **at_part, "part": {**part, "text": text}},
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": whole})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _anthropic_answered(message: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    for i, call in enumerate(_calls(message)):
        arguments = call.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{i}",
                "name": call.get("name"),
                "input": arguments if isinstance(arguments, dict) else {},
            }
        )
    return {
        "id": "msg_resampled",
        "type": "message",
        "role": "assistant",
        "model": str(message.get("model") or ""),
        "content": content,
        "stop_reason": "tool_use" if _calls(message) else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def _anthropic_streamed(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of the answer: the message started, each block opened, filled in one delta and
    closed, the stop reason, the end."""
    whole = _anthropic_answered(message)
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**whole, "content": [], "stop_reason": None}}
    ]
    for index, block in enumerate(whole["content"]):
        opened: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": opened},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 0},
        },
        {"type": "message_stop"},
    ]
    return events


def _openai_chat_assembled(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat stream's chunks as the completion they add up to, with the chunks themselves."""
    first = chunks[0] if chunks else {}
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            into = choices.setdefault(
                choice.get("index", 0),
                {"index": choice.get("index", 0), "message": {"role": "assistant"}},
            )
            delta, message = choice.get("delta") or {}, into["message"]
            if delta.get("content"):
                message["content"] = message.get("content", "") + delta["content"]
            for call in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", [])
                while len(calls) <= call.get("index", 0):
                    calls.append({"type": "function", "function": {"name": "", "arguments": ""}})
                slot = calls[call.get("index", 0)]
                slot["id"] = call.get("id") or slot.get("id", "")
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                into["finish_reason"] = choice["finish_reason"]
    completion: dict[str, Any] = {
        "id": first.get("id", ""),
        "object": "chat.completion",
        "created": first.get("created", 0),
        "model": first.get("model", ""),
        "choices": [choices[i] for i in sorted(choices)],
        "chunks": chunks,
    }
    if usage is not None:
        completion["usage"] = usage
    for choice in completion["choices"]:
        choice.setdefault("finish_reason", "stop")
        choice["message"].setdefault("content", None)
    return completion


def _openai_responses_assembled(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A responses stream's events: the response its last event carries, with the events."""
    final: dict[str, Any] = next(
        (e["response"] for e in reversed(events) if isinstance(e.get("response"), dict)), {}
    )
    return {**final, "chunks": events}


def _anthropic_assembled(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A messages stream's events as the message they add up to, with the events themselves."""
    message: dict[str, Any] = {"content": []}
    partial: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = {**event.get("message", {}), "content": []}
        elif kind == "content_block_start":
            message["content"].append(dict(event.get("content_block", {})))
        elif kind == "content_block_delta":
            index, delta = event.get("index", 0), event.get("delta", {})
            block = message["content"][index]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + delta.get("partial_json", "")
        elif kind == "content_block_stop" and event.get("index", 0) in partial:
            message["content"][event["index"]]["input"] = orjson.loads(
                partial[event["index"]] or "{}"
            )
        elif kind == "message_delta":
            message.update(event.get("delta", {}))
            if "usage" in event:
                message["usage"] = {**message.get("usage", {}), **event["usage"]}
    return {**message, "chunks": events}


def _type(module: str, name: str) -> Callable[[], Any]:
    def load() -> Any:
        return getattr(importlib.import_module(module), name)

    return load


OPENAI_CHAT = SdkApi(
    "openai",
    _type("openai.types.chat", "ChatCompletion"),
    _type("openai.types.chat", "ChatCompletionChunk"),
    _openai_chat_assembled,
    _openai_chat_answered,
    _openai_chat_streamed,
)
OPENAI_RESPONSES = SdkApi(
    "openai",
    _type("openai.types.responses", "Response"),
    _type("openai.types.responses", "ResponseStreamEvent"),
    _openai_responses_assembled,
    _openai_responses_answered,
    _openai_responses_streamed,
)
ANTHROPIC = SdkApi(
    "anthropic",
    _type("anthropic.types", "Message"),
    _type("anthropic.types", "RawMessageStreamEvent"),
    _anthropic_assembled,
    _anthropic_answered,
    _anthropic_streamed,
)
