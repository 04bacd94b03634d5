"""The incident investigator's rule-based model behind a local OpenAI-compatible endpoint.

``POST /v1/chat/completions`` answers with `examples.incident.model.respond`: the same pure function
of the conversation the other examples use, so an unmodified OpenAI-SDK agent
(`examples.incident.openai_app`) can run against it with no key and no network. The server is the
one fake model server of the examples and tests (`examples.fake_model_server`); this module is the
model it serves. Like every real server it gives each response and each tool call a fresh id and
stamps ``created`` with the clock: what the model says is a function of the conversation, its ids
are not.

Asked to play one of the investigator's tools (``--tools simulate``: a question that gives the
tool's name, the call's arguments and the results it returned before), it answers as a model that
knows the world would, and samples as one does: the deploy API's answer is sometimes empty, as the
flaky deploy API of `examples.incident.tools` is (a draw per request, from one generator seeded when
this module is loaded, so a run of the docs sees the same world every time it is made serially).

    python -m examples.incident.openai_server --port 8000     # then base_url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
from typing import Any

from examples.fake_model_server import FakeModelServer, Request
from examples.fake_model_server import main as serve_until_stopped

from . import world
from .model import MODEL_NAME, respond

__all__ = ["MODEL_NAME", "answer", "play", "serve"]

_DRAWS = random.Random(0)  # the stand-in model's sampling


def play(question: dict[str, Any], draws: random.Random) -> Any:
    """A tool's result, played: the world's answer to the call, the deploy API's sometimes empty."""
    tool, arguments = question.get("tool"), question.get("arguments") or {}
    real = {
        "list_deploys": world.list_deploys,
        "query_metrics": world.query_metrics,
        "search_logs": world.search_logs,
    }.get(str(tool))
    if real is None:
        return {"error": f"no such tool: {tool}"}
    empty = draws.random() < world.EMPTY_DEPLOYS_RATE
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


def answer(request: Request) -> dict[str, Any]:
    """The model's reply to one chat completion: the OpenAI conversation in the model's own shape,
    its reply back (or, asked to play a tool, the tool's result as JSON text). It reports no token
    usage."""
    question = _played(request.body)
    if question is not None:
        return {"content": json.dumps(play(question, request.draws)), "usage": False}
    conversation = []
    for message in request.body.get("messages", []):
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
    calls = [
        {"name": c["name"], "arguments": c["arguments"]} for c in reply.get("tool_calls") or []
    ]
    # as a real server, fresh call ids rather than the ones the pure model makes
    return {
        "content": reply.get("content"),
        **({"tool_calls": calls} if calls else {}),
        "usage": False,
    }


def serve(port: int = 0) -> tuple[FakeModelServer, str]:
    """Start on 127.0.0.1 (``port`` 0: any free one) in a daemon thread; the server and its
    ``base_url`` (ending in ``/v1``)."""
    server = FakeModelServer(lambda request: answer(request), port=port, draws=_DRAWS)
    return server, server.base_url


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    serve_until_stopped(answer, parser.parse_args().port, "the incident model", draws=_DRAWS)
