"""The support agent on the OpenAI Agents SDK (Agent + Runner, function tools), OpenInference
instrumentation (``OpenAIAgentsInstrumentor``, a tracing processor that turns the SDK's own trace
spans into OpenTelemetry spans).

The model is the SDK's default, ``OpenAIResponsesModel`` (the Responses API), on an ``AsyncOpenAI``
client pointed at the fake server. The fake server's Responses answer does not echo the request's
``instructions`` as the real API does (the instrumentor reads the system message from there), so
`fake_models.EchoingHandler` adds them back.
The SDK's own trace upload is never reached: the instrumentor is registered as the *exclusive*
trace processor (its default), which replaces the SDK's batch processor that would upload to the
vendor's trace backend; ``set_tracing_disabled`` cannot be used, as it silences the SDK's tracing
for every processor, the instrumentor's included. As a belt-and-braces check, `_loopback_only`
makes any connection to a non-loopback address fail loudly.

Retrieval: the SDK has no local retriever component (its ``FileSearchTool`` is a hosted tool run by
the vendor's vector stores), so ``search_policies`` is a function tool whose documents are returned
as ``{"id", "content"}`` objects, and the instrumentor's own ``tool_span_kinds`` option marks that
tool's spans RETRIEVER (with ``retrieval.documents.*``) — in every run, as a real deployment would.
"""

from __future__ import annotations

import os
import socket

os.environ.setdefault("OPENAI_API_KEY", "fake")
os.environ.setdefault("OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA", "true")

_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and not str(host).startswith(("127.", "::1", "localhost")):
        raise OSError(f"openai-agents corpus: refusing a connection to {host!r} (loopback only)")
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

from typing import Any  # noqa: E402

import fake_models  # noqa: E402
import harness  # noqa: E402
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402


def search_policies(query: str) -> list[dict[str, str]]:
    """The store policies that match a query."""
    return [
        {"id": f"policy-{fake_models.POLICIES.index(text)}", "content": text}
        for text in harness.search_policies(query)
    ]


TOOLS = [
    function_tool(harness.lookup_order),
    function_tool(harness.track_shipment),
    function_tool(search_policies),
]


def instrument(provider: TracerProvider) -> None:
    OpenAIAgentsInstrumentor().instrument(
        tracer_provider=provider, tool_span_kinds={"search_policies": "RETRIEVER"}
    )


def agent(run: str, url: str) -> Any:
    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="fake", max_retries=0)
    support = Agent(
        name="Support agent",
        instructions=harness.SYSTEM_PROMPT,
        model=OpenAIResponsesModel(model="gpt-fake", openai_client=client),
        tools=TOOLS,
    )
    result = Runner.run_sync(
        support,
        harness.question(run),
        max_turns=6,
        run_config=RunConfig(workflow_name=f"support {run}", trace_include_sensitive_data=True),
    )
    return result.final_output


if __name__ == "__main__":
    harness.main(
        "openai-agents",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.ALL_RUNS},
        handler=fake_models.EchoingHandler,
    )
