"""The incident investigator as people write agents: the OpenAI SDK and a tool loop, no agent-replay.

Record it unmodified (its model calls go through the OpenAI client, which ``--instrument openai``
wraps; its tools are decorated, a no-op outside a recording or replay), with the model served by
`examples.incident.openai_server`:

    python -m examples.incident.openai_server --port 8000 &
    agent-replay record --agent examples/incident/openai_app.py:main --instrument openai \\
        --input '{"base_url": "http://127.0.0.1:8000/v1"}' --verifier examples/incident/agent.py:outcome
    agent-replay replay ID --agent examples/incident/openai_app.py:main --instrument openai
    agent-replay fork ID --at 3 --value '[]' --agent examples/incident/openai_app.py:main --instrument openai
    agent-replay export ID --format pytest --agent examples/incident/openai_app.py:main \\
        --instrument openai --out tests/test_incident.py
"""

from __future__ import annotations

import json
from typing import Any

from openai import OpenAI

import otel_replay

from .conventions import TASK
from .model import MODEL_NAME, SYSTEM_PROMPT
from .world import TOOL_DEFINITIONS, TOOLS

MAX_TURNS = 8
CHAT_TOOLS = [
    {"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}}
    for tool in TOOL_DEFINITIONS
]
# each of the world's tools is a step when recorded or replayed, and just the tool otherwise
STEPS = {name: otel_replay.tool(name=name)(function) for name, function in TOOLS.items()}


def main(base_url: str = "http://127.0.0.1:8000/v1", task: str = TASK) -> str:
    client = OpenAI(base_url=base_url, api_key="not-needed-locally")
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task},
    ]
    for _ in range(MAX_TURNS):
        response = client.chat.completions.create(
            model=MODEL_NAME, messages=messages, tools=CHAT_TOOLS
        )
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            result = STEPS[call.function.name](**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    return "Gave up after too many turns."
