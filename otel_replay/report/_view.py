"""What a page shows of a step's inputs and output: messages as a chat, anything else as JSON.

Recorded values come in many shapes: the store's own message shape (``role``, ``content``,
``tool_calls``), an OpenAI chat completion (``choices[].message``), a Responses API response
(``output[]`` items), an Anthropic message (content blocks, ``tool_use``). `chat` reads each into one
display shape, ``{"role", "text", "calls": [{"name", "arguments"}], "id"}``, and returns ``None`` for a
value that is not messages (a tool's result), which the page shows as JSON. It never raises: a trace
holds whatever its producer wrote.
"""

from __future__ import annotations

from typing import Any

import orjson

from otel_replay.messages import assistant_message

Message = dict[str, Any]


def chat(value: Any) -> list[Message] | None:
    """The messages ``value`` holds, in the display shape, or ``None`` when it holds none."""
    if isinstance(value, list):
        if value and all(isinstance(m, dict) and _is_message(m) for m in value):
            return [_message(m) for m in value]
        return None
    if not isinstance(value, dict):
        return None
    if _is_message(value):  # the store's shape, OpenAI's, Anthropic's content blocks
        return [_message(value)]
    reply = assistant_message(value)  # an SDK's response: a chat completion, a Responses one
    return [_message(reply)] if reply is not None else None


def _is_message(value: dict[str, Any]) -> bool:
    return isinstance(value.get("role"), str) and (
        "content" in value or "tool_calls" in value or "parts" in value
    )


def _message(raw: dict[str, Any]) -> Message:
    text: list[str] = []
    calls = [_call(c) for c in raw.get("tool_calls") or [] if isinstance(c, dict)]
    content = raw.get("content")
    if isinstance(content, str):
        text.append(content)
    elif isinstance(content, list):
        for part in content:
            _part(part, text, calls)
    elif content is not None:
        text.append(_json(content))
    for part in raw.get("parts") or [] if isinstance(raw.get("parts"), list) else []:
        _part(part, text, calls)
    message: Message = {"role": str(raw.get("role") or "message"), "text": "\n".join(text)}
    if calls:
        message["calls"] = calls
    for key in ("tool_call_id", "tool_use_id", "name"):
        if isinstance(raw.get(key), str):
            message["id" if key != "name" else "name"] = raw[key]
    return message


def _part(part: Any, text: list[str], calls: list[dict[str, Any]]) -> None:
    """One content part: text is read, a tool call collected, a tool result's content read, and
    anything else (an image, a block type this does not know) shown as its JSON."""
    if isinstance(part, str):
        text.append(part)
        return
    if not isinstance(part, dict):
        text.append(_json(part))
        return
    kind = part.get("type")
    if isinstance(part.get("text"), str) and kind in (None, "text", "output_text", "input_text"):
        text.append(part["text"])
    elif kind in ("tool_use", "tool_call", "function_call"):
        calls.append(_call(part))
    elif kind in ("tool_result", "tool_call_response", "function_call_output"):
        inner = part.get("content", part.get("output", part.get("response")))
        text.append(inner if isinstance(inner, str) else _json(inner))
    else:
        text.append(_json(part))


def _call(raw: dict[str, Any]) -> dict[str, Any]:
    function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
    assert isinstance(function, dict)
    name = raw.get("name", function.get("name"))
    arguments = raw.get("arguments", function.get("arguments", raw.get("input")))
    return {"name": str(name or "?"), "arguments": arguments}


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)
