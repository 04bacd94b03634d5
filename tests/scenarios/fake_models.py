"""Local stand-ins for a model provider: the OpenAI chat-completions API (``POST
/v1/chat/completions``) and the Anthropic messages API (``POST /v1/messages``), on one loopback
server.

Like every real server, each response has a fresh id, fresh tool-call ids (uuid4) and a ``created``
that moves on; and, as real servers do, a request whose tool result answers no tool call, or whose
OpenAI tool message has no text, is refused with 400. The server keeps every request it was sent
(``requests``), so a test can read what a model was handed.

The model itself is `reply`, a few rules over the customer's question and the tool results so far.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scenarios.local import LocalServer

Results = list[tuple[str, Any]]  # (tool name, its result as JSON when it is JSON) in order


def reply(question: str, results: Results) -> dict[str, Any]:
    """The model's next turn: ``{"tool": name, "arguments": {...}}`` or ``{"text": answer}``.

    Look the order up first; if the lookup failed, say so; else ask the refund policy for the
    customer's reason, and answer with it."""
    found = re.search(r"\b[A-Z]-\d+\b", question)
    order_id = found.group(0) if found else "unknown"
    latest = dict(results)  # each tool's latest result
    if "lookup_order" not in latest:
        return {"tool": "lookup_order", "arguments": {"order_id": order_id}}
    order = latest["lookup_order"]
    if not isinstance(order, dict) or "error" in order:
        return {"text": f"I could not look up your order {order_id}; please try again later."}
    if "get_refund_policy" not in latest:
        reason = next((r for r in ("damaged", "late") if r in question), "other")
        return {"tool": "get_refund_policy", "arguments": {"reason": reason}}
    policy = latest["get_refund_policy"]
    if isinstance(policy, dict) and policy.get("refundable"):
        return {
            "text": f"Your {order.get('item', 'order')} ({order_id}) is eligible for a refund: "
            f"{policy.get('policy')}."
        }
    return {"text": f"I'm sorry, we cannot refund order {order_id}."}


class Refused(Exception):
    """A request a real server answers 400."""


class ModelServer(LocalServer):
    """Both APIs, answering with `reply`; ``requests`` holds each request body, by path."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._created = 0
        super().__init__(_Handler)

    @property
    def openai_url(self) -> str:
        return f"{self.url}/v1"

    def created(self) -> int:
        """Seconds since the epoch, as ``created`` is, and never the same twice."""
        with self._lock:
            self._created = max(int(time.time()), self._created + 1)
            return self._created

    def tool_results(self, since: int = 0) -> list[Any]:
        """The content of every tool result the requests from the ``since``-th on carried (OpenAI
        tool messages and Anthropic ``tool_result`` blocks; a missing content is None)."""
        found = []
        for _, body in self.requests[since:]:
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


def chat_completion(server: ModelServer, body: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, str] = {}
    question, results = [], []
    for i, message in enumerate(body["messages"]):
        if message["role"] == "user":
            question.append(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if message["role"] == "tool":
            if message.get("tool_call_id") not in names:
                raise Refused(f"messages[{i}].tool_call_id answers no tool call")
            if not isinstance(message.get("content"), str):
                raise Refused(f"messages[{i}].content: a tool message's content is a string")
            results.append((names[message["tool_call_id"]], _parsed(message["content"])))
    turn = reply(" ".join(question), results)
    answer: dict[str, Any] = {"role": "assistant", "content": turn.get("text")}
    if "tool" in turn:
        function = {"name": turn["tool"], "arguments": json.dumps(turn["arguments"])}
        call = {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": function}
        answer["tool_calls"] = [call]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": server.created(),
        "model": body["model"],
        "system_fingerprint": f"fp_{uuid.uuid4().hex[:10]}",
        "choices": [
            {
                "index": 0,
                "message": answer,
                "logprobs": None,
                "finish_reason": "tool_calls" if "tool" in turn else "stop",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
    }


def anthropic_message(server: ModelServer, body: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, str] = {}
    question, results = [], []
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks:
            if block["type"] == "tool_use":
                names[block["id"]] = block["name"]
            elif block["type"] == "tool_result":
                if block.get("tool_use_id") not in names:
                    raise Refused("a tool_result block's tool_use_id answers no tool_use block")
                results.append((names[block["tool_use_id"]], _parsed(_text(block.get("content")))))
            elif block["type"] == "text" and message["role"] == "user":
                question.append(block["text"])
    turn = reply(" ".join(question), results)
    if "tool" in turn:
        use = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}"}
        content = [{**use, "name": turn["tool"], "input": turn["arguments"]}]
    else:
        content = [{"type": "text", "text": turn["text"]}]
    return {
        "id": f"msg_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": "tool_use" if "tool" in turn else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 20},
    }


def _text(content: Any) -> str:
    """The text of a message's content: a string, or a list of text parts."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


ROUTES = {"/v1/chat/completions": chat_completion, "/v1/messages": anthropic_message}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        server: ModelServer = self.server.owner  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        path = self.path.partition("?")[0]
        with server._lock:
            server.requests.append((path, body))
        route = ROUTES.get(path)
        if route is None:
            return self._send(404, {"error": {"message": f"no route {path}"}})
        try:
            self._send(200, route(server, body))
        except Refused as refused:
            self._send(400, {"error": {"type": "invalid_request_error", "message": str(refused)}})

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass
