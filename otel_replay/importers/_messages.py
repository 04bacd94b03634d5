"""Chat messages in one shape, whatever convention recorded them.

Every LLM step carries messages as ``{"role", "content", "tool_calls", "tool_call_id", "name",
"finish_reason"}`` (absent keys omitted). ``content`` is a string when all parts are text, else a list of
parts; tool calls are ``{"id", "name", "arguments"}`` with the arguments decoded from JSON when they are
JSON. Inputs recognised: OpenInference (flattened or nested), OTel GenAI ``parts``, OpenAI chat format,
Vercel AI SDK content parts.
"""

from __future__ import annotations

from typing import Any

from otel_replay.importers._spans import maybe_json


def _is_index(text: str) -> bool:
    """A list index in a flattened key (``prefix.3.``): ASCII digits, and not absurdly long."""
    return text.isascii() and text.isdecimal() and len(text) < 10


def unflatten(attributes: dict[str, Any], prefix: str) -> list[Any]:
    """Rebuild ``prefix.<i>.<path>`` attributes into a list ordered by index (sparse indices allowed).

    A value stored under ``prefix`` itself as a list (the "nested" form Phoenix writes) is used as is.
    """
    nested = attributes.get(prefix)
    if isinstance(nested, list):
        return [_expand(item) if isinstance(item, dict) else item for item in nested]
    dotted = prefix + "."
    start = len(dotted)
    items: dict[int, Any] = {}
    for key, value in attributes.items():
        if key.startswith(dotted):
            index, _, rest = key[start:].partition(".")
            if not _is_index(index):
                continue
            if not rest:  # prefix.<i> = value: an indexed list of plain values
                items[int(index)] = value
                continue
            item = items.get(int(index))
            if not isinstance(item, dict):
                item = items[int(index)] = {}
            item[rest] = value
    return [_expand(items[i]) if isinstance(items[i], dict) else items[i] for i in sorted(items)]


