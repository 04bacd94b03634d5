"""The support agent on the OpenAI Agents SDK through the Chat Completions API
(``OpenAIChatCompletionsModel``, as any agent on a non-OpenAI provider runs), traced by OpenLLMetry's
Agents SDK instrumentation alone (``opentelemetry-instrumentation-openai-agents``, without its OpenAI
client instrumentation): each model call is recorded once, by the SDK's generation span.

That span keeps the call's input messages but not its output (the instrumentation reads a response
object, which a Chat Completions generation does not have): the turn each call produced is seen only
in the next call's input. This is the configuration that imported with a step per model call and
one more, rebuilt, for the turn that asked for each tool (issue 39).

Otherwise as ``scripts/frameworks/openai-agents-openllmetry``: the instrumentor is the only trace
processor, `_loopback_only` makes any connection to a non-loopback address fail loudly.
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
            f"openai-agents-openllmetry-alone corpus: refusing a connection to {host!r} (loopback only)"
        )
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

from typing import Any  # noqa: E402

import harness  # noqa: E402
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

TOOLS = [
    function_tool(harness.lookup_order),
    function_tool(harness.track_shipment),
    function_tool(harness.search_policies),
]


def instrument(provider: TracerProvider) -> None:
    OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)


def agent(run: str, url: str) -> Any:
    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="fake", max_retries=0)
    support = Agent(
        name="Support agent",
        instructions=harness.SYSTEM_PROMPT,
        model=OpenAIChatCompletionsModel(model="gpt-fake", openai_client=client),
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
        "openai-agents-openllmetry-alone",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.ALL_RUNS},
    )
