"""The support agent on the BeeAI framework (a ``RequirementAgent`` with function tools), OpenInference
instrumentation (``BeeAIInstrumentor``, which turns the framework's emitter events into spans).

The model is BeeAI's ``OpenAIChatModel`` (LiteLLM underneath) with its ``base_url`` on the fake
server's chat-completions route; LiteLLM's cost map is read from the package, not fetched, and its
telemetry is off. The agent answers in text (``final_answer_as_tool=False``): the fake model does not
call a final-answer tool. A tool that raises is reported to the model by the framework itself as the
tool's error text, and the agent goes on.
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_TELEMETRY"] = "False"
os.environ["OPENAI_API_KEY"] = "fake"
os.environ["BEEAI_LOG_LEVEL"] = "ERROR"

import asyncio
from typing import Any

import harness
from beeai_framework.adapters.openai import OpenAIChatModel
from beeai_framework.agents.requirement import RequirementAgent
from beeai_framework.tools import tool
from openinference.instrumentation.beeai import BeeAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider

MODEL = "gpt-fake"


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    return harness.lookup_order(order_id)


@tool
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is, by its tracking id."""
    return harness.track_shipment(tracking_id)


@tool
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    return harness.search_policies(query)


def instrument(provider: TracerProvider) -> None:
    BeeAIInstrumentor().instrument(tracer_provider=provider)


async def _run(run: str, url: str) -> Any:
    agent = RequirementAgent(
        llm=OpenAIChatModel(MODEL, base_url=f"{url}/v1", api_key="fake"),
        tools=[lookup_order, track_shipment, search_policies],
        instructions=harness.SYSTEM_PROMPT,
        final_answer_as_tool=False,
    )
    result = await agent.run(harness.question(run))
    return result.last_message.text


def agent(run: str, url: str) -> Any:
    return asyncio.run(_run(run, url))


if __name__ == "__main__":
    harness.main(
        "beeai",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.ALL_RUNS},
    )
