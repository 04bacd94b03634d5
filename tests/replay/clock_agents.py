"""Agents that read the environment through the context (`ctx.now`, `ctx.uuid`, `ctx.random`) for
tests/replay/test_environment.py: loadable by spec, so the command line records and forks them."""

from __future__ import annotations

import os
from typing import Any

from otel_replay import Trajectory
from otel_replay.replay import AgentContext

CRASH = "AGENT_REPLAY_TEST_CLOCK_CRASH"  # set: the agent raises after its second tool call


def ticket(ctx: AgentContext, queue: str = "billing") -> dict[str, Any]:
    """Stamps a ticket with the time and a fresh id, looks the queue up, files the ticket: the
    clock and the id are read before and after the lookups, so a fork between them sees both."""
    opened = ctx.now()
    ticket_id = ctx.uuid()
    jitter = ctx.random()
    owner = ctx.tool("owner", produce=lambda: {"owner": "ana"}, queue=queue)
    load = ctx.tool("load", produce=lambda: 3, owner=owner["owner"])
    if os.environ.get(CRASH):
        raise RuntimeError("the ticket system went away")
    filed = ctx.now()
    receipt = ctx.uuid()
    ctx.tool("file", produce=lambda: "filed", owner=owner["owner"], load=load)
    return {
        "opened": opened,
        "id": ticket_id,
        "jitter": jitter,
        "filed": filed,
        "receipt": receipt,
        "owner": owner["owner"],
    }


async def aticket(ctx: AgentContext, queue: str = "billing") -> dict[str, Any]:
    """`ticket`, awaited: the async twins."""

    async def owner() -> dict[str, str]:
        return {"owner": "ana"}

    opened = await ctx.anow()
    ticket_id = await ctx.auuid()
    jitter = await ctx.arandom()
    found = await ctx.atool("owner", produce=owner, queue=queue)
    filed = await ctx.anow()
    return {"opened": opened, "id": ticket_id, "jitter": jitter, "filed": filed, **found}


def coin(ctx: AgentContext) -> str:
    """Stamps the time, flips a coin (the decision), stamps an id: fails on tails."""
    ctx.now()
    side = ctx.tool("flip", produce=lambda: "heads" if ctx.rng.random() < 0.5 else "tails")
    ctx.uuid()
    return str(side)


def heads(trajectory: Trajectory) -> float:
    return 1.0 if trajectory.metadata.get("answer") == "heads" else 0.0
