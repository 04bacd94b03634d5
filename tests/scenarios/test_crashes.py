"""An agent that raised is said (issue 23, parts 3 and 4). With the model server down, a ``fork``
whose continuation must ask the model, and a ``replay`` whose model calls run live (``--live llm``),
exit 1 and say the agent raised the SDK's exception, as ``record`` does ("the agent raised …"), not
only in a cell of the diff table. And the record remembers which SDKs it instrumented: a ``replay``
without ``--instrument`` is the same replay, every call from the record, no server needed."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from typer.testing import CliRunner, Result

from examples.fake_model_server import FakeModelServer
from tests.scenarios.order_service import ORDERS, OrderService
from tests.scenarios.runs import Agent, agent_replay, passing_and_failing


def _raised(result: Result, exception: str) -> None:
    """Exit 1, and stderr says the agent raised ``exception``."""
    said = result.stdout + result.stderr
    assert result.exit_code == 1, said
    assert re.search(rf"raised\b.*\b{exception}\b", result.stderr), said


def test_a_fork_that_needs_the_model_server_down_exits_1_naming_the_exception(
    runner: CliRunner, store_path: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> None:
    _, failing = passing_and_failing(runner, store_path, agent, models, orders)
    models.stop()
    order = orjson.dumps(ORDERS["A-1001"]).decode()  # the lookup answered after all: ask the model
    forked = agent_replay(
        runner, store_path, "fork", failing, "--at", "1", "--observe", order, *agent.flags()
    )
    _raised(forked, "APIConnectionError")
    assert "step 2" in forked.stderr  # the model turn that could not be asked


def test_a_replay_asking_the_model_live_with_the_server_down_exits_1_naming_the_exception(
    runner: CliRunner, store_path: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> None:
    _, failing = passing_and_failing(runner, store_path, agent, models, orders)
    models.stop()
    replayed = agent_replay(runner, store_path, "replay", failing, *agent.flags(), "--live", "llm")
    _raised(replayed, "APIConnectionError")


def test_a_replay_without_repeating_instrument_is_the_same_replay(
    runner: CliRunner, store_path: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> None:
    passing, _ = passing_and_failing(runner, store_path, agent, models, orders)
    models.stop()  # nothing may need them: every call comes from the record
    orders.stop()
    remembered = agent_replay(runner, store_path, "replay", passing, "--agent", agent.spec)
    said = remembered.stdout + remembered.stderr
    assert remembered.exit_code == 0 and "identical (5 steps" in said, said
    told, again = (
        agent_replay(runner, store_path, "replay", passing, *flags, "--json")
        for flags in (agent.flags(), ["--agent", agent.spec])
    )
    assert told.exit_code == again.exit_code == 0
    assert orjson.loads(again.stdout) == orjson.loads(told.stdout)
    assert orjson.loads(told.stdout)["identical"] is True
