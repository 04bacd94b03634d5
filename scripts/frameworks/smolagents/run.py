"""The support agent as a smolagents ToolCallingAgent over OpenAIServerModel, OpenInference instrumentation.

smolagents does not send the conversation's tool calls and results natively: a step's calls go back as
an assistant text ``Calling tools:\\n[{...}]`` and their results (or the step's error) as a user text
``Observation:\\n...`` / ``Call id: ...\\nError:\\n...``, and a run ends only with a ``final_answer``
tool call. So `policy` below reads that text form back into the shared policy's plain conversation and
turns its closing answer into a ``final_answer`` call.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OPENAI_API_KEY", "fake")

import re
from typing import Any, ClassVar

import fake_models
import harness
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from smolagents import LogLevel, OpenAIServerModel, Tool, ToolCallingAgent, tool

_shared_policy = fake_models.policy


def policy(messages: list[dict[str, Any]], tools: list[str]) -> dict[str, Any]:
    """The shared policy over smolagents' text-form conversation; its answer as a final_answer call."""
    plain: list[dict[str, Any]] = []
    for m in messages:
        text = str(m.get("content") or "")
        if m["role"] == "assistant" and text.startswith("Calling tools:"):
            names = re.findall(r"'name': '(\w+)'", text)
            plain.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": n, "arguments": None} for n in names],
                }
            )
        elif m["role"] == "user" and (
            text.startswith("Observation:") or "\nError:\n" in text or text.startswith("Error:")
        ):
            plain.append({"role": "tool", "content": text, "name": None})
        else:
            plain.append(m)
    reply = _shared_policy(plain, tools)
    if "content" in reply and "final_answer" in tools:
        return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": reply["content"]}}]}
    return reply


fake_models.policy = policy


# Two tools from the @tool decorator (their spans are all named after its class, ``SimpleTool``), one
# a Tool subclass (its span is named after the subclass): both shapes in one corpus.


@tool
def lookup_order(order_id: str) -> dict:
    """Look an order up by its id.

    Args:
        order_id: The order's id, e.g. A-1001.
    """
    return harness.lookup_order(order_id)


@tool
def track_shipment(tracking_id: str) -> dict:
    """Where a shipment is, by its tracking id.

    Args:
        tracking_id: The shipment's tracking id.
    """
    return harness.track_shipment(tracking_id)


class SearchPolicies(Tool):
    name = "search_policies"
    description = "The store policies that match a query."
    inputs: ClassVar[dict[str, dict[str, str]]] = {
        "query": {"type": "string", "description": "Words to look for in the policies."}
    }
    output_type = "array"

    def forward(self, query: str) -> Any:
        return harness.search_policies(query)


def instrument(provider: TracerProvider) -> None:
    SmolagentsInstrumentor().instrument(tracer_provider=provider)


def agent(run: str, url: str) -> Any:
    model = OpenAIServerModel(model_id="gpt-fake", api_base=url + "/v1", api_key="fake")
    support = ToolCallingAgent(
        tools=[lookup_order, track_shipment, SearchPolicies()],
        model=model,
        instructions=harness.SYSTEM_PROMPT,
        max_steps=6,
        verbosity_level=LogLevel.OFF,
    )
    return support.run(harness.question(run))


if __name__ == "__main__":
    harness.main(
        "smolagents",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.RUNS},
    )
