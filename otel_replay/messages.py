"""Model turns and conversations in the store's message shape, whoever wrote them.

The importers store a model turn's reply as ``{"role": "assistant", "content": str | None,
"tool_calls": [{"id", "name", "arguments"}]}``. A run recorded with ``--instrument`` keeps what the
SDK returned, so that replay can hand the agent the very response it got: an OpenAI chat completion
(``choices[0].message``, tool calls as ``{"id", "type", "function": {"name", "arguments": JSON
text}}``), a Responses API response (``output`` items: messages of ``output_text`` parts and
``function_call`` items), or an Anthropic message (``content`` blocks: ``text`` and ``tool_use``);
streams are kept as the response they add up to. `assistant_message` reads any of these as the store's
shape, and `conversation` reads a call's request (chat messages, Anthropic's blocks and ``system``, the
Responses API's ``input`` items) as the store's messages, so what reads a run (its answer, the
tool-calling loop it shows, the conversation a resampled turn sees, the terminal's preview, the spans
``--otlp-out`` writes) reads every record alike. Neither raises: a record holds whatever its producer
wrote.

A tool's result has one shape wherever a conversation is built or read (`tool_message`):
``{"role": "tool", "content": str, "tool_call_id", "name"}``, its ``content`` the text the model was
sent (a string result as it is, any other JSON value as its compact JSON text, `message_text`), its
``tool_call_id`` when the call had an id and its ``name`` the tool's when that is known.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Message = dict[str, Any]

#: Where a request holds its conversation besides ``messages`` (at its top, or under
#: ``parameters``): Anthropic's ``system``, the Responses API's ``instructions`` and ``input``.
CONVERSATION_KEYS = ("input", "instructions", "system")


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
    if isinstance(content, list) and (output.get("type") == "message" or _uses_tools(content)):
        return _from_blocks(content)  # an Anthropic message, or its turn sent back
    if isinstance(output.get("role"), str) or "content" in output or "tool_calls" in output:
        wired = output.get("tool_calls")
        if isinstance(wired, list) and any(_is_wired(c) for c in wired):
            return _from_chat(output)  # an OpenAI message as sent back in a conversation
        return output
    return None


def message_text(value: Any) -> str:
    """``value`` as the text a message carries: a string as it is, any other JSON value as its
    compact JSON text (``{"a":1,"b":[2]}``: keys in their order, text beyond ASCII as it is)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_message(result: Any, name: Any = None, call_id: Any = None) -> Message:
    """A tool's result as the message the model is sent: ``content`` its `message_text`,
    ``tool_call_id`` when the call had an id, ``name`` when the tool's name is known."""
    message: Message = {"role": "tool", "content": message_text(result)}
    if isinstance(call_id, str) and call_id:
        message["tool_call_id"] = call_id
    if isinstance(name, str) and name:
        message["name"] = name
    return message


def shaped_results(messages: list[Message]) -> list[Message]:
    """``messages`` with each ``role: tool`` message in `tool_message`'s shape: a ``content`` that
    is not text as its `message_text` (a result whose content was not kept stays without one), a
    missing ``name`` taken from the call it answers (by id). Other messages, and tool messages
    already in that shape, are the same objects; nothing is changed in place."""
    names: dict[str, Any] = {}
    shaped: list[Message] = []
    for message in messages:
        if message.get("role") == "tool":
            message = _shaped_result(message, names)
        elif isinstance(calls := message.get("tool_calls"), list):
            for call in calls:
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    names[call["id"]] = call.get("name")
        shaped.append(message)
    return shaped


def _shaped_result(message: Message, names: Mapping[str, Any]) -> Message:
    content, call_id = message.get("content"), message.get("tool_call_id")
    unnamed = not (isinstance(message.get("name"), str) and message["name"])
    name = names.get(call_id) if unnamed and isinstance(call_id, str) else None
    name = name if isinstance(name, str) and name else None
    text = content is None or isinstance(content, str)
    if text and name is None:
        return message
    shaped = dict(message)
    if not text:
        shaped["content"] = message_text(content)
    if name is not None:
        shaped["name"] = name
    return shaped


