"""The runs the tests start from: each support agent as the command line names it, and the
commands that record it, run as from a shell."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner, Result

from examples.fake_model_server import FakeModelServer
from otel_replay.replay import uninstrument
from tests.cli_helpers import invoke, ok
from tests.scenarios import shop
from tests.scenarios.order_service import OrderService

HERE = Path(__file__).resolve().parent
VERIFIER = f"{HERE / 'shop.py'}:outcome"


@dataclass(frozen=True)
class Agent:
    """One of the support agents: the SDK it is written on and its specs on the command line."""

    sdk: str
    spec: str  # the agent as it is
    fixed: str  # the agent after the fix for the outage (`fixed_agents`)
    api_path: str  # what its client's base URL adds to the server's

    def base_url(self, models: FakeModelServer) -> str:
        return models.url + self.api_path

    def flags(self, spec: str | None = None) -> list[str]:
        return ["--agent", spec or self.spec, "--instrument", self.sdk]


AGENTS = {
    "openai": Agent(
        "openai",
        f"{HERE / 'openai_agent.py'}:main",
        f"{HERE / 'fixed_agents.py'}:openai_main",
        "/v1",
    ),
    "anthropic": Agent(
        "anthropic",
        f"{HERE / 'anthropic_agent.py'}:main",
        f"{HERE / 'fixed_agents.py'}:anthropic_main",
        "",
    ),
}


def agent_replay(runner: CliRunner, store: Path, *args: str) -> Result:
    """``agent-replay ARGS --store STORE`` as from a shell, where each command is a process of its
    own: nothing the command before instrumented is left instrumented."""
    uninstrument()
    return invoke(runner, store, *args)


def record(runner: CliRunner, store: Path, agent: Agent, models: FakeModelServer) -> dict[str, Any]:
    """``agent-replay record`` of ``agent`` asked the customer's question, scored by the verifier:
    the command's JSON summary."""
    given = orjson.dumps({"question": shop.QUESTION, "base_url": agent.base_url(models)}).decode()
    arguments = ["record", *agent.flags(), "--input", given, "--verifier", VERIFIER]
    summary: dict[str, Any] = orjson.loads(
        ok(agent_replay(runner, store, *arguments, "--json")).stdout
    )
    return summary


def passing_and_failing(
    runner: CliRunner, store: Path, agent: Agent, models: FakeModelServer, orders: OrderService
) -> tuple[str, str]:
    """Two recorded runs of ``agent``: one passing, one while the order service answered 503 (up
    again afterwards). Their ids."""
    passing = record(runner, store, agent, models)
    orders.down = True
    failing = record(runner, store, agent, models)
    orders.down = False
    assert (passing["outcome"], passing["steps"]) == (1.0, 5), passing
    assert (failing["outcome"], failing["steps"]) == (0.0, 3), failing
    return passing["id"], failing["id"]
