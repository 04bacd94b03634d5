"""A support agent on the OpenAI Agents SDK as a user writes one: ``Agent`` + ``Runner``, the SDK's
default model (the Responses API) and three ordinary sync function tools, which the SDK runs on
worker threads (two at once when the model asks for two in one turn). The tools are also
``@otel_replay.tool`` steps; nothing else of agent-replay is in it. Recorded as it is:

    agent-replay record --agent tests/scenarios/agents_sdk_agent.py:support --instrument openai \\
        --input '{"question": "...", "base_url": "http://127.0.0.1:8000/v1"}'

The SDK's own trace upload is switched off (``set_tracing_disabled``): it would reach for the
vendor's backend, and the tests never leave loopback. Traced (``traced=True``), the SDK's tracing
stays on: OpenInference's instrumentor, registered as its only trace processor, turns it into
OpenTelemetry spans, and nothing is uploaded. ``shipping_down``: the shipment service answers 503,
and the agent gives up (the incident).
"""

from __future__ import annotations

import threading
from typing import Any

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

import otel_replay

ORDER = {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
SHIPMENT = {"tracking_id": "TRK-42", "status": "delayed", "eta": "2026-12-04"}
POLICY = (
    "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping cost."
)

#: The threads the tools ran on (a test checks they were not the agent's).
TOOL_THREADS: list[str] = []
#: Whether the shipment service is down (set by `support` for the run under way).
_DOWN = threading.Event()


def _ran_here() -> None:
    TOOL_THREADS.append(threading.current_thread().name)


@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    _ran_here()
    return dict(ORDER, order_id=order_id)


@otel_replay.tool
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is."""
    _ran_here()
    if _DOWN.is_set():
        return {"error": "shipment service unavailable (HTTP 503)"}
    return dict(SHIPMENT, tracking_id=tracking_id)


@otel_replay.tool
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    _ran_here()
    return [POLICY]


async def support(
    question: str,
    base_url: str,
    traced: bool = False,
    shipping_down: bool = False,
    streamed: bool = False,
) -> str:
    set_tracing_disabled(not traced)
    if shipping_down:
        _DOWN.set()
    else:
        _DOWN.clear()
    async with AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0) as client:
        agent = Agent(
            name="Support agent",
            instructions="You are a customer-support agent. Use the tools before you answer.",
            model=OpenAIResponsesModel(model="gpt-fake", openai_client=client),
            tools=[function_tool(lookup_order), function_tool(track_shipment),
                   function_tool(search_policies)],
        )  # fmt: skip
        if not streamed:
            return str((await Runner.run(agent, question)).final_output)
        run = Runner.run_streamed(agent, question)  # the SDK's with_streaming_response path
        async for _ in run.stream_events():
            pass
        return str(run.final_output)


async def support_streamed(question: str, base_url: str) -> str:
    """`support`, its model's answers streamed (``Runner.run_streamed``)."""
    return await support(question, base_url, streamed=True)
