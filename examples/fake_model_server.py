"""The one fake model server of the tests, scripts, examples and docs: OpenAI, Anthropic and Gemini
wire formats on a loopback port, answered by a model of one's choosing.

Standard library only: the framework corpus runs it inside every framework's own virtual
environment (``scripts/frameworks/fake_models.py`` names it there), the tests import it, and the
examples and docs start it from the command line::

    python -m examples.fake_model_server --model support --port 8000   # base_url .../v1

It lives under ``examples/`` rather than ``tests/`` because examples and scripts are what a user
runs: a docs command may start it, and an example must not import the test suite.

A *model* is a function of a `Request` (the conversation in one plain shape, whatever the API) to a
reply: ``{"content": text}`` or ``{"tool_calls": [{"name", "arguments"}]}`` (``"id"`` to choose a
call's id, ``"message"`` for a whole OpenAI assistant message, ``"usage": False`` to report none).
Adapters translate each API's request into the conversation and the reply back into that API's
response:

* OpenAI chat completions ``POST /v1/chat/completions`` (plain and SSE streaming, tool calls, usage),
  OpenAI responses ``POST /v1/responses`` (plain and SSE streaming; both APIs answer a
  ``json_schema`` response format with JSON), embeddings ``POST /v1/embeddings``;
* Anthropic Messages ``POST /v1/messages`` (plain and SSE streaming, ``tool_use`` blocks);
* Gemini ``POST /v1beta/models/{model}:generateContent`` (``functionCall`` parts).

`FakeModelServer` serves one model and keeps what a test reads: every request body (`requests`,
their paths in `paths`), the requests answered by kind (`served`), a seeded generator the model
samples from (`Request.draws`, so a sampling model draws the same world on every serial run) and a
queue of faults (`FakeModelServer.fail`: the next requests answered with an HTTP error or a body
that is no JSON). Like every real server it gives each response, message item and tool call a fresh
id, stamps ``created`` with the clock (never the same second twice), and refuses (400) a tool
result that answers no tool call or an OpenAI tool message with no content.

The models here: `support` (the framework corpus's support agent: order A-1001, `policy`), `shop`
(the support desk of ``tests/scenarios``: a damaged kettle, order A-1001), `debugger` (names the
step a failed run went wrong at, as ``attribute --suspect judge`` asks) and `replying` (a model
from a function of the raw request body to the assistant message). The incident example's model and
its stand-in judge are served by ``examples/incident/openai_server.py`` and ``judge_server.py``.

The support scenario: a customer asks where order A-1001 is and whether a late delivery is
refundable. The agent looks the order up (``lookup_order``), tracks the shipment
(``track_shipment``), checks the refund policy (``search_policies``, a retrieval) and answers; asked
to do it "at once", its first response asks for lookup_order and search_policies together (parallel
tool calls). When a tool result reports an error, it apologises instead. `serve` starts a server of
it and counts into `SERVED`, which the corpus harness writes on each run's root span.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import random
import re
import threading
import time
import uuid
from collections.abc import Callable
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


# --- models ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Request:
    """What a model is asked: ``api`` (``chat``, ``responses``, ``messages`` or ``gemini``), the
    conversation as ``{"role", "content", "tool_calls": [{"name", "arguments"}], "name"}`` dicts
    (tool results are role ``tool``, ``name`` the tool's when the API says which), the names of the
    tools offered, the raw request ``body``, and ``draws``, the server's seeded generator."""

    api: str
    messages: list[dict[str, Any]]
    tools: list[str]
    body: dict[str, Any]
    draws: random.Random = dataclasses.field(default_factory=lambda: random.Random(0))


Model = Callable[[Request], dict[str, Any]]


class Refused(Exception):
    """A request a real server answers 400."""


def support(request: Request) -> dict[str, Any]:
    """The framework corpus's support agent: `policy` (looked up when asked, so a framework whose
    model must answer in its own text format can replace ``policy``)."""
    return policy(request.messages, request.tools)


def shop(request: Request) -> dict[str, Any]:
    """The support desk of ``tests/scenarios``: look the order up first; if the lookup failed, say
    so; else ask the refund policy for the customer's reason, and answer with it."""
    question = " ".join(m["content"] for m in request.messages if m["role"] == "user")
    found = re.search(r"\b[A-Z]-\d+\b", question)
    order_id = found.group(0) if found else "unknown"
    latest = {m["name"]: _parsed(m["content"]) for m in request.messages if m["role"] == "tool"}
    if "lookup_order" not in latest:
        return _calls("lookup_order", {"order_id": order_id})
    order = latest["lookup_order"]
    if not isinstance(order, dict) or "error" in order:
        return {"content": f"I could not look up your order {order_id}; please try again later."}
    if "get_refund_policy" not in latest:
        reason = next((r for r in ("damaged", "late") if r in question), "other")
        return _calls("get_refund_policy", {"reason": reason})
    terms = latest["get_refund_policy"]
    if isinstance(terms, dict) and terms.get("refundable"):
        return {
            "content": f"Your {order.get('item', 'order')} ({order_id}) is eligible for a refund: "
            f"{terms.get('policy')}."
        }
    return {"content": f"I'm sorry, we cannot refund order {order_id}."}


def replying(rule: Callable[[dict[str, Any]], dict[str, Any]]) -> Model:
    """A chat-completions model from ``rule``, a function of the raw request body to the OpenAI
    assistant message to send back (its ids as the rule gives them; no token usage reported)."""
    return lambda request: {"message": rule(request.body), "usage": False}


def _calls(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _parsed(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _arguments(arguments: Any) -> str:
    """A call's arguments as the JSON text the wire carries (text given is sent as it is)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


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
    for i, m in enumerate(body.get("messages", [])):
        calls = []
        for c in m.get("tool_calls") or []:
            function = c.get("function", {})
            names[c.get("id", "")] = function.get("name", "")
            calls.append({"name": function.get("name", ""), "arguments": function.get("arguments")})
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in names:
                raise Refused(f"messages[{i}].tool_call_id answers no tool call")
            if not isinstance(m.get("content"), str | list):
                raise Refused(f"messages[{i}].content: a tool message's content is text")
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


_CLOCK = [0]
_CLOCK_LOCK = threading.Lock()


def _now() -> int:
    """``created``: the second the response was made, as a real server stamps it, and never the same
    twice (a response made in the same second as the last is stamped a second later)."""
    with _CLOCK_LOCK:
        _CLOCK[0] = max(int(time.time()), _CLOCK[0] + 1)
        return _CLOCK[0]


def _structured(reply: dict[str, Any], form: Any) -> dict[str, Any]:
    """A text reply in the JSON a structured-output request asks for (``json_schema``): each string
    property of the schema holds the text."""
    if "content" not in reply or not isinstance(form, dict) or form.get("type") != "json_schema":
        return reply
    schema = form.get("schema") or (form.get("json_schema") or {}).get("schema") or {}
    properties = schema.get("properties") or {}
    text = {k: reply["content"] for k, v in properties.items() if v.get("type") == "string"}
    return {"content": json.dumps(text)}


def openai_chat(body: dict[str, Any], model: Model | None = None) -> dict[str, Any]:
    messages, tools = _openai_conversation(body)
    reply = (model or support)(Request("chat", messages, tools, body))
    reply = _structured(reply, body.get("response_format"))
    message: dict[str, Any] = reply.get("message") or {
        "role": "assistant",
        "content": reply.get("content"),
    }
    if "tool_calls" in reply:
        message["tool_calls"] = [
            {
                "id": c.get("id") or fresh("call_"),
                "type": "function",
                "function": {"name": c["name"], "arguments": _arguments(c["arguments"])},
            }
            for c in reply["tool_calls"]
        ]
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    answer: dict[str, Any] = {
        "id": fresh("chatcmpl-"),
        "object": "chat.completion",
        "created": _now(),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if reply.get("usage", True):
        answer["usage"] = {
            "prompt_tokens": 20 * len(messages),
            "completion_tokens": 12,
            "total_tokens": 20 * len(messages) + 12,
        }
    return answer


def openai_chat_stream(body: dict[str, Any], model: Model | None = None) -> list[dict[str, Any]]:
    """The chunks of a streamed chat completion (the last one with usage when asked)."""
    whole = openai_chat(body, model)
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
    if (body.get("stream_options") or {}).get("include_usage") and "usage" in whole:
        chunks.append({**base, "choices": [], "usage": whole["usage"]})
    return chunks


def openai_responses(body: dict[str, Any], model: Model | None = None) -> dict[str, Any]:
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
    reply = (model or support)(Request("responses", messages, tools, body))
    reply = _structured(reply, (body.get("text") or {}).get("format"))
    output: list[dict[str, Any]] = []
    if "tool_calls" in reply:
        for c in reply["tool_calls"]:
            call_id = fresh("call_")
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call_id}",
                    "call_id": call_id,
                    "name": c["name"],
                    "arguments": _arguments(c["arguments"]),
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


def openai_responses_stream(
    body: dict[str, Any], model: Model | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The events of a streamed response, named as the API names them: the response created, each
    output item added, its text or arguments in pieces, done, and the response completed."""
    whole = openai_responses(body, model)
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
            if r.get("tool_use_id") not in names:
                raise Refused("a tool_result block's tool_use_id answers no tool_use block")
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


def anthropic_message(body: dict[str, Any], model: Model | None = None) -> dict[str, Any]:
    messages, tools = _anthropic_conversation(body)
    reply = (model or support)(Request("messages", messages, tools, body))
    if "tool_calls" in reply:
        content = [
            {
                "type": "tool_use",
                "id": c.get("id") or fresh("toolu_"),
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


def anthropic_stream(
    body: dict[str, Any], model: Model | None = None
) -> list[tuple[str, dict[str, Any]]]:
    whole = anthropic_message(body, model)
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


def gemini_generate(body: dict[str, Any], name: str, model: Model | None = None) -> dict[str, Any]:
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
    reply = (model or support)(Request("gemini", messages, tools, body))
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
        "modelVersion": name,
    }


# --- the server -------------------------------------------------------------------------------------------


#: What `serve` counts into: the requests answered by kind, ``model`` (chat completions, responses,
#: messages, Gemini generations) and ``embedding``; the corpus harness resets it before each run.
SERVED: dict[str, int] = {"model": 0, "embedding": 0}
_MODEL_ROUTE = re.compile(
    r"(/chat/completions|/responses|/messages|:(stream)?generateContent)$", re.I
)


@dataclasses.dataclass
class Fault:
    """How a request is answered instead: an HTTP ``status`` with an error body in the API's shape,
    or, given ``body``, those bytes as they are (a 200 whose body is no JSON, say)."""

    status: int = 500
    message: str = "the fake model server was told to fail"
    body: bytes | None = None
    #: What the answer's ``retry-after-ms`` header says, as a busy server's does (the SDKs retry
    #: after it rather than after their own backoff of a second or more).
    retry_after_ms: int = 10


class FakeModelServer(ThreadingHTTPServer):
    """``model`` served on ``127.0.0.1`` (``port`` 0: a free one) from a daemon thread, from the
    moment it is made until `stop` (or the end of a ``with`` block).

    ``url`` is the server's root, ``base_url`` the OpenAI-style one (``url`` + ``/v1``). ``seed``
    seeds `draws` (or pass ``draws``, a generator of one's own); ``served`` is the dict the counts go
    into (a fresh one unless given)."""

    daemon_threads = True

    def __init__(
        self,
        model: Model | None = None,
        *,
        port: int = 0,
        seed: int = 0,
        draws: random.Random | None = None,
        served: dict[str, int] | None = None,
        handler: type[BaseHTTPRequestHandler] | None = None,
    ) -> None:
        self.model: Model = model or support
        self.draws = draws or random.Random(seed)
        self.served = served if served is not None else {"model": 0, "embedding": 0}
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.faults: list[Fault] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", port), handler or Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.base_url = f"{self.url}/v1"
        self._thread: threading.Thread | None = threading.Thread(
            target=self.serve_forever, daemon=True
        )
        self._thread.start()

    def answer(self, request: Request) -> dict[str, Any]:
        """The model's reply, asked with this server's `draws` (one draw at a time)."""
        with self.lock:
            return self.model(dataclasses.replace(request, draws=self.draws))

    def fail(
        self,
        times: int = 1,
        status: int = 500,
        message: str | None = None,
        body: bytes | None = None,
    ) -> None:
        """Answer the next ``times`` model requests with a `Fault` instead of the model (each is
        still kept in `requests` and counted in `served`)."""
        fault = Fault(status, message or Fault.message, body)
        with self.lock:
            self.faults += [fault] * times

    def take(self, path: str, body: dict[str, Any]) -> Fault | None:
        """Keep and count a request; the fault it is to be answered with, if one is queued."""
        with self.lock:
            self.requests.append(body)
            self.paths.append(path)
            if _MODEL_ROUTE.search(path):
                self.served["model"] += 1
                return self.faults.pop(0) if self.faults else None
            if path.endswith("/embeddings"):
                self.served["embedding"] += 1
            return None

    def tool_results(self, since: int = 0) -> list[Any]:
        """The content of every tool result the requests from the ``since``-th on carried (OpenAI
        tool messages and Anthropic ``tool_result`` blocks; a missing content is None)."""
        found = []
        for body in self.requests[since:]:
            for message in body.get("messages", []):
                if message.get("role") == "tool":
                    found.append(message.get("content"))
                if isinstance(message.get("content"), list):
                    found += [
                        block.get("content")
                        for block in message["content"]
                        if isinstance(block, dict) and block.get("type") == "tool_result"
                    ]
        return found

    def stop(self) -> None:
        """Shut the server down and close its port: a connection to ``url`` is refused from now."""
        if self._thread is not None:
            self.shutdown()
            self.server_close()
            self._thread = None

    def __enter__(self) -> FakeModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Handler(BaseHTTPRequestHandler):
    """The routes; subclass it to add one a framework needs (pass it as ``handler``)."""

    protocol_version = "HTTP/1.1"
    server: FakeModelServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        fault = self.server.take(path, body)
        if fault is not None:
            return self._fault(fault)
        try:
            self._route(path, body)
        except Refused as refused:
            error = {"type": "invalid_request_error", "message": str(refused)}
            self._json({"type": "error", "error": error}, status=400)

    def _route(self, path: str, body: dict[str, Any]) -> None:
        model = self.server.answer
        if path.endswith("/chat/completions"):
            if body.get("stream"):
                return self._sse([(None, c) for c in openai_chat_stream(body, model)], done=True)
            return self._json(openai_chat(body, model))
        if path.endswith("/responses"):
            if body.get("stream"):
                return self._sse(openai_responses_stream(body, model), done=False)
            return self._json(openai_responses(body, model))
        if path.endswith("/embeddings"):
            return self._json(openai_embeddings(body))
        if path.endswith("/messages"):
            if body.get("stream"):
                return self._sse(anthropic_stream(body, model), done=False)
            return self._json(anthropic_message(body, model))
        match = re.search(r"/models/([^/:]+):(generateContent|streamGenerateContent)", path)
        if match:
            answer = gemini_generate(body, match.group(1), model)
            if match.group(2) == "streamGenerateContent":
                return self._sse([(None, answer)], done=False)
            return self._json(answer)
        self._json({"error": {"message": f"fake model server: no route for {path}"}}, status=404)

    def _fault(self, fault: Fault) -> None:
        error = {"type": "api_error", "message": fault.message, "code": fault.status}
        data = fault.body
        if data is None:
            data = json.dumps({"type": "error", "error": error}).encode()
        self._send(fault.status, data, "application/json", {"retry-after-ms": fault.retry_after_ms})

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")

    def _sse(self, events: list[tuple[str | None, dict[str, Any]]], *, done: bool) -> None:
        lines = []
        for name, data in events:
            if name:
                lines.append(f"event: {name}\n")
            lines.append(f"data: {json.dumps(data)}\n\n")
        if done:
            lines.append("data: [DONE]\n\n")
        self._send(200, "".join(lines).encode(), "text/event-stream")

    def _send(
        self, status: int, data: bytes, kind: str, headers: dict[str, Any] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(data)


class EchoingHandler(Handler):
    """The routes, with Responses answers that echo ``instructions`` like the real API's (the OpenAI
    Agents SDK reads its agent's instructions back from the response)."""

    def _route(self, path: str, body: dict[str, Any]) -> None:
        if not path.endswith("/responses"):
            return super()._route(path, body)
        echo = {"instructions": body.get("instructions")}
        if body.get("stream"):  # each event's response echoes them too
            events = [
                (name, {**data, "response": {**data["response"], **echo}} if "response" in data
                 else data)
                for name, data in openai_responses_stream(body, self.server.answer)
            ]  # fmt: skip
            return self._sse(events, done=False)
        self._json({**openai_responses(body, self.server.answer), **echo})


def serve(
    port: int = 0, handler: type[BaseHTTPRequestHandler] = Handler
) -> tuple[FakeModelServer, str]:
    """A server of `support` counting into `SERVED`, and its root URL (the framework corpus's way).

    One whose model must answer in its own text format (a ReAct prompt, a code agent) replaces the
    module's ``policy`` function (``fake_models.policy = ...``): `support` looks it up when asked.
    """
    server = FakeModelServer(port=port, served=SERVED, handler=handler)
    return server, server.url


def debugger(request: Request) -> dict[str, Any]:
    """An LLM-judge "debugger", as ``agent-replay attribute --suspect judge`` asks one: it reads
    the run's steps as that prompt lists them (``step K (resamplable): kind name: {json}``) and
    names the first resamplable tool step that returned nothing or failed (else the last
    resamplable step), as ``{"step": K, "reason": "..."}``."""
    prompt = str(request.messages[-1]["content"]) if request.messages else ""
    found = re.findall(r"^step (\d+) \(resamplable\): (\w+) (\S+): (.*)$", prompt, re.M)
    named, reason = None, "it is the last step that could have gone otherwise"
    for index, kind, name, text in found:
        shown = _parsed(text)
        record = shown if isinstance(shown, dict) else {}
        if kind != "llm" and (record.get("output") in ([], {}, "", None) or "error" in record):
            named, reason = int(index), f"{name} returned nothing, and the agent went on without it"
            break
    if named is None and found:
        named = int(found[-1][0])
    return {"content": json.dumps({"step": named, "reason": reason})}


MODELS: dict[str, Model] = {"support": support, "shop": shop, "debugger": debugger}


def main(model: Model, port: int, what: str, draws: random.Random | None = None) -> None:
    """Serve ``model`` on ``port`` until Ctrl-C, saying where (the examples' ``__main__``)."""
    with FakeModelServer(model, port=port, draws=draws) as server:
        print(f"serving {what} at {server.base_url} (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="support")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    main(MODELS[options.model], options.port, f"the {options.model} model")
