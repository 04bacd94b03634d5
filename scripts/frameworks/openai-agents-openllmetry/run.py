"""The support agent on the OpenAI Agents SDK (Agent + Runner, function tools), OpenLLMetry
instrumentation (``opentelemetry-instrumentation-openai-agents``, a tracing processor that turns the
SDK's own trace spans into OpenTelemetry spans) beside OpenLLMetry's OpenAI client instrumentation
(``opentelemetry-instrumentation-openai``), as ``Traceloop.init`` sets them up together: each model
call is recorded twice, once as the SDK's response span and once as the client's own span.

The same agent as ``scripts/frameworks/openai-agents`` (the SDK's default ``OpenAIResponsesModel`` on
an ``AsyncOpenAI`` client pointed at the fake server). The instrumentor is registered as the only
trace processor (``replace_existing_processors``), so the SDK's own batch processor, which would
upload to the vendor's trace backend, is gone; `_loopback_only` makes any connection to a
non-loopback address fail loudly all the same. The retrieval run's ``search_policies`` is a plain
function tool (this instrumentation has no option to trace a tool as a retrieval).
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
        raise OSError(
            f"openai-agents-openllmetry corpus: refusing a connection to {host!r} (loopback only)"
        )
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

from typing import Any  # noqa: E402

import fake_models  # noqa: E402
import harness  # noqa: E402
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

TOOLS = [
    function_tool(harness.lookup_order),
    function_tool(harness.track_shipment),
    function_tool(harness.search_policies),
]


def instrument(provider: TracerProvider) -> None:
    OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)


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
        "openai-agents-openllmetry",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.ALL_RUNS},
        handler=fake_models.EchoingHandler,
    )