def conversation(inputs: Mapping[str, Any]) -> list[Message]:
    """The conversation a model call's inputs hold, in the store's shape: chat ``messages`` (an
    OpenAI assistant turn read by `assistant_message`; an Anthropic turn's ``tool_use`` blocks as
    tool calls and its ``tool_result`` blocks as ``role: tool`` messages), after Anthropic's
    ``system`` or the Responses API's ``instructions``, or that API's ``input`` (a string, or
    items: messages, function calls, their outputs). ``--instrument`` keeps what is not the
    model, messages or tools under ``parameters``, so these are read there too. Tool results are
    in `tool_message`'s shape (`shaped_results`). Empty when the inputs hold no conversation."""
    parameters = inputs.get("parameters")
    kept: Mapping[str, Any] = parameters if isinstance(parameters, dict) else {}
    said: list[Message] = []
    for preamble in ("system", "instructions"):
        text = _text(inputs.get(preamble, kept.get(preamble)))
        if text:
            said.append({"role": "system", "content": text})
    messages = inputs.get("messages")
    items = inputs.get("input", kept.get("input"))
    if isinstance(messages, list):
        for message in messages:
            said += _turn(message)
    elif isinstance(items, str):
        said.append({"role": "user", "content": items})
    elif isinstance(items, list):
        said += _input_items(items)
    return shaped_results(said) if any(m.get("role") != "system" for m in said) else []


def without_conversation(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` without what `conversation` reads besides ``messages`` (at the top and under
    ``parameters``): the rest of a request."""
    rest = {k: v for k, v in inputs.items() if k not in CONVERSATION_KEYS}
    parameters = rest.get("parameters")
    if isinstance(parameters, dict):
        rest["parameters"] = {k: v for k, v in parameters.items() if k not in CONVERSATION_KEYS}
    return rest


def _turn(message: Any) -> list[Message]:
    """One chat message as the store's messages (an Anthropic user turn of tool results is one
    ``role: tool`` message per result, then its text)."""
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if message.get("role") == "assistant":
        return [assistant_message(message) or message]
    if isinstance(content, list) and any(_is(b, "tool_result") for b in content):
        said: list[Message] = [
            tool_message(_block_text(b.get("content")), call_id=b.get("tool_use_id"))
            for b in content
            if _is(b, "tool_result")
        ]
        text = _text([b for b in content if not _is(b, "tool_result")])
        return [*said, {"role": str(message.get("role")), "content": text}] if text else said
    return [message]


def _input_items(items: list[Any]) -> list[Message]:
    """The Responses API's input items as messages: function calls join the assistant turn they
    follow (or make one), their outputs are ``role: tool`` messages."""
    said: list[Message] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            call = {
                "id": item.get("call_id") or item.get("id"),
                "name": item.get("name"),
                "arguments": _arguments(item.get("arguments")),
            }
            if said and said[-1]["role"] == "assistant":  # the turn these calls are part of
                said[-1].setdefault("tool_calls", []).append(call)
            else:
                said.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            said.append(tool_message(item.get("output"), call_id=item.get("call_id")))
        elif isinstance(item.get("role"), str):
            said.append({"role": item["role"], "content": _text(item.get("content"))})
    return said


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


def wire_tool_calls(calls: Any) -> list[dict[str, Any]]:
    """Tool calls in the chat-completions form (``{id, type, function: {name, arguments}}``, the
    arguments as a JSON string), from the store's ``{id, name, arguments}`` or from that form
    itself (what an instrumented SDK call recorded): what `_call_of` reads back."""
    wired = []
    for i, call in enumerate(calls if isinstance(calls, list) else []):
        if not isinstance(call, dict):
            continue
        function = call["function"] if _is_wired(call) else call
        arguments = function.get("arguments")
        wired.append(
            {
                "id": call.get("id") or f"call_{i}",
                "type": "function",
                "function": {
                    "name": function.get("name"),
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments or {}),
                },
            }
        )
    return wired


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


def _from_blocks(blocks: list[Any]) -> Message:
    text = [b["text"] for b in blocks if _is(b, "text") and isinstance(b.get("text"), str)]
    calls = [
        {"id": b.get("id"), "name": b.get("name"), "arguments": b.get("input")}
        for b in blocks
        if _is(b, "tool_use")
    ]
    return _message("".join(text) if text else None, calls)


def _uses_tools(blocks: list[Any]) -> bool:
    return any(_is(b, "tool_use") for b in blocks)


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _text(content: Any) -> str | None:
    """Content as text: a string, or the text of its parts (``text``, ``input_text``,
    ``output_text``); ``None`` for none."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        words = [
            p if isinstance(p, str) else p.get("text")
            for p in content
            if isinstance(p, (str, dict))
        ]
        text = "".join(w for w in words if isinstance(w, str))
        return text or None
    return message_text(content)


def _block_text(content: Any) -> Any:
    """A ``tool_result`` block's content as the model read it: its text blocks joined, else as it
    is (none: empty)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return _text(content) or content
    return content


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
