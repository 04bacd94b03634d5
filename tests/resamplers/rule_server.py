"""A local OpenAI-compatible ``/v1/chat/completions`` server for tests: each request is answered by a
rule on its body (the assistant message to send back), on a loopback port, every request kept."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Rule = Callable[[dict[str, Any]], dict[str, Any]]


class RuleServer:
    """Answers ``POST /v1/chat/completions`` with ``rule(body)``, a fresh response id each time."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with server._lock:
                    server.requests.append(body)
                    number = len(server.requests)
                message = server.rule(body)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                data = json.dumps(
                    {
                        "id": f"chatcmpl-{number}",
                        "object": "chat.completion",
                        "created": number,
                        "model": body.get("model", "m"),
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"


@contextmanager
def serving(rule: Rule) -> Iterator[RuleServer]:
    """A `RuleServer` running while the block runs."""
    server = RuleServer(rule)
    thread = threading.Thread(target=server.http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()
