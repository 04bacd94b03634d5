"""Agents for the resume tests: six tool steps, each counting the times its operation really ran.

``counting`` raises before step ``$AGENT_REPLAY_TEST_CRASH_AT`` when it is set; ``waiting`` stops
before its sixth step until ``$AGENT_REPLAY_TEST_WAIT`` names a file that exists (a test kills it
there). The settings are environment variables, and the counts are read as ``resume_agents.RAN``,
because ``--agent`` loads the module again (a reload makes its globals anew)."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from otel_replay.replay import AgentContext

RAN: Counter[int] = Counter()  # how many times each step's operation ran live
CRASH_AT = "AGENT_REPLAY_TEST_CRASH_AT"


def _step(ctx: AgentContext, number: int) -> Any:
    def produce() -> dict[str, int]:
        RAN[number] += 1
        return {"page": number, "total": number * 10}

    return ctx.tool("read_page", produce=produce, page=number)


def counting(ctx: AgentContext, pages: int = 6) -> int:
    total = 0
    for number in range(pages):
        if os.environ.get(CRASH_AT) == str(number):
            raise RuntimeError(f"the disk filled up before page {number}")
        total += _step(ctx, number)["total"]
    return total


def waiting(ctx: AgentContext, pages: int = 6) -> int:
    total = 0
    for number in range(pages):
        gate = os.environ.get("AGENT_REPLAY_TEST_WAIT")
        while number == 5 and gate and not Path(gate).exists():
            time.sleep(0.05)
        total += _step(ctx, number)["total"]
    return total


def outcome(trajectory: Any) -> float:
    return 1.0 if trajectory.metadata.get("answer") == 150 else 0.0
