"""A stand-in judge for ``--judge`` behind a local OpenAI-compatible endpoint, to try it with no key and
no network: it reads the agent's final answer from the judge's prompt and says yes when the answer
names the deploy that broke checkout in the incident example (v841), no otherwise, with its reason,
as the JSON object the judge asks for. A real judge is a real model (``--llm-base-url`` of any
OpenAI-compatible server, ``--judge-model``); this one only shows the path. Standard library only.

    python -m examples.incident.judge_server --port 8001     # then --llm-base-url http://127.0.0.1:8001/v1
"""

from __future__ import annotations

import argparse
import contextlib
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Where the judge's prompt puts the answer (`otel_replay.resamplers.Judge`).
ANSWER_HEADING = "The agent's final answer:\n"


def verdict(prompt: str) -> dict[str, str]:
    """Yes when the final answer in ``prompt`` names v841."""
    answer = prompt.split(ANSWER_HEADING, 1)[-1]
    if "v841" in answer:
        return {
            "verdict": "yes",
            "reason": "the answer names deploy v841, the one that broke checkout",
        }
    return {"verdict": "no", "reason": "the answer does not name deploy v841"}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send_error(404)
            return
        prompt = next(
            (
                m.get("content") or ""
                for m in reversed(body.get("messages", []))
                if m.get("role") == "user"
            ),
            "",
        )
        message = {"role": "assistant", "content": json.dumps(verdict(str(prompt)))}
        data = json.dumps(
            {
                "id": "chatcmpl-judge",
                "object": "chat.completion",
                "created": 1773497000,
                "model": body.get("model") or "rule-judge",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8001)
    port = parser.parse_args().port
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"serving a stand-in judge at http://127.0.0.1:{port}/v1 (Ctrl-C stops)", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
