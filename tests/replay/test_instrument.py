"""Recording agents not written for agent-replay (issue 12, part 2): the real ``openai`` client, sync
and async, plain and streaming, against the local fake model server of ``scripts/frameworks``; the
run replays from the record with the server gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson
import pytest
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel
from typer.testing import CliRunner

import otel_replay
from examples import fake_model_server
from examples.fake_model_server import FakeModelServer
from otel_replay.errors import NonDeterminismError
from otel_replay.hashing import canonical_json
from otel_replay.messages import assistant_message, conversation
from otel_replay.model import StepKind
from otel_replay.replay import record, replay, uninstrument
from otel_replay.report._timeline import run_data
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT

SECRET = "sk-test-do-not-store"


FAKE = fake_model_server
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


def _tool_results(calls: Any) -> list[dict[str, Any]]:
    """The tool messages answering a model turn's calls (the SDK's own call objects)."""
    return [
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": json.dumps(
                RUN_TOOL[call.function.name](**json.loads(call.function.arguments))
            ),
        }
        for call in calls
    ]


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
        messages.extend(_tool_results(message.tool_calls))


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    """The fake model server, which a test may stop before it replays."""
    otel_replay.instrument("openai")
    started = FakeModelServer()
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
    server: FakeModelServer, agent: Any, stream: bool
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


def test_a_call_the_record_does_not_hold_is_named(server: FakeModelServer) -> None:
    recording = record(support_agent, arguments={"question": QUESTION, "base_url": server.url})
    changed = recording.trajectory.steps[0].inputs["messages"][0]["content"]
    assert changed == QUESTION

    def other_question(question: str, base_url: str) -> str | None:
        return support_agent("Where is order A-1001?", base_url)

    server.stop()
    result = replay(recording.trajectory, other_question)
    assert isinstance(result.nondeterminism, NonDeterminismError)
    assert "llm 'fake-model'" in str(result.nondeterminism)


def test_outside_a_recording_the_sdk_runs_untouched(server: FakeModelServer) -> None:
    client = OpenAI(base_url=f"{server.url}/v1", api_key=SECRET)
    response = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS
    )
    assert response.choices[0].message.tool_calls[0].function.name == "lookup_order"
    assert lookup_order(order_id="A-1001") == FAKE.ORDER  # a decorated tool: just the function


SUPPORT = ["--agent", "tests.replay.test_instrument:support_agent", "--instrument", "openai"]


def _record_support(
    runner: CliRunner, store: Path, server: FakeModelServer, question: str = QUESTION, *options: str
) -> dict[str, Any]:
    """``agent-replay record`` of the unmodified support agent against the fake server."""
    arguments = orjson.dumps({"question": question, "base_url": server.url}).decode()
    command = ["record", *SUPPORT, *options, "--input", arguments, "--json"]
    recorded: dict[str, Any] = orjson.loads(ok(invoke(runner, store, *command)).stdout)
    return recorded


def test_the_commands_record_and_replay_an_unmodified_agent(
    server: FakeModelServer, runner: CliRunner, store_path: Path
) -> None:
    agent = SUPPORT
    recorded = _record_support(runner, store_path, server)
    run_id = recorded["id"]
    assert recorded["steps"] == 7 and recorded["error"] is None
    server.stop()
    replayed = invoke(runner, store_path, "replay", run_id, *agent, "--json")
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert orjson.loads(replayed.stdout)["identical"] is True
    wrong = invoke(runner, store_path, "record", *agent[:2], "--instrument", "cohere")
    assert wrong.exit_code == 1 and "cannot instrument 'cohere'" in wrong.stderr


ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": "of the order",
        "input_schema": {"type": "object"},
    }
    for t in TOOLS
]


def claude_agent(question: str, base_url: str, stream: bool = False) -> str:
    """The same agent on the Anthropic SDK (sync; streamed events gathered into blocks)."""
    client = anthropic.Anthropic(base_url=base_url, api_key=SECRET)
    try:
        return _claude_turns(client, question, stream)
    finally:
        # its connections closed now, not whenever a garbage collection finds them (an unclosed
        # socket's warning, raised during a later test's import, fails that test)
        client.close()


def _claude_turns(
    client: anthropic.Anthropic, question: str, stream: bool, raw: bool = False
) -> str:
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        request = {"model": "fake-claude", "max_tokens": 512, "messages": messages}
        if stream:
            blocks: list[dict[str, Any]] = []
            partial: dict[int, str] = {}
            events = (
                client.messages.with_raw_response.create(
                    **request, tools=ANTHROPIC_TOOLS, stream=True
                ).parse()  # LangChain's ChatAnthropic streams so
                if raw
                else client.messages.create(**request, tools=ANTHROPIC_TOOLS, stream=True)
            )
            for event in events:
                if event.type == "content_block_start":
                    blocks.append(event.content_block.model_dump(exclude_none=True))
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    blocks[event.index]["text"] = (
                        blocks[event.index].get("text", "") + event.delta.text
                    )
                elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
            for index, text in partial.items():
                blocks[index]["input"] = json.loads(text or "{}")
        else:
            response = client.messages.create(**request, tools=ANTHROPIC_TOOLS)
            blocks = [block.model_dump(exclude_none=True) for block in response.content]
        messages.append({"role": "assistant", "content": blocks})
        uses = [b for b in blocks if b["type"] == "tool_use"]
        if not uses:
            return "".join(b.get("text", "") for b in blocks)
        results = [
            {
                "type": "tool_result",
                "tool_use_id": b["id"],
                "content": json.dumps(RUN_TOOL[b["name"]](**b["input"])),
            }
            for b in uses
        ]
        messages.append({"role": "user", "content": results})


async def async_claude_agent(question: str, base_url: str) -> str:
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        response = await client.messages.create(
            model="fake-claude", max_tokens=512, messages=messages, tools=ANTHROPIC_TOOLS
        )
        messages.append({"role": "assistant", "content": response.content})  # SDK objects
        uses = [b for b in response.content if b.type == "tool_use"]
        if not uses:
            await client.close()
            return "".join(b.text for b in response.content if b.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": b.id,
                        "content": json.dumps(RUN_TOOL[b.name](**b.input)),
                    }
                    for b in uses
                ],
            }
        )


def responses_agent(question: str, base_url: str) -> str:
    """The OpenAI Responses API: input items, function calls and their outputs."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    items: list[Any] = [{"role": "user", "content": question}]
    tools = [
        {"type": "function", "name": t["function"]["name"], "parameters": {"type": "object"}}
        for t in TOOLS
    ]
    while True:
        response = client.responses.create(model="fake-model", input=items, tools=tools)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        for call in calls:
            items.append(call.model_dump(exclude_none=True))
            result = RUN_TOOL[call.name](**json.loads(call.arguments))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps(result),
                }
            )


