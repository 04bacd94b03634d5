"""A local fake model server for the framework corpus: OpenAI, Anthropic and Gemini wire formats.

Standard library only (it runs inside every framework's own virtual environment). One deterministic
policy, the support agent of `policy`, answers every protocol; adapters translate each protocol's
request into a plain conversation and the policy's reply back into that protocol's response:

* OpenAI chat completions ``POST /v1/chat/completions`` (plain and SSE streaming, tool calls, usage),
  OpenAI responses ``POST /v1/responses`` (plain and SSE streaming; both APIs answer a
  ``json_schema`` response format with JSON), embeddings ``POST /v1/embeddings``;
* Anthropic Messages ``POST /v1/messages`` (plain and SSE streaming, ``tool_use`` blocks);
* Gemini ``POST /v1beta/models/{model}:generateContent`` (``functionCall`` parts).

The scenario: a customer asks where order A-1001 is and whether a late delivery is refundable. The
agent looks the order up (``lookup_order``), tracks the shipment (``track_shipment``), checks the
refund policy (``search_policies``, a retrieval) and answers; asked to do it "at once", its first
response asks for lookup_order and search_policies together (parallel tool calls). When a tool result reports an error, it
apologises instead. `serve` starts the server on a loopback port in a daemon thread; `SERVED`
counts the model requests it answered (chat completions, responses, messages, Gemini generations;
embeddings apart), which the harness writes on each run's root span.

What the policy says is deterministic; the ids are not. Like every real server it gives each
response, message item and tool call a fresh id, and stamps ``created`` with the clock, so what reads
its runs must compare them up to those correlation fields.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ORDER = {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
SHIPMENT = {"tracking_id": "TRK-42", "status": "delayed", "eta": "2026-12-04"}
POLICIES = [
    "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping cost.",
    "Returns: items can be returned within 30 days in their original packaging.",
    "Warranty: electronics carry a 12-month manufacturer warranty.",
]
FINAL_ANSWER = (
    "Order A-1001 has shipped but is delayed (tracking TRK-42, new ETA 2026-12-04). "
    "A delivery more than 3 days late qualifies for a refund of the shipping cost."
)
APOLOGY = "Sorry, I could not look up order A-1001 right now; please try again later."
PARALLEL_QUESTION = (
    "Look order A-1001 up and check the refund policy at once: will I get a refund if it is late?"
)
POLICY_ANSWER = "Late deliveries (more than 3 days) qualify for a full refund of the shipping cost."
TOOL_ARGUMENTS = {
    "lookup_order": {"order_id": "A-1001"},
    "track_shipment": {"tracking_id": "TRK-42"},
    "search_policies": {"query": "late delivery refund"},
}


# --- the policy -----------------------------------------------------------------------------------


def policy(messages: list[dict[str, Any]], tools: list[str]) -> dict[str, Any]:
    """The support agent's next turn: ``{"content": str}`` or ``{"tool_calls": [{"name",
    "arguments"}]}``.

    ``messages`` are ``{"role", "content", "tool_calls", "name"}`` with tool results as role
    ``tool`` (``name`` when the protocol says which tool). Results are matched to tools by name,
    else by the order calls were made.
    """
    called = [
        c["name"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    results = [m for m in messages if m["role"] == "tool"]
    asked = " ".join(str(m.get("content") or "") for m in messages if m["role"] == "user")
    if results and _is_error(results[-1].get("content")):
        return {"content": APOLOGY}
    only_policy = "A-1001" not in asked  # the retrieval run asks about the policy alone
    if "at once" in asked and not called:  # the parallel run: two tool calls in one response
        both = ("lookup_order", "search_policies")
        if all(tool in tools for tool in both):
            return {"tool_calls": [{"name": t, "arguments": dict(TOOL_ARGUMENTS[t])} for t in both]}
    for tool in ("lookup_order", "track_shipment", "search_policies"):
        if only_policy and tool != "search_policies":
            continue
        if tool in tools and tool not in called:
            return {"tool_calls": [{"name": tool, "arguments": dict(TOOL_ARGUMENTS[tool])}]}
    if only_policy:
        return {"content": POLICY_ANSWER}
    return {"content": FINAL_ANSWER}


def _is_error(content: Any) -> bool:
    return bool(re.search(r"error|unavailable|exception|failed", str(content or ""), re.I))


def embed(text: str, dimensions: int = 16) -> list[float]:
    """A deterministic embedding that means something: a bag of word stems (their first five
    letters), each hashed into one of ``dimensions`` buckets, scaled to unit length, so texts that
    share words are near (the refund policy is the nearest document to "late delivery refund")."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if len(word) > 3:
            vector[hashlib.sha256(word[:5].encode()).digest()[0] % dimensions] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in vector]


