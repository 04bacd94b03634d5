"""The support agent as a hand-written tool loop on the raw OpenAI client, traced with the
Traceloop SDK (OpenLLMetry): its decorators (``@workflow``, ``@agent``, ``@tool``, ``@task``) around
the loop, and Traceloop's own OpenAI instrumentation (``opentelemetry-instrumentation-openai``,
enabled by ``Traceloop.init``) for the model calls and embeddings.

``Traceloop.init`` finds the harness's tracer provider already set globally and adds its span
processor to it (that processor stamps ``traceloop.workflow.name``, ``traceloop.entity.path`` and
``gen_ai.agent.name`` on spans as they start); its own exporter is a throwaway in-memory one, so the
harness's exporter records every span once and nothing is sent anywhere. Metrics and logs are off.
`_loopback_only` makes any connection to a non-loopback address fail loudly.

Retrieval: ``search_policies`` is a ``@tool`` whose body is a ``@task`` retrieval in the vector-store
style: the query is embedded through the fake server's ``/v1/embeddings`` (an instrumented
embeddings call inside the task) and the policies are scored by cosine similarity against document
vectors embedded once, with instrumentation suppressed, before the first run. The fake embeddings
carry no meaning (hashes), so the keyword match of ``harness.search_policies`` chooses the
documents and the vectors only score them.
"""

from __future__ import annotations

import os
import socket

os.environ.update(
    {
        "TRACELOOP_TRACE_CONTENT": "true",
        "TRACELOOP_METRICS_ENABLED": "false",
        "TRACELOOP_LOGGING_ENABLED": "false",
        "TRACELOOP_TELEMETRY": "false",
        "TRACELOOP_SUPPRESS_WARNINGS": "true",
        "OPENAI_API_KEY": "fake",
    }
)

_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and not str(host).startswith(("127.", "::1", "localhost")):
        raise OSError(f"traceloop corpus: refusing a connection to {host!r} (loopback only)")
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

import json  # noqa: E402
import math  # noqa: E402
from typing import Any  # noqa: E402

import fake_models  # noqa: E402
import harness  # noqa: E402
import openai  # noqa: E402
from opentelemetry.instrumentation.utils import suppress_instrumentation  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from traceloop.sdk import Traceloop  # noqa: E402
from traceloop.sdk.decorators import agent, task, tool, workflow  # noqa: E402
from traceloop.sdk.instruments import Instruments  # noqa: E402

MODEL = "gpt-fake"
EMBEDDING_MODEL = "text-embedding-fake"
_index: list[tuple[str, str, list[float]]] = []  # (document id, text, vector)
_server: dict[
    str, str
] = {}  # the fake server's base URL, kept out of the decorated functions' inputs


def _client() -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{_server['url']}/v1", api_key="fake", max_retries=0)


def _cosine(a: list[float], b: list[float]) -> float:
    norm = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)) or 1.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm


def build_index() -> None:
    """Embed the policies once, untraced: the vector store exists before the runs."""
    if _index:
        return
    with suppress_instrumentation():
        vectors = _client().embeddings.create(model=EMBEDDING_MODEL, input=fake_models.POLICIES)
    for i, (text, item) in enumerate(zip(fake_models.POLICIES, vectors.data, strict=True)):
        _index.append((f"policy-{i}", text, item.embedding))


@task(name="retrieve_policies")
def retrieve_policies(query: str, top_k: int = 2) -> list[dict[str, Any]]:
    """Vector search over the policies: embed the query, score the candidates, best first."""
    vector = _client().embeddings.create(model=EMBEDDING_MODEL, input=query).data[0].embedding
    candidates = set(harness.search_policies(query))
    scored = [
        {"id": doc_id, "content": text, "score": round(_cosine(vector, doc_vector), 6)}
        for doc_id, text, doc_vector in _index
        if text in candidates
    ]
    return sorted(scored, key=lambda d: -d["score"])[:top_k]


@tool(name="lookup_order")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    return harness.lookup_order(order_id)


@tool(name="track_shipment")
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is, by its tracking id."""
    return harness.track_shipment(tracking_id)


@tool(name="search_policies")
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    return [doc["content"] for doc in retrieve_policies(query)]


TOOLS = {
    "lookup_order": lookup_order,
    "track_shipment": track_shipment,
    "search_policies": search_policies,
}


SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": function.__name__,
            "description": function.__doc__,
            "parameters": {
                "type": "object",
                "properties": {parameter: {"type": "string"} for parameter in parameters},
                "required": list(parameters),
            },
        },
    }
    for function, parameters in (
        (lookup_order, ["order_id"]),
        (track_shipment, ["tracking_id"]),
        (search_policies, ["query"]),
    )
]


@agent(name="support_agent")
def support_agent(question: str) -> str | None:
    client = _client()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": harness.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            try:
                output = json.dumps(
                    TOOLS[call.function.name](**json.loads(call.function.arguments))
                )
            except harness.ToolFailure as exc:
                output = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return None


@workflow(name="support_run")
def support_run(question: str) -> str | None:
    build_index()
    return support_agent(question)


def run(name: str, url: str) -> str | None:
    _server["url"] = url
    return support_run(harness.question(name))


def instrument(provider: TracerProvider) -> None:
    # The harness has already set `provider` as the global tracer provider: Traceloop adds its
    # processor to it rather than making its own, and the OpenAI instrumentation uses it too.
    Traceloop.init(
        app_name="support-agent-traceloop",
        exporter=InMemorySpanExporter(),  # thrown away: the harness's own exporter keeps the spans
        disable_batch=True,
        telemetry_enabled=False,
        instruments={Instruments.OPENAI},
    )


if __name__ == "__main__":
    harness.main(
        "traceloop",
        instrument,
        {name: (lambda url, name=name: run(name, url)) for name in harness.RUNS},
    )
