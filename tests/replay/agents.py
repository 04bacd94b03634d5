"""Agents for the replay tests, each written once against the context API.

They use nothing but ``ctx.llm / ctx.tool / ctx.retrieve / ctx.step / ctx.rng`` (the write-once
contract) unless their point is to break it (`clock_agent` reads the wall clock). None keeps state at
module level: the CLI tests load this file by path, which re-executes it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from otel_replay import RolloutContext, Step
from otel_replay.replay import AgentContext, StepError
from otel_replay.resamplers import Registry

QUESTION = "where is invoice 7?"
ROUTES = ("a", "b")

# --- the branching router ------------------------------------------------------------------------


def fetched(tool: str, nonce: float) -> dict[str, Any]:
    """What the fetch tools return: who produced it, and a draw so live and recorded calls differ."""
    return {"tool": tool, "nonce": nonce, "rows": [f"{tool}-row-{round(nonce * 1000)}"]}


def route_resampler(step: Step, ctx: RolloutContext) -> dict[str, str]:
    """The router's model when it runs without ``produce=``: a coin flip from the rollout's rng."""
    return {"route": ctx.rng.choice(ROUTES)}


def router_registry() -> Registry:
    registry = Registry()
    registry.add_resampler("llm", route_resampler, name="router")
    return registry


def router(
    ctx: AgentContext,
    question: str = QUESTION,
    rounds: int = 2,
    by: str = "name",
    resampled: bool = False,
) -> str:
    """Each round: an llm picks route "a" or "b"; the next tool depends on the pick.

    ``by="name"``: the tool is ``fetch_a`` or ``fetch_b`` with identical inputs (only the name tells
    them apart); ``by="argument"``: one tool ``fetch`` whose ``source`` argument is the route.
    ``resampled``: the router has no ``produce=`` and runs on the registered resample function.
    """
    seen: list[str] = []
    for round_ in range(rounds):

        def pick() -> dict[str, str]:
            return {"route": ctx.rng.choice(ROUTES)}

        decision = ctx.llm("router", produce=None if resampled else pick, question=question)
        route = decision["route"]
        tool = f"fetch_{route}"

        def fetch(tool: str = tool) -> dict[str, Any]:
            return fetched(tool, ctx.rng.random())

        if by == "name":
            data = ctx.tool(tool, produce=fetch, q=question)
        else:
            data = ctx.tool("fetch", produce=fetch, q=question, source=route)
        seen.append(f"{round_}:{route}:{data['tool']}")
    summary = ctx.llm("answer", produce=lambda: {"content": " ".join(seen)}, seen=seen)
    return str(summary["content"])


# --- a seeded stochastic agent -------------------------------------------------------------------


def stochastic(ctx: AgentContext, task: str = "triage", turns: int = 4) -> dict[str, Any]:
    """Draws from ``ctx.rng`` between steps (what to call, with which inputs) and inside ``produce``
    (a variable number of draws), through every method of the step API."""
    notes: list[Any] = []
    temperature = round(ctx.rng.uniform(0.1, 1.0), 6)  # position 0, before the first step
    for turn in range(turns):
        plan = ctx.llm(
            "planner",
            produce=lambda: {
                "pick": ctx.rng.randrange(3),
                "draws": [ctx.rng.random() for _ in range(ctx.rng.randint(1, 4))],
            },
            task=task,
            turn=turn,
            temperature=temperature,
            notes=notes,
        )
        jitter = ctx.rng.random()  # between steps: the stream of the next position
        if plan["pick"] == 0:
            found = ctx.tool(
                "search", produce=lambda: [ctx.rng.random() for _ in range(2)], turn=turn, j=jitter
            )
        elif plan["pick"] == 1:
            found = ctx.retrieve(
                "memory", produce=lambda: {"doc": ctx.rng.choice("xyz")}, turn=turn, j=jitter
            )
        else:
            found = ctx.step(
                "guardrail", "policy", produce=lambda: ctx.rng.random() < 0.5, turn=turn, j=jitter
            )
        notes.append([plan, jitter, found])
    return {"temperature": temperature, "notes": notes}


def drawing(ctx: AgentContext, steps: int = 5, calls: Counter[int] | None = None) -> list[Any]:
    """Each step's inputs carry a between-step draw, and its produce draws a variable number of
    times; ``calls`` counts the positions whose produce ran."""
    seen: list[Any] = []
    for position in range(steps):
        before = ctx.rng.random()

        def produce(position: int = position) -> list[float]:
            if calls is not None:
                calls[position] += 1
            return [ctx.rng.random() for _ in range(1 + ctx.rng.randrange(4))]

        seen.append([before, ctx.tool("sample", produce=produce, position=position, before=before)])
    return seen


# --- agents that break the contract, or whose steps fail -----------------------------------------


def _probe(i: int) -> Callable[[], dict[str, int]]:
    return lambda: {"i": i}


def clock_agent(ctx: AgentContext, turns: int = 3) -> list[Any]:
    """Reads the wall clock inside its loop and passes it to the model: step 1 never replays."""
    out: list[Any] = []
    for i in range(turns):
        out.append(ctx.tool("probe", produce=_probe(i), i=i))
        out.append(ctx.llm("think", produce=lambda: "ok", i=i, now=time.time_ns()))
    return out


def careful_clock_agent(ctx: AgentContext, turns: int = 3) -> list[Any]:
    """`clock_agent` with the everyday defensive habit of catching ``Exception`` around each call."""
    out: list[Any] = []
    for i in range(turns):
        try:
            out.append(ctx.tool("probe", produce=_probe(i), i=i))
            out.append(ctx.llm("think", produce=lambda: "ok", i=i, now=time.time_ns()))
        except Exception as exc:
            out.append(f"failed: {exc}")
    return out


def returning(value_factory: Callable[[], Any]) -> Callable[[AgentContext], Any]:
    """An agent whose second step (tool ``b``) returns ``value_factory()``."""

    def agent(ctx: AgentContext) -> Any:
        ctx.tool("a", produce=lambda: {"fine": True}, x=1)
        return ctx.tool("b", produce=value_factory, y=2)

    return agent


def charging(ctx: AgentContext, amount: int = 40) -> str:
    """A tool that fails; the agent handles the failure and tells the model about it."""
    try:
        receipt = ctx.tool("charge", produce=lambda: _decline(amount), amount=amount)
    except StepError as exc:
        message = str(exc)
        reply = ctx.llm(
            "apologise",
            produce=lambda: f"sorry: {message}",
            error=message,
            failed_step=exc.step_index,
        )
        return f"handled: {reply}"
    return f"charged: {receipt}"


def _decline(amount: int) -> Any:
    raise ValueError(f"card declined for {amount}")


def unhandled(ctx: AgentContext) -> str:
    """A failing tool the agent does not catch: the run ends there (recorded up to there)."""
    ctx.llm("plan", produce=lambda: "call it", goal="pay")
    ctx.tool("charge", produce=lambda: _decline(1), amount=1)
    return "unreachable"


def without_produce(ctx: AgentContext) -> str:
    """Steps that rely on the registered resample functions."""
    row = ctx.tool("lookup", key="k1")
    return str(ctx.llm("writer", prompt=f"summarise {row}"))


def worldly(world: dict[str, Any], calls: Counter[str]) -> Callable[[AgentContext], str]:
    """An agent whose tool reads ``world`` (mutable: the outside world) and whose model counts calls."""

    def agent(ctx: AgentContext) -> str:
        def model(prompt: str) -> str:
            calls["llm"] += 1
            return f"model saw {prompt}"

        def read() -> Any:
            calls["tool"] += 1
            return dict(world)

        plan = ctx.llm("model", produce=lambda: model("start"), prompt="start")
        state = ctx.tool("read_world", produce=read, why=plan)
        prompt = f"world is {sorted(state.items())}"
        return str(ctx.llm("model", produce=lambda: model(prompt), prompt=prompt))

    return agent


def polling(ctx: AgentContext) -> list[str]:
    """The same call (same op_key) made until it answers "done": the record holds it three times."""
    answers = iter(["pending", "pending", "done"])
    seen: list[str] = []
    while not seen or seen[-1] != "done":
        seen.append(ctx.tool("status", produce=lambda: next(answers), job=7))
    return seen


def lists(ctx: AgentContext) -> str:
    """Step 1 returns a list the agent branches on (for forks and faults)."""
    ctx.llm("plan", produce=lambda: "look", goal="find")
    try:
        items = ctx.tool("items", produce=lambda: ["a", "b", "c", "d"], n=4)
    except StepError as exc:
        return str(ctx.llm("report", produce=lambda: "failed", error=str(exc)))
    if not items:
        return str(ctx.llm("report", produce=lambda: "nothing", count=0))
    ctx.tool("open", produce=lambda: f"opened {items[0]}", item=items[0])
    return str(ctx.llm("report", produce=lambda: f"{len(items)} items", count=len(items)))


def set_output(ctx: AgentContext) -> Any:
    """Step 1 returns a set: not JSON (for ``record`` with and without ``--lax``)."""
    return returning(lambda: {1, 2})(ctx)
