"""The OpenAI Agents SDK's first hour from its traces: the support agent (its default Responses API
model, sync function tools) traced by OpenInference's instrumentor into the OTel SDK and sent by
the OTLP/HTTP exporter to ``agent-replay serve``, against the local fake server (fresh ids on every
response). The runs arrive with no outcome: scored, ``--all-failing`` picks exactly the run the
shipment outage failed; attributed with no code (``--llm openai`` asking the Responses API again,
``--tools recorded``), the report's model calls equal what the server answered with 4 workers.
Alone in a store of its own, the same run cannot be told with ``--tools recorded`` (the tracking
call is not varied), and with ``--tools simulate`` (the model playing the tools) the failure is
traced to the tracking tool."""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from examples import fake_model_server
from examples.fake_model_server import FakeModelServer, Request
from otel_replay.resamplers._simulate import INSTRUCTIONS
from tests.cli_helpers import invoke, ok

try:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    from tests.scenarios import agents_sdk_agent
    from tests.scenarios.served import traced_to_serve
except ImportError:  # the test extra has them; under CI their absence is a failure
    if os.environ.get("CI"):
        raise
    pytest.skip("the OpenAI Agents SDK or its instrumentor is not installed (the test extra)",
                allow_module_level=True)  # fmt: skip

FAKE = fake_model_server
QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"
SUCCESS = "qualifies for a refund"
DOWN = [False, True, False, False]  # the second run meets the shipment outage


#: The world's sampling: one generator for the module, so each test meets the outages it always met.
DRAWS = random.Random(5)
PLAYED: list[str] = []  # the tools the model was asked to play


def _world(request: Request) -> dict[str, Any]:
    """The support agent; asked to play a tool (``--tools simulate``), a model that knows the shop
    would answer as it does, and samples: the shipment service is sometimes down, as it was in the
    incident."""
    if request.body.get("instructions") != INSTRUCTIONS:
        return FAKE.support(request)
    question = json.loads(request.body["input"])
    PLAYED.append(question["tool"])
    down = request.draws.random() < 0.3
    return {"content": json.dumps(_play(question, down))}


def _play(question: dict[str, Any], down: bool) -> Any:
    tool = question["tool"]
    if tool == "lookup_order":
        return dict(FAKE.ORDER)
    if tool == "track_shipment":
        return {"error": "shipment service unavailable (HTTP 503)"} if down else FAKE.SHIPMENT
    return [FAKE.POLICIES[0]]


@pytest.fixture
def models() -> Iterator[FakeModelServer]:
    PLAYED.clear()
    with FakeModelServer(_world, draws=DRAWS, handler=FAKE.EchoingHandler) as serving:
        yield serving


@pytest.fixture
def server(models: FakeModelServer) -> str:
    return models.base_url


def _traced(store: Path, url: str) -> list[str]:
    """The agent run once per entry of `DOWN`, traced by OpenInference and sent over OTLP/HTTP to
    ``serve``; the stored runs' ids in the order they ran."""
    answers, ids = traced_to_serve(
        store,
        OpenAIAgentsInstrumentor(),
        "support-agents",
        lambda: [
            asyncio.run(agents_sdk_agent.support(QUESTION, url, traced=True, shipping_down=down))
            for down in DOWN
        ],
    )
    assert answers == [FAKE.APOLOGY if down else FAKE.FINAL_ANSWER for down in DOWN]
    return ids


def test_traced_runs_are_scored_and_the_outage_attributed_with_no_code(
    server: str, models: FakeModelServer, store_path: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    ids = _traced(store_path, server)
    assert len(ids) == len(DOWN)
    listed = json.loads(ok(invoke(runner, store_path, "list", "--json")).stdout)
    assert {row["outcome"] for row in listed} == {None}  # traces arrive with no outcome
    assert {row["replayability"] for row in listed} == {"replayable"}  # Responses API included
    ok(invoke(runner, store_path, "score", "--all", "--success-if", SUCCESS))
    failed = json.loads(
        ok(invoke(runner, store_path, "list", "--where", "failed", "--json")).stdout
    )
    assert [row["id"] for row in failed] == [ids[1]]
    no_code = ["--llm", "openai", "--llm-base-url", server, "--tools", "recorded"]
    rows = json.loads(
        ok(invoke(runner, store_path, "attribute", "--all-failing", *no_code,
                  "--success-if", SUCCESS, "--json")).stdout
    )  # fmt: skip
    assert [(r["id"], r["verdict"], r["step"]) for r in rows] == [
        (ids[1], "culprit", "tool track_shipment")
    ]
    # what was paid: every request the server answered is in the report, with 4 workers
    before = len(models.paths)
    report = json.loads(
        ok(invoke(runner, store_path, "attribute", ids[1], *no_code, "--success-if", SUCCESS,
                  "--workers", "4", "--seed", "1", "--json")).stdout
    )  # fmt: skip
    assert report["cost"]["model_calls"] == len(models.paths[before:]) > 0
    assert set(models.paths[before:]) == {
        "/v1/responses"
    }  # asked again in the API it was recorded in

    # the same incident alone in a store of its own
    lone, alone = tmp_path / "incident.steps.jsonl", tmp_path / "lone.db"
    ok(invoke(runner, store_path, "export", ids[1], "--out", str(lone)))
    ok(invoke(runner, alone, "import", str(lone)))
    held = json.loads(
        ok(invoke(runner, alone, "attribute", ids[1], *no_code, "--success-if", SUCCESS,
                  "--json")).stdout
    )  # fmt: skip
    assert held["verdict"] == "cannot-tell", held["explanation"]
    tracking = next(s for s in held["steps"] if s["name"] == "track_shipment")
    assert tracking["varied"] is False and "no effect" not in json.dumps(tracking)
    assert "only this run's result for track_shipment" in tracking["variation"]
    simulated = ["--llm", "openai", "--llm-base-url", server, "--tools", "simulate"]
    played = json.loads(
        ok(invoke(runner, alone, "attribute", ids[1], *simulated, "--success-if", SUCCESS,
                  "--seed", "2", "--json")).stdout
    )  # fmt: skip
    assert played["verdict"] == "culprit", played["explanation"]
    assert played["steps"][played["point_of_commitment"]]["name"] == "track_shipment"
    assert played["evidence"]["simulated"]["calls"] == len(PLAYED) > 0