@pytest.mark.parametrize(
    ("sdk", "agent", "stream"),
    [
        ("anthropic", claude_agent, False),
        ("anthropic", claude_agent, True),
        ("anthropic", async_claude_agent, False),
        ("openai", responses_agent, False),
    ],
    ids=["anthropic", "anthropic-stream", "anthropic-async", "openai-responses"],
)
def test_other_model_apis_record_and_replay_with_no_server(
    server: FakeModelServer, sdk: str, agent: Any, stream: bool
) -> None:
    otel_replay.instrument(sdk)
    arguments: dict[str, Any] = {"question": QUESTION, "base_url": server.url}
    if stream:
        arguments["stream"] = True
    recording = record(agent, arguments=arguments)
    assert recording.error is None and recording.answer == FAKE.FINAL_ANSWER
    steps = recording.trajectory.steps
    assert [s.kind for s in steps] == [StepKind.LLM, StepKind.TOOL] * 3 + [StepKind.LLM]
    assert SECRET.encode() not in canonical_json([s.inputs for s in steps])
    if stream:
        assert steps[-1].output["content"][0]["text"] == FAKE.FINAL_ANSWER
        assert steps[-1].output["chunks"][0]["type"] == "message_start"
    server.stop()
    again = replay(recording.trajectory, agent)
    assert again.identical, again


