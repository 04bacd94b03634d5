"""The rollout contract: whichever driver makes a rollout (the walk over the record, the chat loop,
a live agent under replay), a resample function is handed the same thing: the recorded step it
stands in for, with this rollout's inputs, and a context whose plan, factual run and random stream
mean the same; a call the record does not hold comes in its documented unrecorded form.

The agent here is a small support agent of its own (not the bundled incident example): a model
that, like a real server, answers with a fresh tool-call id on every response, and two tools, one
of which the recorded run never calls."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from otel_replay import Registry, RolloutContext, Step, StepFailed, StepKind, StepStatus
from otel_replay.importers import read_path
from otel_replay.model import Trajectory
from otel_replay.replay import Plan, StepError, record
from otel_replay.replay._chat import chat_driver
from otel_replay.replay._live import agent_driver
from otel_replay.replay._rollout import rollout
from otel_replay.resamplers._context import RolloutSeed
from otel_replay.resamplers._recorded import recorded_outcomes
from otel_replay.store import Store
from tests.conftest import ROOT

OPENING = [
    {"role": "system", "content": "You answer questions about orders."},
    {"role": "user", "content": "Can I get a refund for order A-7?"},
]
TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "parameters": {}}},
    {"type": "function", "function": {"name": "refund_policy", "parameters": {}}},
]


def support(ctx: Any) -> Any:
    """The agent: ask the model, run the tools it asks for, until it answers."""
    messages = list(OPENING)
    for _ in range(4):
        reply = ctx.llm("support-model", messages=messages, tools=TOOLS)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            try:
                result = ctx.tool(call["name"], **call["arguments"])
            except StepError as failure:
                result = {"error": str(failure)}
            content = result if isinstance(result, str) else json.dumps(result)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return None


def model(step: Step, ctx: RolloutContext) -> Any:
    """A rule-based model with a real server's habit: a fresh tool-call id on every response."""
    results = [m for m in step.inputs["messages"] if m.get("role") == "tool"]
    fresh = f"call_{ctx.rng.getrandbits(48):012x}"
    if not results:
        return _asks("lookup_order", {"order_id": "A-7"}, fresh)
    last = json.loads(results[-1]["content"])
    if last.get("status") == "delivered" and len(results) == 1:
        return _asks("refund_policy", {"order_id": "A-7"}, fresh)
    if last.get("refundable"):
        return {"role": "assistant", "content": "Yes: order A-7 is eligible for a refund."}
    return {"role": "assistant", "content": "Sorry, I could not find order A-7."}


