"""The branching-router cross-contamination regression.

A router agent's step-1 tool depends on step 0's output (``fetch_a`` or ``fetch_b``). Under every
coalition plan — any subset of the recorded steps held, the rest resampled — a replayed call may only
ever receive its own operation's output: recorded (when the cassette holds that very call) or live,
never the recorded output of the other branch's tool.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from otel_replay import Step, StepKind, Trajectory
from otel_replay.replay import Plan, record, run_agent
from otel_replay.replay._cassette import ReplayContext
from otel_replay.replay._live import agent_driver
from otel_replay.replay._plan import Action
from tests.replay.agents import QUESTION, router, router_registry

SEEDS = range(6)
DRIVER_ROLLOUTS = 4
VARIANTS = [
    pytest.param("name", False, id="fetch_a-vs-fetch_b"),
    pytest.param("name", True, id="fetch_a-vs-fetch_b-resampler"),
    pytest.param("argument", False, id="fetch-source-argument"),
    pytest.param("argument", True, id="fetch-source-argument-resampler"),
]


def _routes(trajectory: Trajectory) -> list[str]:
    return [s.output["route"] for s in trajectory.steps if s.name == "router"]


def _recorded(by: str, resampled: bool) -> Trajectory:
    """A recording whose two rounds took different routes (so both tools are on the cassette)."""
    arguments = {"question": QUESTION, "rounds": 2, "by": by, "resampled": resampled}
    for seed in range(100):
        trajectory = record(
            router, arguments=arguments, seed=seed, registry=router_registry()
        ).trajectory
        if len(set(_routes(trajectory))) == 2:
            return trajectory
    raise AssertionError("no seed below 100 records both routes")


def _called_tool(step: Step) -> str:
    """The operation the agent asked for: ``fetch_a``/``fetch_b`` by name or by ``source``."""
    arguments = step.inputs["arguments"]
    return f"fetch_{arguments['source']}" if step.name == "fetch" else step.name


def _assert_no_foreign_output(step: Step, recorded: Sequence[Step]) -> None:
    """The step's output is its own tool's; any recorded output it equals is of the same call."""
    called = _called_tool(step)
    assert step.output["tool"] == called, f"{called} was served {step.output}"
    for origin in recorded:
        if origin.kind is StepKind.TOOL and origin.output == step.output:
            assert (origin.name, origin.inputs) == (step.name, step.inputs), (
                f"{called} was served the recorded output of step {origin.index} "
                f"({_called_tool(origin)})"
            )


def _coalitions(n_steps: int) -> list[Plan]:
    return [
        Plan.coalition(n_steps, kept, "k" + "".join(map(str, kept)))
        for size in range(n_steps + 1)
        for kept in itertools.combinations(range(n_steps), size)
    ]


@pytest.mark.parametrize(("by", "resampled"), VARIANTS)
def test_replay_context_never_serves_another_branch(by: str, resampled: bool) -> None:
    factual = _recorded(by, resampled)
    assert len(factual.steps) == 5  # router, fetch, router, fetch, answer
    plans = _coalitions(len(factual.steps))
    assert len(plans) == 2**5
    arguments = factual.metadata["input"]
    crossed = missed = 0
    for plan, seed in itertools.product(plans, SEEDS):
        ctx = ReplayContext(
            factual.steps, seed, plan=plan, registry=router_registry(), on_miss="resample"
        )
        _, error = run_agent(router, ctx, arguments)
        assert error is None, error
        for step, matched in zip(ctx.ledger.steps, ctx.ledger.matched, strict=True):
            if matched is not None:
                origin = factual.steps[matched]
                assert (origin.kind, origin.name, origin.inputs) == (
                    step.kind,
                    step.name,
                    step.inputs,
                ), f"plan {plan.identity}, seed {seed}: matched a different call"
                if plan.at(matched).action is Action.HOLD:
                    assert step.output == origin.output
            if step.kind is not StepKind.TOOL:
                continue
            _assert_no_foreign_output(step, factual.steps)
            if matched is None:
                missed += 1
            # the branch flipped: the record holds the other tool at this position
            at_position = factual.steps[step.index] if step.index < len(factual.steps) else None
            if at_position is not None and at_position.kind is StepKind.TOOL:
                crossed += _called_tool(at_position) != _called_tool(step)
        if all(x.action is Action.HOLD for x in plan.interventions):  # the recorded run
            assert [s.output for s in ctx.ledger.steps] == [s.output for s in factual.steps]
            assert ctx.ledger.diverged_at is None
    # the risky paths were exercised: calls the cassette did not hold, with the other tool on it
    assert missed > 0
    assert crossed > 0


@pytest.mark.parametrize(("by", "resampled"), VARIANTS)
def test_agent_driver_rollouts_never_serve_another_branch(by: str, resampled: bool) -> None:
    factual = _recorded(by, resampled)
    drive = agent_driver(factual, router, router_registry(), seed=11)
    routes_seen: set[tuple[str, ...]] = set()
    for plan in _coalitions(len(factual.steps)):
        for index in range(DRIVER_ROLLOUTS):
            rollout = drive(plan, index)
            assert rollout.trajectory.metadata.get("agent_error") is None
            for step in rollout.trajectory.steps:
                if step.kind is StepKind.TOOL:
                    _assert_no_foreign_output(step, factual.steps)
            routes_seen.add(tuple(_routes(rollout.trajectory)))
    assert len(routes_seen) > 2  # the rollouts really took other branches


def test_the_held_router_keeps_its_branch_and_its_recorded_tool_output() -> None:
    """Hold step 0, resample the rest: the recorded route is served, so the same tool is called."""
    factual = _recorded("name", False)
    plan = Plan.coalition(len(factual.steps), {0}, "router-only")
    for seed in (s for s in SEEDS if s != factual.metadata["seed"]):
        ctx = ReplayContext(factual.steps, seed, plan=plan, on_miss="resample")
        run_agent(router, ctx, factual.metadata["input"])
        assert ctx.ledger.steps[0].output == factual.steps[0].output
        assert ctx.ledger.steps[1].name == factual.steps[1].name
        assert ctx.ledger.matched[1] == 1  # matched, then resampled live
        assert ctx.ledger.steps[1].output != factual.steps[1].output


def _answer_of(arguments: dict[str, Any], seed: int) -> Any:
    return record(router, arguments=arguments, seed=seed, registry=router_registry()).answer


def test_router_recording_is_a_function_of_the_seed() -> None:
    arguments = {"rounds": 2, "by": "name"}
    assert _answer_of(arguments, 5) == _answer_of(arguments, 5)
    assert len({_answer_of(arguments, s) for s in range(12)}) > 1