def test_redacted_text_never_reaches_the_store_and_the_run_still_replays(
    server: FakeModelServer, runner: CliRunner, store_path: Path
) -> None:
    question = f"{QUESTION} My account token is tok-8812734."
    agent = SUPPORT
    recorded = _record_support(runner, store_path, server, question, "--redact", r"tok-\d+")
    for file in store_path.parent.glob(f"{store_path.name}*"):  # the store, its WAL
        assert b"tok-8812734" not in file.read_bytes(), file
    exported = ok(invoke(runner, store_path, "export", recorded["id"], "--format", "jsonl")).stdout
    assert "tok-8812734" not in exported and "[REDACTED]" in exported
    server.stop()
    replayed = invoke(runner, store_path, "replay", recorded["id"], *agent, "--json")
    assert replayed.exit_code == 0 and orjson.loads(replayed.stdout)["identical"] is True
    bad = invoke(runner, store_path, "record", *agent, "--redact", "tok-(")
    assert bad.exit_code == 1 and "is not a regular expression" in bad.stderr


def test_attribute_re_runs_an_instrumented_agent(
    server: FakeModelServer, runner: CliRunner, store_path: Path
) -> None:
    agent = SUPPORT
    recorded = _record_support(runner, store_path, server)
    planned = orjson.loads(
        ok(
            invoke(runner, store_path, "attribute", recorded["id"], *agent, "--dry-run", "--json")
        ).stdout
    )
    assert planned["driver"] == "agent:tests.replay.test_instrument:support_agent"
    assert planned["worst_calls"] > 0


def outcome(trajectory: Any) -> float:
    """The support agent succeeded when its answer gives the shipment's new date."""
    return 1.0 if "2026-12-04" in str(trajectory.metadata.get("answer")) else 0.0


@pytest.mark.scenario  # an exported test run by a pytest of its own
def test_a_run_becomes_a_regression_test(
    server: FakeModelServer, runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    agent = SUPPORT
    run_id = _record_support(runner, store_path, server)["id"]
    identical, passing = tmp_path / "test_incident.py", tmp_path / "test_fixed.py"

    def export(out: Path, *options: str) -> None:
        command = ["export", run_id, "--format", "pytest", *agent, *options, "--out", str(out)]
        ok(invoke(runner, store_path, *command))

    export(identical)
    export(passing, "--verifier", "tests.replay.test_instrument:outcome", "--expect", "pass")
    assert identical.with_suffix(".jsonl").exists()

    def pytest(test: Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert pytest(passing).returncode == 0  # the model live: the server answers
    server.stop()
    result = pytest(identical)  # no store, no network: the recording beside it
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    missing = invoke(
        runner, store_path, "export", run_id, "--format", "pytest", "--out", str(identical)
    )
    assert missing.exit_code == 1 and "--agent MODULE:FUNCTION" in missing.stderr


CASSETTE_TEST = """
import os

import pytest

from tests.replay.test_instrument import QUESTION, support_agent


@pytest.mark.agent_replay(cassette="support.jsonl", instrument=("openai",))
def test_support(agent_replay):
    answer = agent_replay.run(support_agent, question=QUESTION, base_url=os.environ["FAKE_MODELS"])
    assert "2026-12-04" in answer
    print("recorded" if agent_replay.recorded else "replayed")
"""


@pytest.mark.scenario  # an exported test run by a pytest of its own
def test_the_pytest_plugin_records_once_and_replays_after(
    server: FakeModelServer, tmp_path: Path
) -> None:
    test = tmp_path / "test_cassette.py"
    test.write_text(CASSETTE_TEST)

    def pytest(*options: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(test)]
        environment = {**os.environ, "FAKE_MODELS": server.url}
        return subprocess.run(
            [*command, *options],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
        )

    first = pytest()
    assert first.returncode == 0 and "recorded" in first.stdout, first.stdout + first.stderr
    assert (tmp_path / "cassettes" / "support.jsonl").exists()
    server.stop()
    again = pytest()  # no server: the cassette answers
    assert again.returncode == 0 and "replayed" in again.stdout, again.stdout + again.stderr
    (tmp_path / "cassettes" / "support.jsonl").unlink()
    none = pytest("--agent-replay-mode", "none")
    assert none.returncode == 1 and "no cassette" in none.stdout


async def awaiting_agent(ctx: Any, question: str) -> str:
    """An async agent written for agent-replay: ``await ctx.allm`` / ``ctx.atool``."""
    calls: list[str] = []

    async def model() -> dict[str, Any]:
        calls.append("model")
        return {"role": "assistant", "content": f"looking up {question}"}

    async def lookup() -> dict[str, Any]:
        calls.append("tool")
        return dict(FAKE.ORDER)

    turn = await ctx.allm(
        "planner", produce=model, messages=[{"role": "user", "content": question}]
    )
    order = await ctx.atool("lookup_order", produce=lookup, order_id="A-1001")
    return f"{turn['content']}: {order['status']} ({len(calls)} live calls)"


def test_an_async_agent_awaits_its_steps_live_and_nothing_on_replay() -> None:
    recording = record(awaiting_agent, arguments={"question": "A-1001"})
    assert recording.answer == "looking up A-1001: shipped (2 live calls)"
    assert [s.kind for s in recording.trajectory.steps] == [StepKind.LLM, StepKind.TOOL]
    again = replay(recording.trajectory, awaiting_agent)
    assert again.answer == "looking up A-1001: shipped (0 live calls)"  # both served, not awaited
    assert not again.identical and again.ending is not None  # the answer says how it ran
    assert again.nondeterminism is None and again.diff.identical


def claude_helper_agent(question: str, base_url: str) -> str:
    """The Anthropic SDK's streaming helper: ``with client.messages.stream(...) as stream``."""
    client = anthropic.Anthropic(base_url=base_url, api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        with client.messages.stream(
            model="fake-claude", max_tokens=512, messages=messages, tools=ANTHROPIC_TOOLS
        ) as stream:
            text = "".join(stream.text_stream)
            message = stream.get_final_message()
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            return text
        messages.append({"role": "user", "content": _results(uses)})


async def async_claude_helper_agent(question: str, base_url: str) -> str:
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        async with client.messages.stream(
            model="fake-claude", max_tokens=512, messages=messages, tools=ANTHROPIC_TOOLS
        ) as stream:
            message = await stream.get_final_message()
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            await client.close()
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append({"role": "user", "content": _results(uses)})


def _results(uses: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "type": "tool_result",
            "tool_use_id": b.id,
            "content": json.dumps(RUN_TOOL[b.name](**b.input)),
        }
        for b in uses
    ]


@pytest.mark.parametrize(
    "agent", [claude_helper_agent, async_claude_helper_agent], ids=["sync", "async"]
)
def test_the_anthropic_stream_helper_records_and_replays(
    server: FakeModelServer, agent: Any
) -> None:
    otel_replay.instrument("anthropic")
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url})
    assert recording.error is None and recording.answer == FAKE.FINAL_ANSWER
    assert len(recording.trajectory.steps) == 7
    server.stop()
    assert replay(recording.trajectory, agent).identical