def _asks(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    call = {"id": call_id, "name": name, "arguments": arguments}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def lookup_order(step: Step, ctx: RolloutContext) -> Any:
    raise StepFailed("503 from the order service")


def refund_policy(step: Step, ctx: RolloutContext) -> Any:
    return {"refundable": True, "days": 30}


def world() -> Registry:
    registry = Registry()
    registry.add_resampler("llm", model)
    registry.add_resampler("tool", lookup_order, "lookup_order")
    registry.add_resampler("tool", refund_policy, "refund_policy")
    return registry


@pytest.fixture(scope="module")
def failing() -> Trajectory:
    """The recorded run: the order service answered 503, so the agent never asked for the policy."""
    run = record(support, seed=3, registry=world()).trajectory
    assert [s.name for s in run.steps] == ["support-model", "lookup_order", "support-model"]
    assert run.steps[1].status is StepStatus.ERROR
    return run


class Spy:
    """A resample function that writes down what it was handed, then answers as recorded (so every
    driver stays on the record and later calls line up)."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.seen: list[dict[str, Any]] = []
        self.answers = answers or {}

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        self.seen.append(
            {
                "index": step.index,
                "call": (step.kind.value, step.name),
                "output": step.output,
                "status": step.status.value,
                "recorded": ctx.recorded.index if ctx.recorded is not None else None,
                "plan": getattr(ctx.plan, "identity", None),
                "factual": ctx.factual.id,
                "history": [(s.name, s.output) for s in ctx.history],
                "draws": [ctx.rng.random() for _ in range(3)],
            }
        )
        if step.name in self.answers:
            return self.answers[step.name]
        if step.status is StepStatus.ERROR:
            raise StepFailed(step.error or "failed")
        return step.output


def _spied(spy: Spy) -> Registry:
    registry = Registry()
    registry.add_resampler("llm", spy)
    registry.add_resampler("tool", spy)
    return registry


def _under_every_driver(run: Trajectory, plan: Plan, answers: dict[str, Any] | None = None):
    seen = {}
    for driver in ("walk", "chat", "agent"):
        spy = Spy(answers)
        registry = _spied(spy)
        if driver == "walk":
            rollout(run, plan, registry, seed=11, index=2)
        elif driver == "chat":
            made = chat_driver(run, registry, seed=11)
            assert made is not None, "the recorded run is a tool-calling chat"
            made[0](plan, 2)
        else:
            agent_driver(run, support, registry, seed=11)(plan, 2)
        seen[driver] = spy.seen
    return seen


def test_a_resample_function_is_handed_the_same_under_the_walk_the_chat_loop_and_the_agent(
    failing: Trajectory,
) -> None:
    plan = Plan.ablate_from(len(failing.steps), 0)
    seen = _under_every_driver(failing, plan)
    assert seen["chat"] == seen["walk"]
    assert seen["agent"] == seen["walk"]
    first = seen["walk"][1]
    assert first["call"] == ("tool", "lookup_order")
    assert first["output"] is None and first["status"] == "error"  # the record's own result
    assert first["recorded"] == 1 and first["plan"] == plan.identity
    assert first["factual"] == failing.id
    # one stream per recorded step of this rollout, the same whoever made the rollout
    expected = RolloutSeed.of(11, plan, 2).of_step(1)
    stream = random.Random(expected)
    assert first["draws"] == [stream.random() for _ in range(3)]


def test_a_recorded_tool_result_reaches_the_function_under_the_chat_loop(
    failing: Trajectory,
) -> None:
    """A step's recorded output is what `--tools recorded` serves when it has nothing else to draw:
    the chat loop used to hand a stand-in with ``output=None``."""
    plan = Plan.ablate_from(len(failing.steps), 2)
    spy = Spy()
    made = chat_driver(failing, _spied(spy), seed=0)
    assert made is not None
    made[0](plan, 0)
    (turn,) = spy.seen
    assert turn["output"] == failing.steps[2].output
    assert turn["recorded"] == 2 and turn["factual"] == failing.id


def test_a_call_the_record_does_not_hold_comes_in_the_unrecorded_form(
    failing: Trajectory,
) -> None:
    """Forcing the lookup to succeed makes the model ask for the refund policy, which the recorded
    run never called: the function is told so (``ctx.recorded`` is None, no output, the call's
    position), the same way under the chat loop and the live agent."""
    plan = Plan.forced(len(failing.steps), 1, {"status": "delivered"})
    seen = {}
    for driver in ("chat", "agent"):
        spy = _Modelling()
        registry = _spied(spy)
        if driver == "chat":
            made = chat_driver(failing, registry, seed=11)
            assert made is not None
            made[0](plan, 0)
        else:
            agent_driver(failing, support, registry, seed=11)(plan, 0)
        seen[driver] = spy.seen
    assert seen["chat"] == seen["agent"]
    policy = [s for s in seen["agent"] if s["call"] == ("tool", "refund_policy")]
    assert len(policy) == 1
    (call,) = policy
    assert call["recorded"] is None and call["output"] is None and call["status"] == "ok"
    assert call["index"] == 3  # its position in this rollout: after two turns and the lookup
    assert call["plan"] == plan.identity and call["factual"] == failing.id
    expected = RolloutSeed.of(11, plan, 0).of_unrecorded(3)
    assert expected != RolloutSeed.of(11, plan, 0).of_step(3)
    stream = random.Random(expected)
    assert call["draws"] == [stream.random() for _ in range(3)]


class _Modelling(Spy):
    """A spy that answers as the model and the world would (the rollout leaves the record)."""

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        super().__call__(step, ctx)
        if step.kind is StepKind.LLM:
            return model(step, ctx)
        return {"refundable": True, "days": 30}


def test_tools_recorded_on_the_sample_serves_the_recorded_results_under_the_chat_loop(
    tmp_path: Path,
) -> None:
    """``--tools recorded`` on the sample failing run: ``query_metrics`` and ``search_logs`` have
    only their own recorded result, which is what a rollout must be served (it was ``None``)."""
    with Store.open(tmp_path / "store.db") as store:
        for trajectory in read_path(ROOT / "sample_traces" / "incident.otlp.jsonl"):
            store.put(trajectory)
        run = store.get("ef2843ff")
        recorded = recorded_outcomes(store, run)
    served: list[tuple[str, Any]] = []

    def tool(step: Step, ctx: RolloutContext) -> Any:
        try:
            output = recorded(step, ctx)
        except StepFailed:
            served.append((step.name, "failed"))
            raise
        served.append((step.name, output))
        return output

    registry = Registry()
    registry.add_resampler("llm", lambda step, ctx: step.output)  # the model as recorded
    registry.add_resampler("tool", tool)
    made = chat_driver(run, registry, seed=0)
    assert made is not None
    drive, _ = made
    for start in range(len(run.steps)):
        for index in range(4):
            drive(Plan.ablate_from(len(run.steps), start), index)
    names = {name for name, _ in served}
    assert {"query_metrics", "search_logs"} <= names
    assert [name for name, output in served if output is None] == []
