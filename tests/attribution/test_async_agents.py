"""Attributing an ``async def`` live agent (issue 12): its rollouts run ``concurrency`` at a time on
one event loop, and the report is the same for any concurrency, as it is for any number of threads."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import orjson

from otel_replay import Registry, Trajectory
from otel_replay.attribution import AttributionConfig, Strategy, attribute
from otel_replay.replay import AgentContext, record
from otel_replay.replay._live import agent_driver
from otel_replay.report import build_report

ACTIVE = {"now": 0, "most": 0}


async def deploy_hunter(ctx: AgentContext, flaky: float = 0.6) -> str:
    """Asks a flaky deploy API (awaited, 10 ms) and names the deploy it finds."""

    async def list_deploys() -> list[str]:
        ACTIVE["now"] += 1
        ACTIVE["most"] = max(ACTIVE["most"], ACTIVE["now"])
        await asyncio.sleep(0.01)
        ACTIVE["now"] -= 1
        return [] if ctx.rng.random() < flaky else ["v841"]

    plan = await ctx.allm("planner", produce=_plan, messages=[{"role": "user", "content": "why?"}])
    deploys = await ctx.atool("list_deploys", produce=list_deploys, service="checkout")
    return f"{plan['content']}: {deploys[0] if deploys else 'nothing deployed'}"


async def _plan() -> dict[str, Any]:
    return {"role": "assistant", "content": "checking deploys"}


def outcome(trajectory: Trajectory) -> float:
    return 1.0 if "v841" in str(trajectory.metadata.get("answer")) else 0.0


def _failed_run() -> Trajectory:
    for seed in range(50):
        recording = record(deploy_hunter, seed=seed, outcome=outcome)
        if recording.trajectory.outcome == 0.0:
            return recording.trajectory
    raise AssertionError("no failing seed")


def _report(run: Trajectory, concurrency: int) -> tuple[bytes, int]:
    registry = Registry()
    registry.set_verifier(outcome)
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=40, concurrency=concurrency)
    ACTIVE["most"] = 0
    driver = agent_driver(run, deploy_hunter, registry, config.seed)
    result = attribute(run, registry, config, driver=driver)
    report = build_report(result, dataclasses.replace(config, concurrency=1))
    report["cost"]["wall_seconds"] = 0.0
    report["config"]["driver"] = ""
    return orjson.dumps(report, option=orjson.OPT_SORT_KEYS), ACTIVE["most"]


def test_rollouts_share_one_loop_and_the_report_does_not_change() -> None:
    run = _failed_run()
    alone, most_alone = _report(run, 1)
    together, most_together = _report(run, 8)
    assert most_alone == 1 and most_together > 1  # awaited side by side on one loop
    assert alone == together
    assert orjson.loads(together)["point_of_commitment"] == 1  # the empty deploy list
