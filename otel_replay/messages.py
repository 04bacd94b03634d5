"""A model turn's output in the store's message shape, whoever wrote it.

The importers store a model turn's reply as ``{"role": "assistant", "content": str | None,
"tool_calls": [{"id", "name", "arguments"}]}``. A run recorded with ``--instrument`` keeps what the
SDK returned, so that replay can hand the agent the very response it got: an OpenAI chat completion
(``choices[0].message``, tool calls as ``{"id", "type", "function": {"name", "arguments": JSON
text}}``), a Responses API response (``output`` items: messages of ``output_text`` parts and
``function_call`` items), or an Anthropic message (``content`` blocks: ``text`` and ``tool_use``);
streams are kept as the response they add up to. `assistant_message` reads any of these as the store's
shape, so what reads a run (its answer, the tool-calling loop it shows, the conversation a resampled
turn sees, the terminal's preview) reads every record alike. It never raises: a record holds whatever
its producer wrote.
"""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def assistant_message(output: Any) -> Message | None:
    """``output`` as the store's assistant message, or ``None`` when it is not a model's reply (a
    plain string, a tool's result). A reply already in the store's shape is returned as it is (the
    same object); the first of a list of messages is the reply."""
    if isinstance(output, list):
        output = output[0] if output else None
    if not isinstance(output, dict):
        return None
    choices = output.get("choices")
    if isinstance(choices, list):  # an OpenAI chat completion
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        message = first.get("message")
        return _from_chat(message) if isinstance(message, dict) else None
    items = output.get("output")
    if output.get("object") == "response" and isinstance(items, list):  # the Responses API
        return _from_response_items(items)
    content = output.get("content")
    if output.get("type") == "message" and isinstance(content, list):  # an Anthropic message
        return _from_blocks(output, content)
    if isinstance(output.get("role"), str) or "content" in output or "tool_calls" in output:
        wired = output.get("tool_calls")
        if isinstance(wired, list) and any(_is_wired(c) for c in wired):
            return _from_chat(output)  # an OpenAI message as sent back in a conversation
        return output
    return None


def _from_chat(message: dict[str, Any]) -> Message:
    calls = message.get("tool_calls")
    return _message(
        message.get("content"),
        [_call_of(c) for c in calls if isinstance(c, dict)] if isinstance(calls, list) else [],
    )


def _is_wired(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function"), dict)


def _call_of(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call in the store's shape, from OpenAI's wire shape or already in it."""
    function = call["function"] if _is_wired(call) else call
    out: dict[str, Any] = {"id": call.get("id"), "name": function.get("name")}
    out["arguments"] = _arguments(function.get("arguments"))
    return out


def _from_response_items(items: list[Any]) -> Message | None:
    text: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            calls.append(
                {
                    "id": item.get("call_id") or item.get("id"),
                    "name": item.get("name"),
                    "arguments": _arguments(item.get("arguments")),
                }
            )
        elif item.get("type") == "message" and isinstance(item.get("content"), list):
            for part in item["content"]:  # output_text, or a refusal in its words
                words = part.get("text", part.get("refusal")) if isinstance(part, dict) else None
                if isinstance(words, str):
                    text.append(words)
    if not (text or calls):
        return None
    return _message("".join(text) if text else None, calls)


def _from_blocks(message: dict[str, Any], blocks: list[Any]) -> Message:
    text = [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    calls = [
        {"id": b.get("id"), "name": b.get("name"), "arguments": b.get("input")}
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    reply = _message("".join(text) if text else None, calls)
    reply["role"] = str(message.get("role") or "assistant")
    return reply


def _message(content: Any, calls: list[dict[str, Any]]) -> Message:
    message: Message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return message


def _arguments(raw: Any) -> Any:
    """Arguments as the JSON object they spell; text that is not JSON is kept as it is."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw
