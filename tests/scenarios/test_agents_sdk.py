"""The OpenAI Agents SDK recorded as it is, with `record --instrument openai`: its sync function
tools run on the SDK's worker threads, two at once in one turn, its model on the Responses API,
against a local server that gives fresh ids. Recording changes nothing the agent does: the same
answer as without agent-replay, every tool call a step, and the run replays identically."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from examples import fake_model_server
from examples.fake_model_server import FakeModelServer
from otel_replay.model import StepKind
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok

try:
    from tests.scenarios import agents_sdk_agent
except ImportError:  # the test extra has it; under CI its absence is a failure
    if os.environ.get("CI"):
        raise
    pytest.skip("the OpenAI Agents SDK is not installed (the test extra)", allow_module_level=True)

AGENT = f"{Path(agents_sdk_agent.__file__)}:support"
QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"


@pytest.fixture
def server() -> Iterator[str]:
    with FakeModelServer(handler=fake_model_server.EchoingHandler) as models:
        yield models.base_url


def _inputs(url: str, question: str = QUESTION) -> str:
    return json.dumps({"question": question, "base_url": url})


def _recorded(store: Path, url: str, question: str) -> Any:
    runner = CliRunner()
    result = ok(
        invoke(runner, store, "record", "--agent", AGENT, "--instrument", "openai",
               "--input", _inputs(url, question))
    )  # fmt: skip
    run_id = result.output.strip().splitlines()[-1]
    with Store.open(store, read_only=True) as db:
        return db.get(run_id)


@pytest.mark.parametrize("question", [QUESTION, fake_model_server.PARALLEL_QUESTION])
def test_recording_the_agents_sdk_changes_nothing_it_does(
    server: str, store_path: Path, question: str
) -> None:
    without = asyncio.run(agents_sdk_agent.support(question, server))
    agents_sdk_agent.TOOL_THREADS.clear()
    run = _recorded(store_path, server, question)
    assert run.metadata["answer"] == without == fake_model_server.FINAL_ANSWER
    assert "agent_error" not in run.metadata and "recorder_error" not in run.metadata
    tools = sorted(s.name for s in run.steps if s.kind is StepKind.TOOL)
    assert tools == ["lookup_order", "search_policies", "track_shipment"]
    assert all(s.status.value == "ok" for s in run.steps)
    assert any(name != "MainThread" for name in agents_sdk_agent.TOOL_THREADS)
    models = [s for s in run.steps if s.kind is StepKind.LLM]
    assert len(models) == (3 if question != QUESTION else 4)
    replayed = ok(invoke(CliRunner(), store_path, "replay", run.id))
    assert "identical" in replayed.output
    # its model calls are Responses API requests (input items, instructions): a conversation that
    # can be asked again, as a chat's messages are
    assert all("input" in s.inputs.get("parameters", s.inputs) for s in models)
    listed = ok(invoke(CliRunner(), store_path, "lint", run.id))
    assert "1 replayable" in listed.output and "no input messages" not in listed.output


def test_a_streamed_run_records_and_replays(server: str, store_path: Path) -> None:
    """``Runner.run_streamed`` asks through ``responses.with_streaming_response``: recorded, each
    turn is the response its events add up to; served on replay as a stream of those events."""
    without = asyncio.run(agents_sdk_agent.support_streamed(QUESTION, server))
    runner = CliRunner()
    result = ok(
        invoke(runner, store_path, "record", "--agent",
               f"{Path(agents_sdk_agent.__file__)}:support_streamed", "--instrument", "openai",
               "--input", _inputs(server))
    )  # fmt: skip
    run_id = result.output.strip().splitlines()[-1]
    with Store.open(store_path, read_only=True) as db:
        run = db.get(run_id)
    assert run.metadata["answer"] == without == fake_model_server.FINAL_ANSWER
    assert all(s.status.value == "ok" for s in run.steps)
    assert sorted(s.name for s in run.steps if s.kind is StepKind.TOOL) == [
        "lookup_order", "search_policies", "track_shipment",
    ]  # fmt: skip
    assert "identical" in ok(invoke(runner, store_path, "replay", run_id)).output