def _expand(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1, "a.c.0.d": 2}`` → ``{"a": {"b": 1, "c": [{"d": 2}]}}``."""
    root: dict[Any, Any] = {}
    deep = False
    for key, value in flat.items():
        head, dot, tail = key.partition(".")
        if not dot:
            root[head] = value
        elif "." not in tail and not tail.isdecimal() and not head.isdecimal():
            child = root.get(head)
            if not isinstance(child, dict):
                child = root[head] = {}
            child[tail] = value
        else:
            deep = True
            _insert(root, key.split("."), value)
    if not deep:
        return root
    out = _listify(root)
    return out if isinstance(out, dict) else {}


def _insert(node: dict[Any, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        key: Any = int(part) if _is_index(part) else part
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    last = parts[-1]
    node[int(last) if _is_index(last) else last] = value


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_listify(node[k]) for k in sorted(node)]
    return {str(k): _listify(v) for k, v in node.items()}


def normalize_messages(raw: Any) -> list[dict[str, Any]]:
    """Normalise a list of messages in any recognised shape (a JSON string is decoded first)."""
    raw = maybe_json(raw)
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        raw = raw["messages"]
    if not isinstance(raw, list):
        return []
    if len(raw) == 1 and isinstance(raw[0], list):  # LangChain batches: [[message, ...]]
        raw = raw[0]
    return [normalize_message(m) for m in raw if isinstance(m, dict)]


def normalize_message(message: dict[str, Any]) -> dict[str, Any]:
    if isinstance(message.get("message"), dict):  # OpenInference: {"message": {...}}
        message = message["message"]
    if "lc" in message and isinstance(message.get("kwargs"), dict):  # LangChain serialisation
        message = _langchain(message)
    out: dict[str, Any] = {}
    role = message.get("role")
    if isinstance(role, str):
        out["role"] = role
    parts: list[Any] = []
    calls = message.get("tool_calls")
    extra = message.get("additional_kwargs")
    if not calls and isinstance(extra, dict):  # a LangChain message as a dict: calls kept aside
        calls = extra.get("tool_calls")
    tool_calls = [_tool_call(c) for c in _as_list(calls)]
    content = message.get("content")
    if isinstance(content, list):
        parts.extend(content)
    elif content is not None:
        parts.append({"type": "text", "text": content} if isinstance(content, str) else content)
    has_text = isinstance(content, str) and content != ""
    for item in _as_list(message.get("contents")):  # OpenInference multi-part content
        part = item.get("message_content", item) if isinstance(item, dict) else item
        if isinstance(item, dict) and isinstance(item.get("tool_call"), dict):
            tool_calls.append(_tool_call(item))
        elif not (has_text and isinstance(part, dict) and part.get("type", "text") == "text"):
            parts.append(part)  # text parts beside a text content are that text spelt again
    parts.extend(_as_list(message.get("parts")))  # GenAI
    tool_response = _split_parts(parts, tool_calls, out)
    if tool_response is not None:
        out.setdefault("role", "tool")
    text = _content(parts)
    if text is not None:
        out["content"] = text
    elif tool_response is not None:
        out["role"] = "tool"  # a tool's result alone is the tool's message, whoever carried it
        out["content"] = tool_response
    if tool_calls:
        out["tool_calls"] = _distinct_calls(tool_calls)
    for key in ("tool_call_id", "name", "finish_reason"):
        if isinstance(message.get(key), str) and message[key]:
            out[key] = message[key]
    if "function_call_name" in message:  # legacy OpenAI function calling, OpenInference spelling
        out.setdefault("tool_calls", []).append(
            {
                "name": message["function_call_name"],
                "arguments": maybe_json(message.get("function_call_arguments_json")),
            }
        )
    return out


_LANGCHAIN_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}


def _langchain(message: dict[str, Any]) -> dict[str, Any]:
    kwargs = dict(message["kwargs"])
    ids = message.get("id")
    class_name = ids[-1] if isinstance(ids, list) and ids else ""
    kwargs.setdefault("role", _LANGCHAIN_ROLES.get(str(class_name), kwargs.get("type", "user")))
    return kwargs


def _split_parts(parts: list[Any], tool_calls: list[dict[str, Any]], out: dict[str, Any]) -> Any:
    """Move tool-call and tool-result parts out of ``parts``; return a tool result if one was found."""
    response: Any = None
    kept: list[Any] = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("tool_call", "tool-call", "tool_use", "function_call"):
            tool_calls.append(_tool_call(part))
        elif kind in ("tool_call_response", "tool-result", "tool_result"):
            call_id = part.get("id") or part.get("toolCallId") or part.get("tool_use_id")
            if isinstance(call_id, str):
                out["tool_call_id"] = call_id.strip()
            name = part.get("name") or part.get("toolName")
            if isinstance(name, str) and name:
                out["name"] = name
            for key in ("response", "result", "output", "content"):
                if key in part:
                    response = _result_text(part[key])
                    break
        else:
            kept.append(part)
    parts[:] = kept
    return response


def _result_text(result: Any) -> Any:
    """A tool result part's result: text as it was sent (an Anthropic result's text blocks
    joined), any other value as it is (`otel_replay.messages.shaped_results` makes it text)."""
    if (
        isinstance(result, list)
        and result
        and all(isinstance(b, dict) and b.get("type") == "text" for b in result)
    ):
        return "".join(b["text"] if isinstance(b.get("text"), str) else "" for b in result)
    return result


def _distinct_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A call recorded twice (OpenInference writes a call in ``tool_calls`` and again as a
    ``contents`` part) counts once: calls with the same id are one call."""
    seen: set[str] = set()
    distinct = []
    for call in calls:
        call_id = call.get("id")
        if isinstance(call_id, str):
            if call_id in seen:
                continue
            seen.add(call_id)
        distinct.append(call)
    return distinct


