"""The support agent on the raw Anthropic SDK (a hand-written tool loop), OpenInference instrumentation."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import harness
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from opentelemetry.sdk.trace import TracerProvider

TOOLS = {
    "lookup_order": harness.lookup_order,
    "track_shipment": harness.track_shipment,
    "search_policies": harness.search_policies,
}
SCHEMAS = [
    {
        "name": name,
        "description": function.__doc__,
        "input_schema": {
            "type": "object",
            "properties": {
                parameter: {"type": "string"}
                for parameter in function.__annotations__
                if parameter != "return"
            },
        },
    }
    for name, function in TOOLS.items()
]


def instrument(provider: TracerProvider) -> None:
    AnthropicInstrumentor().instrument(tracer_provider=provider)


def agent(run: str, url: str, stream: bool = False) -> Any:
    client = anthropic.Anthropic(base_url=url, api_key="fake")
    messages: list[dict[str, Any]] = [{"role": "user", "content": harness.question(run)}]
    for _ in range(6):
        reply = client.messages.create(
            model="claude-fake",
            max_tokens=256,
            system=harness.SYSTEM_PROMPT,
            messages=messages,
            tools=SCHEMAS,
        )
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text")
        results = []
        for call in calls:
            try:
                output, failed = json.dumps(TOOLS[call.name](**call.input)), False
            except harness.ToolFailure as exc:
                output, failed = f"error: {exc}", True
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": output,
                    "is_error": failed,
                }
            )
        messages.append({"role": "user", "content": results})
    return None


if __name__ == "__main__":
    harness.main(
        "anthropic",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.RUNS},
    )