# --- OpenAI ------------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    """Text of an OpenAI/Anthropic content value (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                if part.get("type") == "tool_result":
                    parts.append(_text(part.get("content")))
                elif "text" in part:
                    parts.append(str(part["text"]))
            elif isinstance(part, str):
                parts.append(part)
        return " ".join(parts)
    return "" if content is None else json.dumps(content)


def _openai_conversation(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    messages = []
    names: dict[str, str] = {}
    for m in body.get("messages", []):
        calls = []
        for c in m.get("tool_calls") or []:
            function = c.get("function", {})
            names[c.get("id", "")] = function.get("name", "")
            calls.append({"name": function.get("name", ""), "arguments": function.get("arguments")})
        name = names.get(m.get("tool_call_id", ""), m.get("name"))
        messages.append(
            {
                "role": m.get("role"),
                "content": _text(m.get("content")),
                "tool_calls": calls,
                "name": name,
            }
        )
    tools = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
    return messages, tools


def fresh(prefix: str) -> str:
    """A new id, as every real model server makes one for each response, item and tool call."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _call_id(name: str, messages: list[dict[str, Any]]) -> str:
    return fresh("call_")


def _now() -> int:
    """``created``: the second the response was made, as a real server stamps it."""
    return int(time.time())


def _structured(reply: dict[str, Any], form: Any) -> dict[str, Any]:
    """A text reply in the JSON a structured-output request asks for (``json_schema``): each string
    property of the schema holds the text."""
    if "content" not in reply or not isinstance(form, dict) or form.get("type") != "json_schema":
        return reply
    schema = form.get("schema") or (form.get("json_schema") or {}).get("schema") or {}
    properties = schema.get("properties") or {}
    text = {k: reply["content"] for k, v in properties.items() if v.get("type") == "string"}
    return {"content": json.dumps(text)}


def openai_chat(body: dict[str, Any]) -> dict[str, Any]:
    messages, tools = _openai_conversation(body)
    reply = _structured(policy(messages, tools), body.get("response_format"))
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    finish = "stop"
    if "tool_calls" in reply:
        finish = "tool_calls"
        message["tool_calls"] = [
            {
                "id": _call_id(c["name"], messages),
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in reply["tool_calls"]
        ]
    return {
        "id": fresh("chatcmpl-"),
        "object": "chat.completion",
        "created": _now(),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": 20 * len(messages),
            "completion_tokens": 12,
            "total_tokens": 20 * len(messages) + 12,
        },
    }


def openai_chat_stream(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks of a streamed chat completion (the last one with usage when asked)."""
    whole = openai_chat(body)
    choice = whole["choices"][0]
    base = {
        "id": whole["id"],
        "object": "chat.completion.chunk",
        "created": whole["created"],
        "model": whole["model"],
    }
    chunks = [
        {
            **base,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            ],
        }
    ]
    content = choice["message"].get("content")
    if content:
        for piece in re.findall(r"\S+\s*", content):
            chunks.append(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
            )
    for i, call in enumerate(choice["message"].get("tool_calls") or []):
        head = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {"tool_calls": [head]}, "finish_reason": None}],
            }
        )
        arguments = {"index": i, "function": {"arguments": call["function"]["arguments"]}}
        chunks.append(
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [arguments]}, "finish_reason": None}
                ],
            }
        )
    chunks.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    )
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": whole["usage"]})
    return chunks


