"""The one fake model server (`examples.fake_model_server`), as the real SDKs see it: each API answers
in its own shape with fresh ids, a model samples from a seeded generator, every request is kept and
counted, faults are served on demand and a tool result that answers nothing is refused. And no other
file of the tests, scripts, examples or benchmarks serves a model API of its own."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import openai
import pytest

from examples.fake_model_server import (
    FINAL_ANSWER,
    FakeModelServer,
    Request,
    replying,
    shop,
)
from tests.conftest import ROOT

TOOLS: list[Any] = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("lookup_order", "track_shipment", "search_policies")
]
QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"


def _openai(server: FakeModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-fake", max_retries=0)


def test_chat_completions_run_the_support_agent_with_fresh_ids_and_counts() -> None:
    with FakeModelServer() as server, _openai(server) as client:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        first = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        again = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        calls = [r.choices[0].message.tool_calls for r in (first, again)]
        assert [c[0].function.name for c in calls if c] == ["lookup_order", "lookup_order"]
        assert first.id != again.id and calls[0] != calls[1]  # same words, fresh ids
        assert again.created > first.created  # never the same second twice
        for _ in range(3):  # the three tools, each answered
            reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message)
            for call in message.tool_calls or []:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "{}"})
        final = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        assert final.choices[0].message.content == FINAL_ANSWER
        assert final.usage is not None and final.usage.total_tokens > 0
        assert server.served == {"model": 6, "embedding": 0}
        assert server.paths == ["/v1/chat/completions"] * 6 and len(server.requests) == 6


def test_the_responses_api_and_anthropic_messages_answer_in_their_own_shapes() -> None:
    with FakeModelServer() as server, _openai(server) as client:
        response = client.responses.create(
            model="m",
            input=QUESTION,
            tools=[{"type": "function", "name": "lookup_order", "parameters": {}, "strict": False}],
        )
        (call,) = response.output
        assert call.type == "function_call" and call.name == "lookup_order"
        claude = anthropic.Anthropic(base_url=server.url, api_key="sk-fake", max_retries=0)
        message = claude.messages.create(
            model="c",
            max_tokens=100,
            messages=[{"role": "user", "content": QUESTION}],
            tools=[{"name": "lookup_order", "input_schema": {"type": "object"}}],
        )
        (use,) = message.content
        assert use.type == "tool_use" and use.name == "lookup_order" and use.id.startswith("toolu_")
        assert server.paths == ["/v1/responses", "/v1/messages"]
        assert server.served["model"] == 2


def _sampling(request: Request) -> dict[str, Any]:
    return {"content": str(request.draws.random())}


def _drawn(server: FakeModelServer, times: int) -> list[str]:
    with _openai(server) as client:
        ask = [{"role": "user", "content": "draw"}]
        return [
            str(client.chat.completions.create(model="m", messages=ask).choices[0].message.content)
            for _ in range(times)
        ]


def test_a_sampling_model_draws_the_same_world_from_the_same_seed() -> None:
    with FakeModelServer(_sampling, seed=7) as one, FakeModelServer(_sampling, seed=7) as two:
        drawn = _drawn(one, 4)
        assert drawn == _drawn(two, 4) and len(set(drawn)) == 4
    with FakeModelServer(_sampling, seed=8) as other:
        assert _drawn(other, 4) != drawn


def test_faults_are_served_on_demand_and_still_counted() -> None:
    with FakeModelServer(shop) as server, _openai(server) as client:
        server.fail(status=503, message="busy")
        ask: list[Any] = [{"role": "user", "content": "order A-1001 arrived damaged"}]
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="m", messages=ask)
        assert caught.value.status_code == 503 and "busy" in str(caught.value)
        server.fail(status=200, body=b"<html>not json</html>")
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps({"model": "m", "messages": ask}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answered:
            assert answered.read() == b"<html>not json</html>"
        reply = client.chat.completions.create(model="m", messages=ask)  # the faults are spent
        (call,) = reply.choices[0].message.tool_calls or []
        assert call.function.name == "lookup_order"
        assert json.loads(call.function.arguments) == {"order_id": "A-1001"}
        assert server.served["model"] == len(server.requests) == 3


def test_a_tool_result_that_answers_no_call_is_refused_as_a_real_server_does() -> None:
    with FakeModelServer() as server, _openai(server) as client:
        orphan = [
            {"role": "user", "content": QUESTION},
            {"role": "tool", "tool_call_id": "call_nowhere", "content": "{}"},
        ]
        with pytest.raises(openai.BadRequestError, match="answers no tool call"):
            client.chat.completions.create(model="m", messages=orphan)
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps(
                {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            ).encode(),
        )
        with FakeModelServer(
            replying(lambda body: {"role": "assistant", "content": "kept"})
        ) as rule:
            request.full_url = f"{rule.base_url}/chat/completions"
            with urllib.request.urlopen(request, timeout=10) as answered:
                body = json.loads(answered.read())
        assert body["choices"][0]["message"] == {"role": "assistant", "content": "kept"}
        assert "usage" not in body  # a rule's server reports no usage


def test_no_other_file_serves_a_model_api_of_its_own() -> None:
    """One fake model server: a file that handles HTTP and names a model route is the kit."""
    routes = ("chat/completions", "/v1/messages", ":generateContent", "/v1/responses")
    serving = sorted(
        str(path.relative_to(ROOT))
        for folder in ("tests", "scripts", "examples", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        if "BaseHTTPRequestHandler" in (text := path.read_text(encoding="utf-8"))
        and any(route in text for route in routes)
        and path.name != "test_fake_model_server.py"
    )
    assert serving == ["examples/fake_model_server.py"]