def chat_helper_agent(question: str, base_url: str) -> str | None:
    """OpenAI's streaming helper: ``with client.chat.completions.stream(...) as stream``."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        with client.chat.completions.stream(
            model="fake-model", messages=messages, tools=TOOLS
        ) as stream:
            for _ in stream:
                pass
            message = stream.get_final_completion().choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        if not message.tool_calls:
            return message.content
        messages.extend(_tool_results(message.tool_calls))


async def async_chat_helper_agent(question: str, base_url: str) -> str | None:
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        async with client.chat.completions.stream(
            model="fake-model", messages=messages, tools=TOOLS
        ) as stream:
            completion = await stream.get_final_completion()
        message = completion.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        if not message.tool_calls:
            await client.close()
            return message.content
        messages.extend(_tool_results(message.tool_calls))


@pytest.mark.parametrize(
    "agent", [chat_helper_agent, async_chat_helper_agent], ids=["sync", "async"]
)
def test_the_openai_stream_helper_records_and_replays(server: FakeModelServer, agent: Any) -> None:
    otel_replay.instrument("openai")
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url})
    assert recording.error is None and recording.answer == FAKE.FINAL_ANSWER, recording.error
    server.stop()
    assert replay(recording.trajectory, agent).identical


# --- OpenAI's structured-output and Responses streaming helpers ---------------------------------------


class LookupOrder(BaseModel):
    order_id: str


class TrackShipment(BaseModel):
    tracking_id: str


class SearchPolicies(BaseModel):
    query: str


class Answer(BaseModel):
    answer: str


PARSED_TOOLS = [
    openai.pydantic_function_tool(LookupOrder, name="lookup_order"),
    openai.pydantic_function_tool(TrackShipment, name="track_shipment"),
    openai.pydantic_function_tool(SearchPolicies, name="search_policies"),
]
RESPONSES_TOOLS = [
    {"type": "function", "name": t["function"]["name"], "parameters": {"type": "object"}}
    for t in TOOLS
]


def _parsed_turn(message: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A parsed chat turn as the agent sends it back, and its tools' results: the arguments are
    the SDK's parsed objects (`LookupOrder` …), so a test sees the SDK's parser ran."""
    calls = message.tool_calls or []
    sent = {
        "role": "assistant",
        "content": message.content,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": c.function.model_dump(include={"name", "arguments"}),
            }
            for c in calls
        ]
        or None,
    }
    results = [
        {
            "role": "tool",
            "tool_call_id": c.id,
            "content": json.dumps(
                RUN_TOOL[c.function.name](**c.function.parsed_arguments.model_dump())
            ),
        }
        for c in calls
    ]
    return sent, results


