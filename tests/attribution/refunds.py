"""A small refund-desk agent of its own (not the bundled incident example), for the tests of what
``--tools recorded`` draws and of rollouts that are no evidence.

The agent asks a model, runs the tools it asks for (``lookup_order``, then, for a delivered order,
``get_refund_policy``) and answers. A run where the order service answered 503 never reaches the
policy; a passing run does. The model is rule-based and, like a real server, answers with a fresh
tool-call id on every response; it refuses a ``null`` tool result (a rollout handed one stops the
attribution with that message), so a test that passes proves no model was handed one.

``--resamplers tests/attribution/refunds_model.py`` registers the model (the tools come from
``--tools recorded``); ``--agent tests/attribution/refunds.py:support`` (or ``careless``,
``unguarded``) re-runs an agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from otel_replay import Registry, RolloutContext, Step, StepFailed, Store, record
from otel_replay.replay import StepError

OPENING = [
    {"role": "system", "content": "You answer refund questions."},
    {"role": "user", "content": "Can I get a refund for order A-7?"},
]
TOOLS = [
    {"type": "function", "function": {"name": "lookup_order", "parameters": {}}},
    {"type": "function", "function": {"name": "get_refund_policy", "parameters": {}}},
]
SUCCESS = "eligible for a refund"


def _asks(name: str, arguments: dict[str, Any], ctx: RolloutContext) -> dict[str, Any]:
    call = {"id": f"call_{ctx.rng.getrandbits(48):012x}", "name": name, "arguments": arguments}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def answer(step: Step, ctx: RolloutContext, *, checks_policy: bool = True) -> Any:
    """The model: look the order up; for a delivered one, read the refund policy (unless it does
    not ``checks_policy``); then answer from what the tools said."""
    results = []
    for message in step.inputs["messages"]:
        if message.get("role") != "tool":
            continue
        if message.get("content") in (None, "null"):
            raise AssertionError(f"the model was handed {message.get('content')!r} as a result")
        results.append(json.loads(message["content"]))
    if not results:
        return _asks("lookup_order", {"order_id": "A-7"}, ctx)
    last = results[-1]
    if last.get("status") == "delivered":
        if checks_policy:
            return _asks("get_refund_policy", {"order_id": "A-7"}, ctx)
        return {"role": "assistant", "content": "Order A-7 was delivered."}
    if last.get("refundable"):
        return {"role": "assistant", "content": f"Yes: order A-7 is {SUCCESS}."}
    return {"role": "assistant", "content": "Sorry, I could not look order A-7 up."}


def model(step: Step, ctx: RolloutContext) -> Any:
    return answer(step, ctx)


def hasty(step: Step, ctx: RolloutContext) -> Any:
    """A model that answers as soon as the order is found, without the policy."""
    return answer(step, ctx, checks_policy=False)


def _result(message: list[dict[str, Any]], call: dict[str, Any], result: Any) -> None:
    message.append(
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": call["name"],
            "content": json.dumps(result),
        }
    )


def support(ctx: Any) -> Any:
    """The agent: a tool's failure goes back to the model as an error."""
    messages = list(OPENING)
    for _ in range(4):
        reply = ctx.llm("refund-model", messages=messages, tools=TOOLS)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            try:
                result = ctx.tool(call["name"], **call["arguments"])
            except StepError as failure:
                result = {"error": str(failure)}
            _result(messages, call, result)
    return None


def careless(ctx: Any) -> Any:
    """`support` with a bug: it reads a found order's shipping date, which lookups do not give."""
    messages = list(OPENING)
    for _ in range(4):
        reply = ctx.llm("refund-model", messages=messages, tools=TOOLS)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            try:
                result = ctx.tool(call["name"], **call["arguments"])
            except StepError as failure:
                result = {"error": str(failure)}
            else:
                if call["name"] == "lookup_order":
                    result["days_late"] = 3 - int(result["shipped_on"][-1])
            _result(messages, call, result)
    return None


def unguarded(ctx: Any) -> Any:
    """`support` without the error handling: a tool's failure ends the run (the agent raises
    the step's `StepError`)."""
    messages = list(OPENING)
    for _ in range(4):
        reply = ctx.llm("refund-model", messages=messages, tools=TOOLS)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return reply["content"]
        for call in reply["tool_calls"]:
            _result(messages, call, ctx.tool(call["name"], **call["arguments"]))
    return None


def world(*, order_service_up: bool, checks_policy: bool = True) -> Registry:
    """The world a run is recorded in."""

    def lookup_order(step: Step, ctx: RolloutContext) -> Any:
        if not order_service_up:
            raise StepFailed("503 Service Unavailable from the order service")
        return {"order_id": "A-7", "status": "delivered"}

    def get_refund_policy(step: Step, ctx: RolloutContext) -> Any:
        return {"refundable": True, "days": 30}

    registry = Registry()
    registry.add_resampler("llm", model if checks_policy else hasty)
    registry.add_resampler("tool", lookup_order, "lookup_order")
    registry.add_resampler("tool", get_refund_policy, "get_refund_policy")
    return registry


def refund_store(
    path: Path, *, passing: int = 1, hasty_runs: int = 0, failing: int = 1, agent: Any = support
) -> tuple[str, list[str]]:
    """A store at ``path`` with ``failing`` failing runs of ``agent`` (the order service down),
    and of `support`, ``passing`` passing runs (which read the policy) and ``hasty_runs`` whose
    model answered without it; the first failing run's id, and the others'."""
    down = world(order_service_up=False)
    runs = [record(agent, seed=1 + seed, registry=down).trajectory for seed in range(failing)]
    for seed in range(passing):
        up = world(order_service_up=True)
        runs.append(record(support, seed=10 + seed, registry=up).trajectory)
    for seed in range(hasty_runs):
        up = world(order_service_up=True, checks_policy=False)
        runs.append(record(support, seed=20 + seed, registry=up).trajectory)
    with Store.open(path) as store:
        for run in runs:
            store.put(run)
    return runs[0].id, [run.id for run in runs[1:]]
