"""What the user brings besides the agent loop: the refund desk's two tools (`examples.support_desk`),
decorated so each call is a step when recorded or replayed (and just the function otherwise), their
schemas, the customer's question, and the verifier that says whether a run succeeded."""

from __future__ import annotations

from typing import Any

import otel_replay
from examples import support_desk
from examples.support_desk import (
    ANTHROPIC_TOOLS,
    OPENAI_TOOLS,
    QUESTION,
    REFUND_POLICIES,
    SUCCESS,
    SYSTEM_PROMPT,
)
from otel_replay import Trajectory

__all__ = [
    "ANTHROPIC_TOOLS",
    "OPENAI_TOOLS",
    "QUESTION",
    "REFUND_POLICIES",
    "SUCCESS",
    "SYSTEM_PROMPT",
    "call_tool",
    "outcome",
]

lookup_order = otel_replay.tool(support_desk.lookup_order)
get_refund_policy = otel_replay.tool(support_desk.get_refund_policy)
TOOLS = {"lookup_order": lookup_order, "get_refund_policy": get_refund_policy}


def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    """Run the tool the model asked for."""
    return TOOLS[name](**arguments)


def outcome(trajectory: Trajectory) -> float:
    """1.0 when the agent's final answer tells the customer they are eligible for a refund."""
    return 1.0 if SUCCESS in str(trajectory.metadata.get("answer")) else 0.0