def chat_parse_agent(question: str, base_url: str) -> str:
    """``client.chat.completions.parse``: strict tools and a response format, both parsed."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        completion = client.chat.completions.parse(
            model="fake-model", messages=messages, tools=PARSED_TOOLS, response_format=Answer
        )
        message = completion.choices[0].message
        if not message.tool_calls:
            assert isinstance(message.parsed, Answer)
            return message.parsed.answer
        sent, results = _parsed_turn(message)
        messages += [sent, *results]


async def async_chat_parse_agent(question: str, base_url: str) -> str:
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    while True:
        completion = await client.chat.completions.parse(
            model="fake-model", messages=messages, tools=PARSED_TOOLS, response_format=Answer
        )
        message = completion.choices[0].message
        if not message.tool_calls:
            await client.close()
            assert isinstance(message.parsed, Answer)
            return message.parsed.answer
        sent, results = _parsed_turn(message)
        messages += [sent, *results]


def _responses_results(response: Any, items: list[Any]) -> bool:
    """Append a response's function calls and their results to ``items``; whether there were any."""
    calls = [item for item in response.output if item.type == "function_call"]
    for call in calls:
        parsed = getattr(call, "parsed_arguments", None)
        arguments = parsed.model_dump() if parsed is not None else json.loads(call.arguments)
        items.append(
            call.model_dump(exclude_none=True, include={"type", "call_id", "name", "arguments"})
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": json.dumps(RUN_TOOL[call.name](**arguments)),
            }
        )
    return bool(calls)


def responses_parse_agent(question: str, base_url: str) -> str:
    """``client.responses.parse``: the answer as ``output_parsed``, the calls' parsed arguments."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    items: list[Any] = [{"role": "user", "content": question}]
    while True:
        response = client.responses.parse(
            model="fake-model", input=items, tools=PARSED_TOOLS, text_format=Answer
        )
        if not _responses_results(response, items):
            assert isinstance(response.output_parsed, Answer)
            return response.output_parsed.answer


async def async_responses_parse_agent(question: str, base_url: str) -> str:
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    items: list[Any] = [{"role": "user", "content": question}]
    while True:
        response = await client.responses.parse(
            model="fake-model", input=items, tools=PARSED_TOOLS, text_format=Answer
        )
        if not _responses_results(response, items):
            await client.close()
            assert isinstance(response.output_parsed, Answer)
            return response.output_parsed.answer


def responses_stream_agent(question: str, base_url: str) -> str:
    """``with client.responses.stream(...) as stream``: text deltas read, the final response kept."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    items: list[Any] = [{"role": "user", "content": question}]
    while True:
        with client.responses.stream(
            model="fake-model", input=items, tools=RESPONSES_TOOLS
        ) as stream:
            text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
            response = stream.get_final_response()
        if not _responses_results(response, items):
            assert text == response.output_text
            return text


async def async_responses_stream_agent(question: str, base_url: str) -> str:
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    items: list[Any] = [{"role": "user", "content": question}]
    while True:
        async with client.responses.stream(
            model="fake-model", input=items, tools=RESPONSES_TOOLS
        ) as stream:
            response = await stream.get_final_response()
        if not _responses_results(response, items):
            await client.close()
            return response.output_text


