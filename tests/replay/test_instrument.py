"""Recording agents not written for agent-replay (issue 12, part 2): the real ``openai`` client, sync
and async, plain and streaming, against the local fake model server of ``scripts/frameworks``; the
run replays from the record with the server gone."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from openai import AsyncOpenAI, OpenAI
from typer.testing import CliRunner

import otel_replay
from otel_replay.errors import NonDeterminismError
from otel_replay.hashing import canonical_json
from otel_replay.model import StepKind
from otel_replay.replay import record, replay, uninstrument
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT

SECRET = "sk-test-do-not-store"


def _fake_models() -> ModuleType:
    path = ROOT / "scripts" / "frameworks" / "fake_models.py"
    spec = importlib.util.spec_from_file_location("fake_models_for_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FAKE = _fake_models()
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} of the order",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in ("lookup_order", "track_shipment", "search_policies")
]


@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return dict(FAKE.ORDER)


@otel_replay.tool
def track_shipment(tracking_id: str) -> dict[str, Any]:
    return dict(FAKE.SHIPMENT)


@otel_replay.tool(name="search_policies")
def policies(query: str) -> list[str]:
    return list(FAKE.POLICIES)


RUN_TOOL = {"lookup_order": lookup_order, "track_shipment": track_shipment}
RUN_TOOL["search_policies"] = policies


def support_agent(question: str, base_url: str, stream: bool = False) -> str | None:
    """An agent as people write it: the OpenAI client, a tool loop, no agent-replay in sight."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        if stream:
            content, calls = "", {}
            for chunk in client.chat.completions.create(
                model="fake-model", messages=messages, tools=TOOLS, stream=True
            ):
                delta = chunk.choices[0].delta if chunk.choices else None
                content += (delta.content or "") if delta else ""
                for call in (delta.tool_calls or []) if delta else []:
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    slot["name"] += call.function.name or ""
                    slot["arguments"] += call.function.arguments or ""
            tool_calls = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls.values()
            ]
            messages.append(
                {"role": "assistant", "content": content or None, "tool_calls": tool_calls or None}
            )
        else:
            response = client.chat.completions.create(
                model="fake-model", messages=messages, tools=TOOLS
            )
            message = response.choices[0].message
            messages.append(message)  # the SDK's own object, as agents do
            content = message.content or ""
            tool_calls = [c.model_dump() for c in message.tool_calls or []]
        if not tool_calls:
            return content
        for call in tool_calls:
            result = RUN_TOOL[call["function"]["name"]](**json.loads(call["function"]["arguments"]))
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )


async def async_support_agent(question: str, base_url: str) -> str | None:
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        response = await client.chat.completions.create(
            model="fake-model", messages=messages, tools=TOOLS
        )
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            await client.close()
            return message.content
        for call in message.tool_calls:
            result = RUN_TOOL[call.function.name](**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


class Server:
    """The fake model server, which a test may stop before it replays."""

    def __init__(self) -> None:
        self.running, self.url = FAKE.serve()

    def stop(self) -> None:
        if self.running is not None:
            self.running.shutdown()
            self.running.server_close()
            self.running = None


@pytest.fixture
def server() -> Iterator[Server]:
    otel_replay.instrument("openai")
    started = Server()
    try:
        yield started
    finally:
        started.stop()
        uninstrument()


QUESTION = "Where is order A-1001, and is a late delivery refundable?"


@pytest.mark.parametrize(
    ("agent", "stream"),
    [(support_agent, False), (support_agent, True), (async_support_agent, False)],
    ids=["sync", "stream", "async"],
)
def test_an_unmodified_agent_records_and_replays_with_no_server(
    server: Server, agent: Any, stream: bool
) -> None:
    arguments: dict[str, Any] = {"question": QUESTION, "base_url": server.url}
    if stream:
        arguments["stream"] = True
    recording = record(agent, arguments=arguments)
    assert recording.error is None and recording.answer == FAKE.FINAL_ANSWER
    kinds = [(s.kind, s.name) for s in recording.trajectory.steps]
    assert kinds == [
        (StepKind.LLM, "fake-model"),
        (StepKind.TOOL, "lookup_order"),
        (StepKind.LLM, "fake-model"),
        (StepKind.TOOL, "track_shipment"),
        (StepKind.LLM, "fake-model"),
        (StepKind.TOOL, "search_policies"),
        (StepKind.LLM, "fake-model"),
    ]
    first = recording.trajectory.steps[0]
    assert first.inputs["messages"] == [{"role": "user", "content": QUESTION}]
    assert first.inputs["tools"] == TOOLS
    assert SECRET.encode() not in canonical_json([s.inputs for s in recording.trajectory.steps])
    if stream:  # the assembled message, with the chunks it came in
        last = recording.trajectory.steps[-1].output
        assert last["choices"][0]["message"]["content"] == FAKE.FINAL_ANSWER
        assert len(last["chunks"]) > 1
    server.stop()  # the replay needs no network: every model call is served from the record
    again = replay(recording.trajectory, agent)
    assert again.identical, again


def test_a_call_the_record_does_not_hold_is_named(server: Server) -> None:
    recording = record(support_agent, arguments={"question": QUESTION, "base_url": server.url})
    changed = recording.trajectory.steps[0].inputs["messages"][0]["content"]
    assert changed == QUESTION

    def other_question(question: str, base_url: str) -> str | None:
        return support_agent("Where is order A-1001?", base_url)

    server.stop()
    result = replay(recording.trajectory, other_question)
    assert isinstance(result.nondeterminism, NonDeterminismError)
    assert "llm 'fake-model'" in str(result.nondeterminism)


def test_outside_a_recording_the_sdk_runs_untouched(server: Server) -> None:
    client = OpenAI(base_url=f"{server.url}/v1", api_key=SECRET)
    response = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS
    )
    assert response.choices[0].message.tool_calls[0].function.name == "lookup_order"
    assert lookup_order(order_id="A-1001") == FAKE.ORDER  # a decorated tool: just the function


def test_the_commands_record_and_replay_an_unmodified_agent(
    server: Server, runner: CliRunner, store_path: Path
) -> None:
    agent = ["--agent", "tests.replay.test_instrument:support_agent", "--instrument", "openai"]
    arguments = orjson.dumps({"question": QUESTION, "base_url": server.url}).decode()
    recorded = orjson.loads(
        ok(invoke(runner, store_path, "record", *agent, "--input", arguments, "--json")).stdout
    )
    run_id = recorded["id"]
    assert recorded["steps"] == 7 and recorded["error"] is None
    server.stop()
    replayed = invoke(runner, store_path, "replay", run_id, *agent, "--json")
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert orjson.loads(replayed.stdout)["identical"] is True
    wrong = invoke(runner, store_path, "record", *agent[:2], "--instrument", "cohere")
    assert wrong.exit_code == 1 and "cannot instrument 'cohere'" in wrong.stderr
