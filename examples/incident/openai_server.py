"""The incident investigator's rule-based model behind a local OpenAI-compatible endpoint.

``POST /v1/chat/completions`` (no streaming) answers with `examples.incident.model.respond`: the
same pure function of the conversation the other examples use, so an unmodified OpenAI-SDK agent
(`examples.incident.openai_app`) can run against it with no key and no network. Standard library only.
Like every real server it gives each response and each tool call a fresh id and stamps ``created``
with the clock: what the model says is a function of the conversation, its ids are not.

Asked to play one of the investigator's tools (``--tools simulate``: a question that gives the
tool's name, the call's arguments and the results it returned before), it answers as a model that
knows the world would, and samples as one does: the deploy API's answer is sometimes empty, as the
flaky deploy API of `examples.incident.tools` is (a draw per request, from a generator seeded when
the server starts, so a run of the docs sees the same world every time it is made serially).

    python -m examples.incident.openai_server --port 8000     # then base_url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import world
from .model import MODEL_NAME, respond

_DRAWS = random.Random(0)  # the stand-in model's sampling
_DRAWS_LOCK = threading.Lock()


def play(question: dict[str, Any]) -> Any:
    """A tool's result, played: the world's answer to the call, the deploy API's sometimes empty."""
    tool, arguments = question.get("tool"), question.get("arguments") or {}
    real = {
        "list_deploys": world.list_deploys,
        "query_metrics": world.query_metrics,
        "search_logs": world.search_logs,
    }.get(str(tool))
    if real is None:
        return {"error": f"no such tool: {tool}"}
    with _DRAWS_LOCK:
        empty = _DRAWS.random() < world.EMPTY_DEPLOYS_RATE
    if tool == "list_deploys" and empty:
        return []
    try:
        return real(**arguments)
    except (TypeError, world.ToolError) as exc:
        return {"error": str(exc)}


def _played(body: dict[str, Any]) -> dict[str, Any] | None:
    """The question of a request that asks the model to play a tool, else None."""
    messages = body.get("messages") or []
    if len(messages) != 2 or messages[0].get("role") != "system":
        return None
    with contextlib.suppress(ValueError, TypeError):
        question = json.loads(messages[1].get("content") or "")
        if isinstance(question, dict) and {"tool", "arguments", "examples"} <= set(question):
            return question
    return None


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """One chat completion: the OpenAI conversation in the model's own shape, its reply back (or,
    asked to play a tool, the tool's result as JSON text)."""
    question = _played(body)
    if question is not None:
        return _completed(body, {"content": json.dumps(play(question))})
    conversation = []
    for message in body.get("messages", []):
        calls = [
            {
                "id": call["id"],
                "name": call["function"]["name"],
                "arguments": json.loads(call["function"]["arguments"] or "{}"),
            }
            for call in message.get("tool_calls") or []
        ]
        conversation.append({**message, "tool_calls": calls} if calls else dict(message))
    return _completed(body, respond(conversation))


def _completed(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
            }
            for call in reply["tool_calls"]
        ]
    finish = "tool_calls" if reply.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL_NAME,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send_error(404)
            return
        data = json.dumps(completion(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None


def serve(port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start on 127.0.0.1 (``port`` 0: any free one) in a daemon thread; the server and its
    ``base_url`` (ending in ``/v1``)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"serving the incident model at http://127.0.0.1:{port}/v1 (Ctrl-C stops)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