def responses_events_agent(question: str, base_url: str) -> str:
    """``client.responses.create(stream=True)``: the raw events, the response the last one holds."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    items: list[Any] = [{"role": "user", "content": question}]
    while True:
        events = list(
            client.responses.create(
                model="fake-model", input=items, tools=RESPONSES_TOOLS, stream=True
            )
        )
        response = events[-1].response
        if not _responses_results(response, items):
            return response.output_text


@pytest.mark.parametrize(
    "agent",
    [
        chat_parse_agent,
        async_chat_parse_agent,
        responses_parse_agent,
        async_responses_parse_agent,
        responses_stream_agent,
        async_responses_stream_agent,
        responses_events_agent,
    ],
    ids=[
        "chat-parse",
        "chat-parse-async",
        "responses-parse",
        "responses-parse-async",
        "responses-stream",
        "responses-stream-async",
        "responses-create-stream",
    ],
)
def test_openai_parse_and_responses_stream_helpers_record_and_replay(
    server: FakeModelServer, agent: Any
) -> None:
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url})
    assert recording.error is None, recording.error
    assert recording.answer == FAKE.FINAL_ANSWER
    steps = recording.trajectory.steps
    assert [s.kind for s in steps] == [StepKind.LLM, StepKind.TOOL] * 3 + [StepKind.LLM]
    assert SECRET.encode() not in canonical_json([s.inputs for s in steps])
    last = steps[-1].output
    if "parse" in agent.__name__:  # the response as the API sent it; the SDK parses it
        assert b'"parsed' not in canonical_json([s.output for s in steps])
        assert "Answer" in canonical_json(steps[-1].inputs).decode()  # the format asked for
    else:  # the events it came in, and the response they add up to
        assert last["chunks"][0]["type"] == "response.created"
        assert last["output"][0]["content"][0]["text"] == FAKE.FINAL_ANSWER
    server.stop()
    again = replay(recording.trajectory, agent)
    assert again.identical, again


def test_a_resample_functions_answer_reaches_the_agent_as_the_sdks_own_objects() -> None:
    """A model turn run again on edited inputs, or asked of a swapped-in model, is answered by the
    model's resample function in the importers' message shape; the agent still gets the SDK's
    objects (a chat completion, its stream, an anthropic Message), or one clear line."""
    from otel_replay.replay._sdk_shapes import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES

    answer = {
        "role": "assistant",
        "content": "Listing deploys.",
        "tool_calls": [{"id": "call_1", "name": "list_deploys", "arguments": {"service": "x"}}],
        "model": "gpt-strong",
    }
    completion = OPENAI_CHAT.completion(answer)
    message = completion.choices[0].message
    assert completion.model == "gpt-strong" and completion.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls[0].function.name == "list_deploys"
    assert orjson.loads(message.tool_calls[0].function.arguments) == {"service": "x"}
    (chunk,) = OPENAI_CHAT.items(answer)
    assert chunk.choices[0].delta.content == "Listing deploys."
    assert chunk.choices[0].delta.tool_calls[0].index == 0
    anthropic = ANTHROPIC.completion(answer)
    text, call = anthropic.content
    assert text.text == "Listing deploys." and call.type == "tool_use"
    assert call.input == {"service": "x"} and anthropic.stop_reason == "tool_use"
    response = OPENAI_RESPONSES.completion(answer)
    assert response.output_text == "Listing deploys."
    assert response.output[1].call_id == "call_1" and response.output[1].name == "list_deploys"
    events = OPENAI_RESPONSES.items(answer)
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))


SWAPPED = json.dumps({"answer": "Answered by the swapped-in model."})


SDK_PATHS = pytest.mark.parametrize(
    ("sdk", "agent", "arguments"),
    [
        ("openai", support_agent, {}),
        ("openai", support_agent, {"stream": True}),
        ("openai", async_support_agent, {}),
        ("openai", chat_helper_agent, {}),
        ("openai", async_chat_helper_agent, {}),
        ("openai", chat_parse_agent, {}),
        ("openai", async_chat_parse_agent, {}),
        ("openai", responses_agent, {}),
        ("openai", responses_parse_agent, {}),
        ("openai", async_responses_parse_agent, {}),
        ("openai", responses_stream_agent, {}),
        ("openai", async_responses_stream_agent, {}),
        ("openai", responses_events_agent, {}),
        ("anthropic", claude_agent, {}),
        ("anthropic", claude_agent, {"stream": True}),
        ("anthropic", async_claude_agent, {}),
        ("anthropic", claude_helper_agent, {}),
        ("anthropic", async_claude_helper_agent, {}),
    ],
    ids=lambda value: getattr(value, "__name__", None) or ("stream" if value else "-"),
)


@SDK_PATHS
def test_every_sdk_path_takes_a_swapped_model_turn_answered_by_a_resample_function(
    server: FakeModelServer, sdk: str, agent: Any, arguments: dict[str, Any]
) -> None:
    """Record the agent, then fork its last model turn to another model, answered by a resample
    function with no network: whatever SDK method the agent calls (create, stream, a helper,
    parse, sync or async), it gets the answer as that method's own objects and returns it."""
    from otel_replay.replay import Intervention, fork
    from otel_replay.resamplers import Registry

    otel_replay.instrument(sdk)
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url, **arguments})
    assert recording.error is None, recording.error
    server.stop()
    asked: list[str] = []
    registry = Registry()
    registry.add_resampler(
        StepKind.LLM,
        lambda step, ctx: (
            asked.append(step.inputs["model"]) or {"role": "assistant", "content": SWAPPED}
        ),
    )
    last = len(recording.trajectory.steps) - 1
    forked = fork(
        recording.trajectory, last, Intervention.swap_model("other"), agent=agent, registry=registry
    )
    assert "agent_error" not in forked.metadata, forked.metadata["agent_error"]
    parsed = "parse" in agent.__name__  # the SDK parsed the JSON answer into the agent's class
    assert forked.metadata["answer"] == (json.loads(SWAPPED)["answer"] if parsed else SWAPPED)
    assert asked == ["other"] and len(forked.steps) == len(recording.trajectory.steps)


