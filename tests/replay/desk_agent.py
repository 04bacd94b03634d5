"""A small refund-desk agent of a user's own (not the incident example): the real ``openai`` SDK,
two tools, no agent-replay in it but the tools' decorator; its model is the support model of the
fake model server (`examples.fake_model_server`), its loop the desk's
(`examples.support_desk.openai_loop`). Recorded with ``--instrument openai``."""

from __future__ import annotations

from typing import Any

from openai import OpenAI

import otel_replay
from examples.support_desk import openai_loop

ORDERS = {"A-1001": {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}}
POLICY = (
    "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping cost."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name, description in (
        ("lookup_order", "the order's status"),
        ("search_policies", "the refund policies"),
    )
]


@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return dict(ORDERS[order_id])


@otel_replay.tool
def search_policies(query: str) -> list[str]:
    return [POLICY]


RUN = {"lookup_order": lookup_order, "search_policies": search_policies}


def main(question: str, base_url: str) -> str | None:
    """Ask the model, run the tools it calls, until it answers."""
    client = OpenAI(base_url=f"{base_url}/v1", api_key="sk-desk-not-stored")
    messages: list[Any] = [{"role": "user", "content": question}]
    return openai_loop(client, "desk-model", messages, TOOLS, lambda name, a: RUN[name](**a))


def refunded(run: Any) -> float:
    """Success: the answer tells the customer about the refund."""
    return 1.0 if "refund" in str(run.metadata.get("answer") or "") else 0.0


def lenient(run: Any) -> float:
    """A verifier that passes every run (another way of scoring the same fork)."""
    return 1.0
