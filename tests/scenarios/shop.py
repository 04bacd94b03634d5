"""What the user brings besides the agent loop: the two tools, decorated so each call is a step
when recorded or replayed (and just the function otherwise), their schemas, the customer's
question, and the verifier that says whether a run succeeded.

``lookup_order`` asks the order service over HTTP (its address from ``ORDER_SERVICE_URL``, as a
deployed tool reads its configuration) and, as most tools do, hands an outage back to the model as
an error result instead of raising.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

import otel_replay
from otel_replay import Trajectory

QUESTION = "My electric kettle from order A-1001 arrived damaged. Can I get my money back?"
SYSTEM_PROMPT = "You are the shop's support agent. Look orders up before you answer."
SUCCESS = "eligible for a refund"

REFUND_POLICIES = {
    "damaged": "items that arrive damaged are refunded in full within 30 days of delivery",
    "late": "deliveries more than 5 days late are refunded the shipping cost",
}


@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """The order as the order service has it, or what went wrong asking."""
    url = f"{os.environ['ORDER_SERVICE_URL']}/orders/{order_id}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            order: dict[str, Any] = json.load(response)
            return order
    except urllib.error.HTTPError as failure:
        failure.close()
        return {"error": f"order service unavailable ({failure.code})"}


@otel_replay.tool
def get_refund_policy(reason: str) -> dict[str, Any]:
    """Whether a refund is given for ``reason``, and on what terms."""
    policy = REFUND_POLICIES.get(reason)
    return {"reason": reason, "refundable": policy is not None, "policy": policy or "no refund"}


TOOLS = {"lookup_order": lookup_order, "get_refund_policy": get_refund_policy}
PARAMETERS = {
    "lookup_order": {"order_id": {"type": "string", "description": "The order's id, e.g. A-1001."}},
    "get_refund_policy": {
        "reason": {"type": "string", "description": "Why the customer wants a refund."}
    },
}
DESCRIPTIONS = {
    "lookup_order": "Look an order up in the order service.",
    "get_refund_policy": "The refund policy for a reason (damaged, late, ...).",
}
#: The tools as each API describes them.
OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": DESCRIPTIONS[name],
            "parameters": {
                "type": "object",
                "properties": PARAMETERS[name],
                "required": [*PARAMETERS[name]],
            },
        },
    }
    for name in TOOLS
]
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": name,
        "description": DESCRIPTIONS[name],
        "input_schema": {
            "type": "object",
            "properties": PARAMETERS[name],
            "required": [*PARAMETERS[name]],
        },
    }
    for name in TOOLS
]


def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    """Run the tool the model asked for."""
    return TOOLS[name](**arguments)


def outcome(trajectory: Trajectory) -> float:
    """1.0 when the agent's final answer tells the customer they are eligible for a refund."""
    return 1.0 if SUCCESS in str(trajectory.metadata.get("answer")) else 0.0