@SDK_PATHS
def test_every_sdk_path_records_a_run_read_like_an_imported_one(
    server: FakeModelServer, sdk: str, agent: Any, arguments: dict[str, Any]
) -> None:
    """A model turn is kept as the SDK returned it (so replay hands the agent that very response),
    and read in the store's message shape: each turn's tool calls are the tool steps that follow
    it, the run's answer is the last turn's text, a turn's request reads as the conversation
    so far, and the run is a tool-calling chat the chat loop can re-drive without the agent."""
    from otel_replay.replay._chat import chat_record

    otel_replay.instrument(sdk)
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url, **arguments})
    assert recording.error is None, recording.error
    run = recording.trajectory
    turns = [s for s in run.steps if s.kind is StepKind.LLM]
    assert all(assistant_message(t.output) is not t.output for t in turns)  # the SDK's own shape
    called: list[str] = []
    for turn in turns:
        reply = assistant_message(turn.output)
        assert reply is not None and reply["role"] == "assistant"
        for call in reply.get("tool_calls") or []:
            assert isinstance(call["arguments"], dict) and call["id"], call
            called.append(call["name"])
    assert called == [s.name for s in run.steps if s.kind is StepKind.TOOL]
    answer = run.final_answer
    assert answer is not None
    parsed = "parse" in agent.__name__  # the agent returns a field of the JSON answer
    assert (json.loads(answer)["answer"] if parsed else answer) == run.metadata["answer"]
    heard = conversation(turns[-1].inputs)  # the last turn's: the whole run before it
    assert heard[0] == {"role": "user", "content": QUESTION}
    asked = [c for m in heard if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [c["name"] for c in asked] == called
    answered = [m["tool_call_id"] for m in heard if m["role"] == "tool"]
    assert answered == [c["id"] for c in asked]  # each result answers its call, in order
    loop = chat_record(run)
    assert loop is not None and loop.turns == tuple(turns)
    page = run_data(run)  # the HTML report and the viewer show each turn's request as a chat
    shown = page["steps"][turns[-1].index]
    assert len(shown["in_messages"]) == len(heard)
    assert "input" not in (shown.get("in_rest", {}).get("parameters") or {})  # shown once


@pytest.mark.parametrize("agent", [responses_agent, claude_agent], ids=lambda a: a.__name__)
def test_the_built_in_model_resampler_answers_a_turn_of_any_sdk(
    server: FakeModelServer, agent: Any
) -> None:
    """`--llm openai` asks a chat-completions server, whichever API the agent called: the last turn
    of a Responses or an Anthropic agent, swapped, is asked with the run's whole conversation (the
    fake model answers only when it sees every tool's result) and handed back in the agent's SDK."""
    from otel_replay.replay import Intervention, fork
    from otel_replay.resamplers import ChatModelOptions, Registry
    from otel_replay.resamplers._openai import OpenAIChatModel

    otel_replay.instrument("anthropic" if "claude" in agent.__name__ else "openai")
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url})
    assert recording.error is None, recording.error
    model = OpenAIChatModel(ChatModelOptions(base_url=f"{server.url}/v1", temperature=0))
    asked: list[int] = []

    def once(step: Any, ctx: Any) -> Any:  # a conversation lost would have the model loop
        asked.append(step.index)
        if len(asked) > 1:
            raise RuntimeError(f"the model was asked again at step {step.index}")
        return model(step, ctx)

    registry = Registry()
    registry.add_resampler(StepKind.LLM, once)
    last = len(recording.trajectory.steps) - 1
    try:
        forked = fork(
            recording.trajectory,
            last,
            Intervention.swap_model("fake-model"),
            agent=agent,
            registry=registry,
        )
    finally:
        model.close()
    assert "agent_error" not in forked.metadata, forked.metadata["agent_error"]
    assert forked.metadata["answer"] == recording.trajectory.metadata["answer"] == FAKE.FINAL_ANSWER
    assert forked.steps[last].output["model"] == "fake-model"  # the turn was asked again
    assert len(forked.steps) == len(recording.trajectory.steps)  # and answered, asking no tool


