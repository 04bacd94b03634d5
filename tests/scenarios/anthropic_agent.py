"""The same support agent on the Anthropic SDK: the messages API, ``tool_use`` blocks answered with
``tool_result`` blocks (`examples.support_desk.anthropic_loop`). Recorded with ``--instrument
anthropic`` and ``--input '{"question": ..., "base_url": "http://127.0.0.1:8000"}'``."""

from __future__ import annotations

import anthropic

from examples.support_desk import CallTool, anthropic_loop
from tests.scenarios import shop

MODEL = "support-claude"


def main(question: str, base_url: str) -> str:
    return answer(question, base_url, shop.call_tool)


def answer(question: str, base_url: str, call_tool: CallTool) -> str:
    """The loop: ask the model, run the tools it calls, hand their results back, until it answers."""
    client = anthropic.Anthropic(base_url=base_url, api_key="not-needed-locally")
    return anthropic_loop(client, MODEL, question, call_tool)
