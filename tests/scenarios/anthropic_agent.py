"""The same support agent on the Anthropic SDK: the messages API, ``tool_use`` blocks answered with
``tool_result`` blocks. Recorded with ``--instrument anthropic`` and ``--input '{"question": ...,
"base_url": "http://127.0.0.1:8000"}'``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic

from tests.scenarios import shop

MODEL = "support-claude"
MAX_TURNS = 6


def main(question: str, base_url: str) -> str:
    return answer(question, base_url, shop.call_tool)


def answer(question: str, base_url: str, call_tool: Callable[[str, dict[str, Any]], Any]) -> str:
    """The loop: ask the model, run the tools it calls, hand their results back, until it answers."""
    client = anthropic.Anthropic(base_url=base_url, api_key="not-needed-locally")
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(MAX_TURNS):
        response = client.messages.create(
            model=MODEL,
            max_tokens=1024,
            system=shop.SYSTEM_PROMPT,
            messages=messages,
            tools=shop.ANTHROPIC_TOOLS,
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
    return "Sorry, I could not finish this; a colleague will get back to you."