# --- with_raw_response: how LangChain's clients call both SDKs ------------------------------------


def raw_chat_agent(question: str, base_url: str) -> str | None:
    """Chat completions through ``with_raw_response`` (``langchain-openai`` calls so): the raw
    HTTP response, its headers read, parsed by the caller."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    try:
        while True:
            raw = client.chat.completions.with_raw_response.create(
                model="fake-model", messages=messages, tools=TOOLS
            )
            assert isinstance(dict(raw.headers), dict)
            message = raw.parse().choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content
            for call in message.tool_calls:
                result = RUN_TOOL[call.function.name](**json.loads(call.function.arguments))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
                )
    finally:
        client.close()


def raw_claude_agent(question: str, base_url: str) -> str:
    """Anthropic messages through ``with_raw_response`` (``langchain-anthropic`` calls so)."""
    client = anthropic.Anthropic(base_url=base_url, api_key=SECRET)
    messages: list[Any] = [{"role": "user", "content": question}]
    try:
        while True:
            raw = client.messages.with_raw_response.create(
                model="fake-claude", max_tokens=512, messages=messages, tools=ANTHROPIC_TOOLS
            )
            assert isinstance(dict(raw.headers), dict)
            blocks = [block.model_dump(exclude_none=True) for block in raw.parse().content]
            messages.append({"role": "assistant", "content": blocks})
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if not uses:
                return "".join(b.get("text", "") for b in blocks)
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": b["id"],
                    "content": json.dumps(RUN_TOOL[b["name"]](**b["input"])),
                }
                for b in uses
            ]
            messages.append({"role": "user", "content": results})
    finally:
        client.close()


def raw_claude_stream_agent(question: str, base_url: str) -> str:
    """Anthropic messages streamed through ``with_raw_response`` (``ChatAnthropic`` streaming)."""
    client = anthropic.Anthropic(base_url=base_url, api_key=SECRET)
    try:
        return _claude_turns(client, question, stream=True, raw=True)
    finally:
        client.close()


@pytest.mark.parametrize(
    ("sdk", "agent"),
    [
        ("openai", raw_chat_agent),
        ("anthropic", raw_claude_agent),
        ("anthropic", raw_claude_stream_agent),
    ],
)
def test_with_raw_response_records_the_parsed_response_and_replays(
    server: FakeModelServer, sdk: str, agent: Any
) -> None:
    otel_replay.instrument(sdk)
    recording = record(agent, arguments={"question": QUESTION, "base_url": server.url})
    assert recording.error is None and recording.answer == FAKE.FINAL_ANSWER
    steps = recording.trajectory.steps
    assert [s.kind for s in steps] == [StepKind.LLM, StepKind.TOOL] * 3 + [StepKind.LLM]
    assert assistant_message(steps[-1].output)["content"] == FAKE.FINAL_ANSWER
    server.stop()
    again = replay(recording.trajectory, agent)
    assert again.identical, again
