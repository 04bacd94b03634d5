"""The support agent on the OpenAI SDK: chat completions and the desk's tool loop
(`examples.support_desk.openai_loop`), no agent-replay in it (its tools are decorated, see `shop`).
Recorded as it is:

    agent-replay record --agent tests/scenarios/openai_agent.py:main --instrument openai \\
        --input '{"question": "...", "base_url": "http://127.0.0.1:8000/v1"}' \\
        --verifier tests/scenarios/shop.py:outcome
"""

from __future__ import annotations

from typing import Any

from openai import OpenAI

from examples.support_desk import CallTool, openai_loop
from tests.scenarios import shop

MODEL = "support-model"


def main(question: str, base_url: str) -> str:
    return answer(question, base_url, shop.call_tool)


def answer(question: str, base_url: str, call_tool: CallTool) -> str:
    """The loop: ask the model, run the tools it calls, hand their results back, until it answers."""
    client = OpenAI(base_url=base_url, api_key="not-needed-locally")
    messages: list[Any] = [
        {"role": "system", "content": shop.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    return openai_loop(client, MODEL, messages, shop.OPENAI_TOOLS, call_tool) or ""