def openai_responses(body: dict[str, Any]) -> dict[str, Any]:
    """The Responses API (plain): ``input`` items → one message or function calls."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    raw = body.get("input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or []
    names: dict[str, str] = {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            names[item.get("call_id", "")] = item.get("name", "")
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": item.get("name"), "arguments": item.get("arguments")}],
                }
            )
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "content": _text(item.get("output")),
                    "name": names.get(item.get("call_id", "")),
                }
            )
        else:
            messages.append(
                {"role": item.get("role", "user"), "content": _text(item.get("content"))}
            )
    tools = [t.get("name", "") for t in body.get("tools") or [] if t.get("type") == "function"]
    reply = _structured(policy(messages, tools), (body.get("text") or {}).get("format"))
    output: list[dict[str, Any]] = []
    if "tool_calls" in reply:
        for c in reply["tool_calls"]:
            call_id = _call_id(c["name"], messages)
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call_id}",
                    "call_id": call_id,
                    "name": c["name"],
                    "arguments": json.dumps(c["arguments"]),
                    "status": "completed",
                }
            )
    else:
        output.append(
            {
                "type": "message",
                "id": fresh("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply["content"], "annotations": []}],
            }
        )
    return {
        "id": fresh("resp_"),
        "object": "response",
        "created_at": _now(),
        "status": "completed",
        "model": body.get("model", "fake-model"),
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "usage": {
            "input_tokens": 20 * len(messages),
            "output_tokens": 12,
            "total_tokens": 20 * len(messages) + 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def openai_responses_stream(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The events of a streamed response, named as the API names them: the response created, each
    output item added, its text or arguments in pieces, done, and the response completed."""
    whole = openai_responses(body)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**whole, "status": "in_progress", "output": []}},
        {
            "type": "response.in_progress",
            "response": {**whole, "status": "in_progress", "output": []},
        },
    ]
    for index, item in enumerate(whole["output"]):
        at = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            for piece in re.findall(r".{1,8}", item["arguments"]):
                events.append(
                    {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **at,
                    "arguments": item["arguments"],
                }
            )
        else:
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": [], "status": "in_progress"},
                }
            )
            events.append(
                {"type": "response.content_part.added", **at, "content_index": 0, "part": part}
            )
            for piece in re.findall(r"\S+\s*", text):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        **at,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    **at,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    **at,
                    "content_index": 0,
                    "part": {**part, "text": text},
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": whole})
    return [(event["type"], {**event, "sequence_number": n}) for n, event in enumerate(events)]


def openai_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body.get("input")
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    return {
        "object": "list",
        "model": body.get("model", "fake-embedding"),
        "data": [
            {"object": "embedding", "index": i, "embedding": embed(str(t))}
            for i, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": 4 * len(texts), "total_tokens": 4 * len(texts)},
    }


# --- Anthropic -----------------------------------------------------------------------------------------


def _anthropic_conversation(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": _text(body["system"])})
    names: dict[str, str] = {}
    for m in body.get("messages", []):
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        calls = [
            {"name": b.get("name"), "arguments": b.get("input")}
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                names[b.get("id", "")] = b.get("name", "")
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for r in results:
            text = _text(r.get("content"))
            if r.get("is_error"):
                text = f"error: {text}"
            messages.append(
                {"role": "tool", "content": text, "name": names.get(r.get("tool_use_id", ""))}
            )
        if not results:
            messages.append({"role": m.get("role"), "content": _text(content), "tool_calls": calls})
    tools = [t.get("name", "") for t in body.get("tools") or []]
    return messages, tools


def anthropic_message(body: dict[str, Any]) -> dict[str, Any]:
    messages, tools = _anthropic_conversation(body)
    reply = policy(messages, tools)
    if "tool_calls" in reply:
        content = [
            {
                "type": "tool_use",
                "id": fresh("toolu_"),
                "name": c["name"],
                "input": c["arguments"],
            }
            for c in reply["tool_calls"]
        ]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": reply["content"]}]
        stop = "end_turn"
    return {
        "id": fresh("msg_"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-claude"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 20 * len(messages), "output_tokens": 12},
    }


def anthropic_stream(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    whole = anthropic_message(body)
    start = {
        **whole,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": whole["usage"]["input_tokens"], "output_tokens": 0},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(whole["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "text_delta", "text": block["text"]},
                    },
                )
            )
        else:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {**block, "input": {}},
                    },
                )
            )
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        },
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 12},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# --- Gemini ---------------------------------------------------------------------------------------------


