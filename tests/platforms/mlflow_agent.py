"""The shop's support agent traced by MLflow itself, for the MLflow platform tests: run with
``.mlflow-venv/bin/python`` (MLflow and the OpenAI SDK are there, agent-replay is not), it answers
one customer question and logs its trace to a real ``mlflow server``.

    .mlflow-venv/bin/python tests/platforms/mlflow_agent.py TRACKING_URI EXPERIMENT QUESTION

The OpenAI SDK's base URL is ``OPENAI_BASE_URL`` (the tests' loopback fake model server) and the
order service's ``ORDER_SERVICE_URL``, as `tests.scenarios.shop` reads them. Tracing is MLflow's own:
``mlflow.openai.autolog()`` makes each chat completion a ``CHAT_MODEL`` span, the tools are
``@mlflow.trace(span_type="TOOL")`` and the loop an ``AGENT`` span. It prints the trace's id.

The tools are the ones `tests.scenarios.shop` gives the agents recorded by agent-replay, written
again here because that module imports agent-replay; a test checks that they say the same.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

import mlflow
from openai import OpenAI

MODEL = "support-model"
MAX_TURNS = 6
SYSTEM_PROMPT = "You are the shop's support agent. Look orders up before you answer."
REFUND_POLICIES = {
    "damaged": "items that arrive damaged are refunded in full within 30 days of delivery",
    "late": "deliveries more than 5 days late are refunded the shipping cost",
}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look an order up in the order service.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order's id, e.g. A-1001."}
                },
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_refund_policy",
            "description": "The refund policy for a reason (damaged, late, ...).",
            "parameters": {
                "type": "object",
                "properties": {
                    "reason": {"type": "string", "description": "Why the customer wants a refund."}
                },
                "required": ["reason"],
            },
        },
    },
]


@mlflow.trace(span_type="TOOL")
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


@mlflow.trace(span_type="TOOL")
def get_refund_policy(reason: str) -> dict[str, Any]:
    """Whether a refund is given for ``reason``, and on what terms."""
    policy = REFUND_POLICIES.get(reason)
    return {"reason": reason, "refundable": policy is not None, "policy": policy or "no refund"}


FUNCTIONS = {"lookup_order": lookup_order, "get_refund_policy": get_refund_policy}


@mlflow.trace(span_type="AGENT", name="support_agent")
def answer(question: str) -> str:
    """Ask the model, run the tools it calls, hand their results back, until it answers."""
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="not-needed-locally")
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(MAX_TURNS):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            result = FUNCTIONS[call.function.name](**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    return "Sorry, I could not finish this; a colleague will get back to you."


def main() -> None:
    tracking_uri, experiment, question = sys.argv[1:4]
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment)
    mlflow.openai.autolog()
    answer(question)
    trace_id = mlflow.get_last_active_trace_id()
    mlflow.flush_trace_async_logging()
    print(trace_id)


if __name__ == "__main__":
    main()