def _tool_call(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {"name": str(raw)}
    call = raw.get("tool_call", raw)
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    out: dict[str, Any] = {}
    call_id = call.get("id") or call.get("toolCallId")
    if isinstance(call_id, str) and call_id:
        out["id"] = call_id.strip()
    name = function.get("name") or call.get("name") or call.get("toolName") or call.get("tool.name")
    if name is not None:
        out["name"] = _unquoted(name)
    for source, key in (
        (function, "arguments"),
        (call, "arguments"),
        (call, "args"),
        (call, "input"),
        (call, "tool.args"),
    ):
        if key in source:
            out["arguments"] = maybe_json(source[key])
            break
    return out


def _unquoted(name: Any) -> Any:
    """A tool name some instrumentations record with its quotes (``"'lookup_order'"``)."""
    if isinstance(name, str) and len(name) > 2 and name[0] == name[-1] and name[0] in "'\"":
        return name[1:-1]
    return name


def _content(parts: list[Any]) -> Any:
    """Join all-text parts into one string; keep mixed parts as a list; ``None`` when empty."""
    if not parts:
        return None
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type", "text") == "text":
            text = part.get("text", part.get("content"))
            if not isinstance(text, str):
                return [_part(p) for p in parts]
            texts.append(text)
        else:
            return [_part(p) for p in parts]
    return "".join(texts)


def _part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("type") == "text" and "content" in part:
        return {"type": "text", "text": part["content"]}
    return part


def _as_list(value: Any) -> list[Any]:
    value = maybe_json(value) if isinstance(value, str) else value
    return value if isinstance(value, list) else []


_SIMPLE_FIELDS = {
    "message.role": "role",
    "message.content": "content",
    "message.tool_call_id": "tool_call_id",
    "message.name": "name",
}
_TOOL_CALL_FIELDS = {
    "tool_call.id": "id",
    "tool_call.function.name": "name",
    "tool_call.function.arguments": "arguments",
}
_TOOL_CALLS = "message.tool_calls."

# What a flattened key means, worked out once per distinct key: ``(message index, the key's rest
# after the index, simple field or None, tool call index, tool call field or None)``, or None for a
# key outside the prefix. Agents resend their history on every call, so the same few hundred keys
# come back on every span; reading a key's meaning from here costs one lookup instead of a
# partition, a digit check and an int() per key per span.
_Slot = tuple[int, str, str | None, int, str | None]
_SLOTS: dict[str, dict[str, _Slot | None]] = {}
_SLOTS_PER_PREFIX = 50_000  # forgotten past this, so odd inputs cannot grow it without bound


def _slot(key: str, dotted: str) -> _Slot | None:
    if not key.startswith(dotted):
        return None
    index, _, rest = key[len(dotted) :].partition(".")
    if not _is_index(index):
        return None
    call_index, call_field = -1, None
    if rest.startswith(_TOOL_CALLS):
        number, _, call_rest = rest[len(_TOOL_CALLS) :].partition(".")
        if _is_index(number):
            call_index, call_field = int(number), _TOOL_CALL_FIELDS.get(call_rest)
    return int(index), rest, _SIMPLE_FIELDS.get(rest), call_index, call_field


def flattened_messages(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`normalize_messages(unflatten(attributes, prefix))`, fast for the common OpenInference shape.

    Agents resend their whole history on every model call, so this runs over most of the bytes of an
    import. Messages made of role, text content, tool calls and tool-call ids are built directly;
    anything else (multi-part contents, images, legacy function calls) takes the general path.
    """
    if isinstance(attributes.get(prefix), list):
        return normalize_messages(unflatten(attributes, prefix))
    slots = _SLOTS.get(prefix)
    if slots is None or len(slots) > _SLOTS_PER_PREFIX:
        slots = _SLOTS[prefix] = {}
    dotted = prefix + "."
    groups: dict[int, dict[str, tuple[_Slot, Any]]] = {}
    for key, value in attributes.items():
        slot = slots.get(key, _UNSEEN)
        if slot is _UNSEEN:
            slot = slots[key] = _slot(key, dotted)
        if slot is not None:
            group = groups.get(slot[0])
            if group is None:
                group = groups[slot[0]] = {}
            group[slot[1]] = (slot, value)  # a later key of the same rest wins, as in unflatten
    return [_flat_message(groups[i]) for i in sorted(groups)]


_UNSEEN: Any = object()


def _flat_message(flat: dict[str, tuple[_Slot, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    calls: dict[int, dict[str, Any]] = {}
    for slot, value in flat.values():
        _, _, field, call_index, call_field = slot
        if field is not None and isinstance(value, str):
            if field == "content" or field == "role" or value:
                out[field] = value
            continue
        if call_field is not None:
            call = calls.get(call_index)
            if call is None:
                call = calls[call_index] = {}
            if call_field == "arguments":
                call[call_field] = maybe_json(value)
            elif isinstance(value, str) and value:
                call[call_field] = value.strip() if call_field == "id" else _unquoted(value)
            continue
        # a shape the fast path does not know
        return normalize_message(_expand({rest: item for rest, (_, item) in flat.items()}))
    if calls:
        out["tool_calls"] = [calls[i] for i in sorted(calls)]
    return out
