"""The incident investigator's rule-based model behind a local OpenAI-compatible endpoint.

``POST /v1/chat/completions`` (no streaming) answers with `examples.incident.model.respond`: the
same pure function of the conversation the other examples use, so an unmodified OpenAI-SDK agent
(`examples.incident.openai_app`) can run against it with no key and no network. Standard library only.
Like every real server it gives each response and each tool call a fresh id and stamps ``created``
with the clock: what the model says is a function of the conversation, its ids are not.

    python -m examples.incident.openai_server --port 8000     # then base_url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .model import MODEL_NAME, respond


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """One chat completion: the OpenAI conversation in the model's own shape, its reply back."""
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
    reply = respond(conversation)
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
