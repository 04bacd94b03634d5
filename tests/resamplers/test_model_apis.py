"""``--llm`` re-asks a model turn in the API it was recorded in: chat completions and the Responses
API with ``--llm openai``, the Messages API with ``--llm anthropic``. Runs recorded through the real
SDKs (`otel_replay.instrument`) are forked with a tool's result changed and no agent code: the
built-in chat loop goes on, and each later model turn is asked of the local fake server at the
endpoint of its API (the server's log says which), which follows the changed result."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import otel_replay
from examples import fake_model_server
from examples.fake_model_server import FakeModelServer
from otel_replay.messages import assistant_message
from otel_replay.replay import record, uninstrument
from otel_replay.resamplers import ChatModelOptions
from otel_replay.resamplers._anthropic import messages_request
from otel_replay.resamplers._openai import response_items
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.replay.test_instrument import claude_agent, responses_agent, support_agent

FAKE = fake_model_server
QUESTION = "Where is order A-1001, and is a late delivery refundable?"


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    """The fake server; its ``paths`` say where each request went."""
    try:
        with FakeModelServer(handler=FAKE.EchoingHandler) as serving:
            yield serving
    finally:
        uninstrument()


CASES: list[tuple[str, Callable[..., Any], str, str, str]] = [
    # (SDK instrumented, agent, --llm, its base URL's suffix, the endpoint a re-asked turn posts to)
    ("openai", support_agent, "openai", "/v1", "/v1/chat/completions"),
    ("openai", responses_agent, "openai", "/v1", "/v1/responses"),
    ("anthropic", claude_agent, "anthropic", "", "/v1/messages"),
]


@pytest.mark.parametrize(
    ("sdk", "agent", "llm", "suffix", "endpoint"), CASES, ids=["chat", "responses", "messages"]
)
def test_a_fork_re_asks_each_turn_in_its_own_api(
    server: FakeModelServer,
    store_path: Path,
    sdk: str,
    agent: Callable[..., Any],
    llm: str,
    suffix: str,
    endpoint: str,
) -> None:
    url = server.url
    otel_replay.instrument(sdk)
    recording = record(agent, arguments={"question": QUESTION, "base_url": url})
    assert recording.answer == FAKE.FINAL_ANSWER
    uninstrument()
    with Store.open(store_path) as db:
        db.put(recording.trajectory)
    before = len(server.paths)
    failed = json.dumps({"error": "order service unavailable (HTTP 503)"})
    result = ok(
        invoke(CliRunner(), store_path, "fork", recording.trajectory.id, "--at", "1",
               "--observe", failed, "--llm", llm, "--llm-base-url", url + suffix, "--json")
    )  # fmt: skip
    fork_id = json.loads(result.stdout)["id"]
    with Store.open(store_path, read_only=True) as db:
        fork = db.get(fork_id)
    # the model, asked again after the tool failed, apologises (the fake model's rule)
    assert len(fork.steps) == 3
    assert assistant_message(fork.steps[2].output)["content"] == FAKE.APOLOGY
    assert server.paths[before:] == [endpoint]  # one turn re-asked, in the API it was recorded in


def test_a_conversation_in_the_stores_shape_becomes_each_apis_request() -> None:
    said = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where is A-1001?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "name": "lookup_order", "arguments": {"order_id": "A-1001"}},
                {"id": "c2", "name": "search_policies", "arguments": {"query": "late"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
        {"role": "tool", "tool_call_id": "c2", "content": "Refunds: late is refunded."},
    ]
    system, turns = messages_request(said)
    assert system == "Be brief."
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]  # alternating
    assert [b["type"] for b in turns[1]["content"]] == ["tool_use", "tool_use"]
    assert turns[1]["content"][0]["input"] == {"order_id": "A-1001"}
    assert [b["tool_use_id"] for b in turns[2]["content"]] == ["c1", "c2"]  # one user turn
    instructions, items = response_items(said)
    assert instructions == "Be brief."
    assert [i.get("type", i.get("role")) for i in items] == [
        "user", "function_call", "function_call", "function_call_output",
        "function_call_output",
    ]  # fmt: skip
    assert json.loads(items[1]["arguments"]) == {"order_id": "A-1001"}
    assert items[3] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": '{"status": "shipped"}',
    }


def test_llm_anthropic_without_a_server_is_said_before_anything_runs(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with Store.open(store_path):
        pass
    line = one_line_error(
        invoke(CliRunner(), store_path, "fork", "anything", "--at", "0", "--observe", "1",
               "--llm", "anthropic")
    )  # fmt: skip
    assert "--llm anthropic" in line and "ANTHROPIC_BASE_URL" in line
    assert ChatModelOptions(source="anthropic").flags()[:2] == ["--llm", "anthropic"]  # type: ignore[arg-type]
