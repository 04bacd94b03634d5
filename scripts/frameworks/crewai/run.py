"""The support agent as a CrewAI crew (one Agent, one Task per run), OpenInference instrumentation.

CrewAI 1.x calls OpenAI-compatible models through its native OpenAI provider (the ``openai`` SDK),
not LiteLLM, and uses native tool calling (the fake server's default policy answers it as is).
`CrewAIInstrumentor` in its default (wrapper) mode records the crew, the task and each tool, but no
model call; the model calls come from `OpenAIInstrumentor` on the SDK underneath — the pairing
CrewAI + LiteLLM instrumentors used to be. ``CREWAI_CORPUS_LLM_SPANS`` (not set by the driver)
picks another source to compare by hand: ``events`` (the CrewAI instrumentor's event-listener mode,
which makes its own LLM spans), ``litellm`` (route through LiteLLM and its instrumentor: needs
``litellm`` and ``openinference-instrumentation-litellm`` installed as well) or ``none``.

The retrieval run uses the ``search_policies`` tool: CrewAI's knowledge sources work offline with
the fake embeddings, but neither instrumentation records a retriever span for them.
"""

from __future__ import annotations

import os
import tempfile

# Before CrewAI is imported: no telemetry, no trace upload, no version check, storage in a scratch
# folder, a fake key. OTEL_SDK_DISABLED stays unset: the harness's own SDK must record.
_STORAGE = tempfile.mkdtemp(prefix="crewai-corpus-")
os.environ.update(
    {
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_DISABLE_TRACKING": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "CREWAI_DISABLE_VERSION_CHECK": "true",
        "CREWAI_STORAGE_DIR": _STORAGE,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "ANONYMIZED_TELEMETRY": "False",
        "OPENAI_API_KEY": "fake",
        "HOME": os.environ.get("HOME") or _STORAGE,
    }
)
os.environ.pop("OTEL_SDK_DISABLED", None)

import logging  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    """Refuse, and say so, any connection off this machine: the fake server is the only model."""
    host = address[0] if isinstance(address, tuple) else address
    local = not isinstance(host, str) or host.startswith("127.") or host in ("::1", "localhost")
    if self.family != socket.AF_UNIX and not local:
        print(f"crewai run.py: refused a connection to {address!r}", file=sys.stderr)
        raise ConnectionRefusedError(f"offline corpus run: {address!r}")
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

import harness  # noqa: E402
from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

LLM_SPANS = os.environ.get("CREWAI_CORPUS_LLM_SPANS", "openai")
logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)  # "approximate token count" noise


@tool("lookup_order")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    return harness.lookup_order(order_id)


@tool("track_shipment")
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is, by its tracking id."""
    return harness.track_shipment(tracking_id)


@tool("search_policies")
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    return harness.search_policies(query)


def instrument(provider: TracerProvider) -> None:
    if LLM_SPANS == "events":
        CrewAIInstrumentor().instrument(tracer_provider=provider, use_event_listener=True)
        return
    CrewAIInstrumentor().instrument(tracer_provider=provider)
    if LLM_SPANS == "openai":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif LLM_SPANS == "litellm":
        from openinference.instrumentation.litellm import LiteLLMInstrumentor

        LiteLLMInstrumentor().instrument(tracer_provider=provider)


def crew_run(run: str, url: str) -> Any:
    llm = LLM(
        model="openai/gpt-4o-mini",
        base_url=url + "/v1",
        api_key="fake",
        temperature=0,
        is_litellm=LLM_SPANS == "litellm",
    )
    tools = (
        [search_policies] if run == "retrieval" else [lookup_order, track_shipment, search_policies]
    )
    agent = Agent(
        role="support agent",
        goal="Answer the customer's question about their order and the store policies.",
        backstory=harness.SYSTEM_PROMPT,
        tools=tools,
        llm=llm,
        allow_delegation=False,
        max_iter=6,
        verbose=False,
    )
    task = Task(
        description=harness.question(run),
        expected_output="A short answer for the customer.",
        agent=agent,
    )
    crew = Crew(
        name="support crew", agents=[agent], tasks=[task], process=Process.sequential, verbose=False
    )
    return crew.kickoff().raw


if __name__ == "__main__":
    harness.main(
        "crewai",
        instrument,
        {run: (lambda url, run=run: crew_run(run, url)) for run in harness.RUNS},
    )
