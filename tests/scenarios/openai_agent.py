"""The support agent on the OpenAI SDK: chat completions and a tool loop, no agent-replay in it
(its tools are decorated, see `shop`). Recorded as it is:

    agent-replay record --agent tests/scenarios/openai_agent.py:main --instrument openai \\
        --input '{"question": "...", "base_url": "http://127.0.0.1:8000/v1"}' \\
        --verifier tests/scenarios/shop.py:outcome
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from openai import OpenAI

from tests.scenarios import shop

MODEL = "support-model"
MAX_TURNS = 6


def main(question: str, base_url: str) -> str:
    return answer(question, base_url, shop.call_tool)


def answer(question: str, base_url: str, call_tool: Callable[[str, dict[str, Any]], Any]) -> str:
    """The loop: ask the model, run the tools it calls, hand their results back, until it answers."""
    client = OpenAI(base_url=base_url, api_key="not-needed-locally")
    messages: list[Any] = [
        {"role": "system", "content": shop.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(MAX_TURNS):
        response = client.chat.completions.create(
            model=MODEL, messages=messages, tools=shop.OPENAI_TOOLS
        )
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            result = call_tool(call.function.name, json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    return "Sorry, I could not finish this; a colleague will get back to you."
