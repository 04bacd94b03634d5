"""The incident investigator written once against the agent context: it runs live under
``agent-replay record`` and unchanged under ``replay``, ``fork`` and ``attribute --agent``.

    agent-replay record --agent examples/incident/agent.py:investigate --outcome examples/incident/agent.py:outcome
    agent-replay replay ID --agent examples/incident/agent.py:investigate
    agent-replay fork ID --at 3 --value '[]' --agent examples/incident/agent.py:investigate

The model is the rule-based investigator (a pure function of the conversation, so it reacts to a
changed tool result and repeats exactly); the tools are the example world's. ``flaky`` makes the deploy
API come back empty that often, drawing from ``ctx.rng`` — the only randomness an agent may use.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from otel_replay.model import Trajectory
from otel_replay.replay import AgentContext, StepError

from .conventions import TASK
from .model import MODEL_NAME, SYSTEM_PROMPT, respond
from .world import TOOLS

CULPRIT = "v841"
MAX_TURNS = 8


def investigate(ctx: AgentContext, task: str = TASK, flaky: float = 0.0) -> str:
    def run_tool(name: str, arguments: dict[str, Any]) -> Any:
        if name == "list_deploys" and ctx.rng.random() < flaky:
            return []  # the flaky deploy API
        return TOOLS[name](**arguments)

    return converse(ctx, task, run_tool)


def converse(ctx: AgentContext, task: str, run_tool: Callable[[str, dict[str, Any]], Any]) -> str:
    """The investigator's loop: model turns, each tool it asks for run by ``run_tool(name,
    arguments)`` (only when the step runs live), a failed tool reported back to the model."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task},
    ]
    for _ in range(MAX_TURNS):
        reply = ctx.llm(MODEL_NAME, produce=lambda: respond(messages), messages=messages)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            return str(reply.get("content", ""))
        for call in calls:
            name, arguments = call["name"], dict(call.get("arguments") or {})
            try:
                result = ctx.tool(
                    name, produce=lambda n=name, a=arguments: run_tool(n, a), **arguments
                )
                content = json.dumps(result)
            except StepError as exc:
                content = json.dumps({"error": str(exc)})
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "name": name, "content": content}
            )
    return "Gave up after too many turns."


def outcome(trajectory: Trajectory) -> float:
    """1.0 when the investigator's answer names the bad deploy."""
    answer = trajectory.metadata.get("answer")
    return 1.0 if isinstance(answer, str) and CULPRIT in answer else 0.0
