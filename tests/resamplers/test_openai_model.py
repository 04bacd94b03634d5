"""``--llm openai``: the real ``openai`` client against the fake model server's
``/v1/chat/completions`` on loopback (`examples.fake_model_server`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, replying
from otel_replay import Registry, RolloutError, Step, StepKind, Trajectory
from otel_replay.attribution import AttributionConfig, Strategy, attribute
from otel_replay.resamplers import ChatModelOptions, RolloutContext
from otel_replay.resamplers._openai import OpenAIChatModel
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import SAMPLES

ANSWER = {"role": "assistant", "content": "The deploy v841 broke checkout."}


@pytest.fixture
def script() -> list[dict[str, Any]]:
    """The assistant messages the fake model answers with, in order; `ANSWER` once they are out."""
    return []


@pytest.fixture
def fake(script: list[dict[str, Any]]) -> Iterator[FakeModelServer]:
    with FakeModelServer(replying(lambda body: script.pop(0) if script else ANSWER)) as server:
        yield server


@pytest.fixture
def models() -> Iterator[list[OpenAIChatModel]]:
    """Models made by a test, closed after it (their clients keep connections open)."""
    made: list[OpenAIChatModel] = []
    yield made
    for model in made:
        model.close()


OPENING = [{"role": "system", "content": "Investigate."}, {"role": "user", "content": "Why?"}]
CALL = {"id": "call_1", "name": "list_deploys", "arguments": {"service": "checkout"}}
TOOLS = [{"name": "list_deploys", "description": "Deploys", "parameters": {"type": "object"}}]


def _run() -> Trajectory:
    turn = {"role": "assistant", "tool_calls": [CALL]}
    result = {"role": "tool", "tool_call_id": "call_1", "content": "[]"}
    inputs = {"model": "m", "tools": TOOLS, "parameters": {"temperature": 0.2, "max_tokens": 50}}
    return Trajectory.build(
        "run",
        [
            Step(StepKind.LLM, "m", {**inputs, "messages": OPENING}, turn),
            Step(StepKind.TOOL, "list_deploys", {"arguments": CALL["arguments"]}, []),
            Step(StepKind.LLM, "m", {**inputs, "messages": [*OPENING, turn, result]}, ANSWER),
        ],
    )


def _model(models: list[OpenAIChatModel], **options: Any) -> OpenAIChatModel:
    model = OpenAIChatModel(ChatModelOptions(**options))
    models.append(model)
    return model


def test_the_request_carries_this_rollouts_conversation(
    fake: FakeModelServer, models: list[OpenAIChatModel]
) -> None:
    run = _run()
    model = _model(models, base_url=fake.base_url)
    changed = run.steps[1].with_result([{"version": "v841"}], run.steps[1].status, None)
    history = [run.steps[0], changed]
    output = model(run.steps[2], RolloutContext(1, history, run, None))
    (request,) = fake.requests
    assert request["model"] == "m" and request["temperature"] == 1.0 and request["max_tokens"] == 50
    assert request["tools"] == [{"type": "function", "function": TOOLS[0]}]
    assert request["messages"] == [
        *OPENING,
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_deploys", "arguments": '{"service": "checkout"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '[{"version":"v841"}]'},
    ]
    assert output == {**ANSWER, "finish_reason": "stop", "model": "m"}  # the model that answered


def test_an_unchanged_run_so_far_is_served_its_recorded_messages(
    fake: FakeModelServer, models: list[OpenAIChatModel]
) -> None:
    run = _run()
    model = _model(models, base_url=fake.base_url, model="other")
    model(run.steps[2], RolloutContext(1, list(run.steps[:2]), run, None))
    (request,) = fake.requests
    assert request["model"] == "other"
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "tool"]


def test_tool_calls_come_back_in_the_importers_shape(
    fake: FakeModelServer, script: list[dict[str, Any]], models: list[OpenAIChatModel]
) -> None:
    run = _run()
    reply = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "search_logs", "arguments": '{"query": "error"}'},
            }
        ],
    }
    script.append(reply)
    output = _model(models, base_url=fake.base_url)(run.steps[0], RolloutContext(1, [], run, None))
    assert output == {
        "role": "assistant",
        "tool_calls": [{"id": "call_9", "name": "search_logs", "arguments": {"query": "error"}}],
        "finish_reason": "tool_calls",
        "model": "m",
    }


def test_rate_limits_and_server_errors_are_retried(
    fake: FakeModelServer, models: list[OpenAIChatModel]
) -> None:
    run = _run()
    fake.fail(status=429, message="slow down")
    fake.fail(status=503, message="busy")
    output = _model(models, base_url=fake.base_url)(run.steps[0], RolloutContext(1, [], run, None))
    assert len(fake.requests) == 3 and output["content"] == ANSWER["content"]


def test_a_refused_request_stops_the_run_naming_the_step(
    fake: FakeModelServer, models: list[OpenAIChatModel]
) -> None:
    run = _run()
    fake.fail(status=400, message="unknown model 'm'")
    registry = Registry()
    registry.add_resampler("llm", _model(models, base_url=fake.base_url))
    registry.set_verifier(lambda t: 0.0)
    with pytest.raises(RolloutError) as caught:
        attribute(run, registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=1))
    message = str(caught.value)
    assert "step 0 (llm 'm')" in message and "answered 400" in message
    assert "unknown model" in message and "\n" not in message


def test_the_cli_asks_the_model_and_warns_of_temperature_zero(
    fake: FakeModelServer, runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    common = ["attribute", "ef2843ff", "--llm", "openai", "--llm-base-url", fake.base_url]
    common += ["--success-if", "v841", "--tools", "recorded", "--rollouts", "3"]
    result = ok(invoke(runner, store_path, *common, "--llm-temperature", "0"))
    assert "warning: --llm-temperature 0" in result.stderr
    assert fake.requests and all(r["temperature"] == 0 for r in fake.requests)
    fake.fail(status=400, message="no such model")
    line = one_line_error(invoke(runner, store_path, *common))
    assert "answered 400: no such model" in line and "step 0 (llm" in line