def gemini_generate(body: dict[str, Any], model: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        messages.append(
            {
                "role": "system",
                "content": " ".join(p.get("text", "") for p in system.get("parts", [])),
            }
        )
    for content in body.get("contents", []):
        parts = content.get("parts", [])
        calls = [
            {"name": p["functionCall"]["name"], "arguments": p["functionCall"].get("args")}
            for p in parts
            if "functionCall" in p
        ]
        responses = [
            p.get("functionResponse") or p.get("function_response")
            for p in parts
            if "functionResponse" in p or "function_response" in p
        ]
        for r in responses:
            messages.append(
                {"role": "tool", "content": json.dumps(r.get("response")), "name": r.get("name")}
            )
        if not responses:
            role = "assistant" if content.get("role") == "model" else "user"
            messages.append(
                {
                    "role": role,
                    "content": " ".join(p.get("text", "") for p in parts if "text" in p),
                    "tool_calls": calls,
                }
            )
    tools = [
        d.get("name", "")
        for t in body.get("tools") or []
        for d in t.get("functionDeclarations") or t.get("function_declarations") or []
    ]
    reply = policy(messages, tools)
    if "tool_calls" in reply:
        parts = [
            {"functionCall": {"name": c["name"], "args": c["arguments"]}}
            for c in reply["tool_calls"]
        ]
    else:
        parts = [{"text": reply["content"]}]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 20 * len(messages),
            "candidatesTokenCount": 12,
            "totalTokenCount": 20 * len(messages) + 12,
        },
        "modelVersion": model,
    }


# --- the server -------------------------------------------------------------------------------------------


#: The requests the server answered, by kind: ``model`` (a model call: chat completions, responses,
#: messages, Gemini generations) and ``embedding``; the harness resets it before each run.
SERVED: dict[str, int] = {"model": 0, "embedding": 0}
_MODEL_ROUTE = re.compile(
    r"(/chat/completions|/responses|/messages|:(stream)?generateContent)$", re.I
)


def _count(path: str) -> None:
    if _MODEL_ROUTE.search(path):
        SERVED["model"] += 1
    elif path.endswith("/embeddings"):
        SERVED["embedding"] += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        _count(path)
        if path.endswith("/chat/completions"):
            if body.get("stream"):
                return self._sse([(None, c) for c in openai_chat_stream(body)], done=True)
            return self._json(openai_chat(body))
        if path.endswith("/responses"):
            if body.get("stream"):
                return self._sse(openai_responses_stream(body), done=False)
            return self._json(openai_responses(body))
        if path.endswith("/embeddings"):
            return self._json(openai_embeddings(body))
        if path.endswith("/messages"):
            if body.get("stream"):
                return self._sse(anthropic_stream(body), done=False)
            return self._json(anthropic_message(body))
        match = re.search(r"/models/([^/:]+):(generateContent|streamGenerateContent)", path)
        if match:
            answer = gemini_generate(body, match.group(1))
            if match.group(2) == "streamGenerateContent":
                return self._sse([(None, answer)], done=False)
            return self._json(answer)
        self._json({"error": {"message": f"fake model server: no route for {path}"}}, status=404)

    def _json(self, value: Any, status: int = 200) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str | None, dict[str, Any]]], *, done: bool) -> None:
        lines = []
        for name, data in events:
            if name:
                lines.append(f"event: {name}\n")
            lines.append(f"data: {json.dumps(data)}\n\n")
        if done:
            lines.append("data: [DONE]\n\n")
        payload = "".join(lines).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


Handler = _Handler  # subclass it to add a route a framework needs (see `serve`)


class EchoingHandler(_Handler):
    """The fake server, with Responses answers that echo ``instructions`` like the real API's (the
    OpenAI Agents SDK reads its agent's instructions back from the response)."""

    def do_POST(self) -> None:
        if not self.path.split("?")[0].endswith("/responses"):
            return super().do_POST()
        _count(self.path.split("?")[0])
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        echo = {"instructions": body.get("instructions")}
        if body.get("stream"):  # each event's response echoes them too
            events = [
                (name, {**data, "response": {**data["response"], **echo}} if "response" in data
                 else data)
                for name, data in openai_responses_stream(body)
            ]  # fmt: skip
            return self._sse(events, done=False)
        self._json({**openai_responses(body), **echo})


def serve(
    port: int = 0, handler: type[BaseHTTPRequestHandler] = Handler
) -> tuple[ThreadingHTTPServer, str]:
    """Start the server on 127.0.0.1 (``port`` 0: any free one); return it and its base URL.

    A framework that needs another route passes a subclass of `Handler`; one whose model must answer
    in its own text format (a ReAct prompt, a code agent) replaces the module's ``policy`` function
    (``fake_models.policy = ...``): every adapter looks it up at call time.
    """
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(0.01)
    return server, f"http://127.0.0.1:{server.server_address[1]}"
