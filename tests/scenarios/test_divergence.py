"""Where a passing and a failing run part (issue 23, part 1): the runs are recorded against a model
server that answers every request with fresh ids, so the only thing between them is the order
service's 503 at the lookup, and that is where the first divergence must be, not at the first model
call (which both runs made alike, with other ids)."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

import otel_replay
from examples.fake_model_server import FakeModelServer
from otel_replay import StepKind
from otel_replay.replay import diff, record, replay
from otel_replay.store import Store
from tests.cli_helpers import ok
from tests.scenarios import openai_agent, shop
from tests.scenarios.order_service import OrderService
from tests.scenarios.runs import Agent, agent_replay, passing_and_failing
from tests.scenarios.runs import record as record_run


def test_the_first_divergence_is_the_failed_lookup(
    runner: CliRunner, store_path: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> None:
    passing, failing = passing_and_failing(runner, store_path, agent, models, orders)
    found = orjson.loads(
        ok(agent_replay(runner, store_path, "diff", failing, passing, "--json")).stdout
    )
    assert found["first_divergence"] == 1, found["differences"]
    assert found["common_prefix"] == 1 and found["change"] == "observation changed"
    assert found["left_step"]["name"] == found["right_step"]["name"] == "lookup_order"
    assert found["left_step"]["output"] == {"error": "order service unavailable (503)"}
    assert found["right_step"]["output"]["status"] == "delivered"
    text = ok(agent_replay(runner, store_path, "diff", failing, passing)).stdout
    assert "steps 0..0 identical; first divergence at step 1 (output): observation changed" in text
    assert "has steps 3..4: tool get_refund_policy, llm" in text  # what only the passing run did


def test_two_recordings_of_the_same_run_are_identical_but_for_their_ids(
    runner: CliRunner, store_path: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> None:
    first, second = (record_run(runner, store_path, agent, models)["id"] for _ in range(2))
    with Store.open(store_path) as db:
        a, b = db.get(first), db.get(second)
    ids = {s.output["id"] for run in (a, b) for s in run.steps if s.kind is StepKind.LLM}
    assert len(ids) == 6  # every response had an id of its own: the runs differ in their bytes
    same = diff(a, b)
    assert same.identical, (same.common, same.differences)  # and in nothing else
    said = ok(agent_replay(runner, store_path, "diff", first, second)).stdout
    assert said.startswith("identical: 5 steps"), said


def test_from_python_a_recording_replays_with_the_servers_gone(
    models: FakeModelServer, orders: OrderService
) -> None:
    otel_replay.instrument("openai")
    arguments = {"question": shop.QUESTION, "base_url": models.base_url}
    recording = record(openai_agent.main, arguments=arguments, outcome=shop.outcome)
    assert recording.error is None and recording.trajectory.outcome == 1.0
    assert shop.SUCCESS in recording.answer
    models.stop()
    orders.stop()
    again = replay(recording.trajectory, openai_agent.main)
    assert again.identical, again.nondeterminism or again.ending or again.diff


def test_from_python_a_replay_asking_the_model_anew_matches_the_record_but_for_its_ids(
    models: FakeModelServer, orders: OrderService
) -> None:
    """Each live model turn comes back with ids of its own, which the later turns' conversations
    carry: the record still holds those calls (the same conversation, the ids renamed throughout)."""
    otel_replay.instrument("openai")
    arguments = {"question": shop.QUESTION, "base_url": models.base_url}
    recording = record(openai_agent.main, arguments=arguments, outcome=shop.outcome)
    again = replay(recording.trajectory, openai_agent.main, live_kinds=(StepKind.LLM,))
    assert again.nondeterminism is None, again.nondeterminism
    assert again.identical, again.ending or (again.diff.common, again.diff.differences)
    assert len(models.requests) == 6  # three turns recorded, three asked again
