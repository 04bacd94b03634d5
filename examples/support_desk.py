"""The refund desk every test agent is built on, written once: the customer's question, the two tools
and their schemas in each API's shape, and the tool loop on the OpenAI and on the Anthropic client.

Standard library only, and no agent-replay in it: the agents of ``tests/scenarios`` decorate the
tools with ``@otel_replay.tool``, the MLflow-traced agent of ``tests/platforms/mlflow_agent.py`` (run
in a virtual environment with MLflow and no agent-replay) with ``@mlflow.trace``, and each passes
its client, tools and model name to `openai_loop` or `anthropic_loop`. The model behind them is the
``shop`` model of `examples.fake_model_server`, which answers this desk's question.

``lookup_order`` asks the order service over HTTP (its address from ``ORDER_SERVICE_URL``, as a
deployed tool reads its configuration) and, as most tools do, hands an outage back to the model as
an error result instead of raising.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

QUESTION = "My electric kettle from order A-1001 arrived damaged. Can I get my money back?"
SYSTEM_PROMPT = "You are the shop's support agent. Look orders up before you answer."
SUCCESS = "eligible for a refund"
MAX_TURNS = 6
GIVE_UP = "Sorry, I could not finish this; a colleague will get back to you."

REFUND_POLICIES = {
    "damaged": "items that arrive damaged are refunded in full within 30 days of delivery",
    "late": "deliveries more than 5 days late are refunded the shipping cost",
}


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


def get_refund_policy(reason: str) -> dict[str, Any]:
    """Whether a refund is given for ``reason``, and on what terms."""
    policy = REFUND_POLICIES.get(reason)
    return {"reason": reason, "refundable": policy is not None, "policy": policy or "no refund"}


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
    for name in PARAMETERS
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
    for name in PARAMETERS
]

CallTool = Callable[[str, dict[str, Any]], Any]


def openai_loop(
    client: Any,
    model: str,
    messages: list[Any],
    tools: list[Any],
    call_tool: CallTool,
    max_turns: int = MAX_TURNS,
) -> str | None:
    """Ask the model (an ``openai.OpenAI`` client's chat completions), run the tools it calls, hand
    their results back, until it answers (its answer) or ``max_turns`` are spent (`GIVE_UP`)."""
    for _ in range(max_turns):
        response = client.chat.completions.create(model=model, messages=messages, tools=tools)
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return message.content  # type: ignore[no-any-return]
        for call in message.tool_calls:
            result = call_tool(call.function.name, json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    return GIVE_UP


def anthropic_loop(
    client: Any,
    model: str,
    question: str,
    call_tool: CallTool,
    system: str = SYSTEM_PROMPT,
    max_turns: int = MAX_TURNS,
) -> str:
    """The same loop on an ``anthropic.Anthropic`` client: ``tool_use`` blocks answered with
    ``tool_result`` blocks, the desk's tools offered."""
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(max_turns):
        response = client.messages.create(
            model=model, max_tokens=1024, system=system, messages=messages, tools=ANTHROPIC_TOOLS
        )
        messages.append({"role": "assistant", "content": response.content})
        uses = [block for block in response.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in response.content if block.type == "text")
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use.id,
                "content": json.dumps(call_tool(use.name, dict(use.input))),
            }
            for use in uses
        ]
        messages.append({"role": "user", "content": results})
    return GIVE_UP
