"""The support agent as a pydantic-ai Agent with tools, pydantic-ai's own OpenTelemetry instrumentation.

The model is an `OpenAIChatModel` on the fake server's chat-completions route (an `OpenAIProvider` with
its base URL); every agent and embedder is instrumented with `InstrumentationSettings` on the harness's
tracer provider (the default data format, version 5). A failing tool reports to the model through
`ToolFailed`, pydantic-ai's way of handing a terminal tool failure to the model as the tool's result.

pydantic-ai has no retriever of its own; its RAG pattern is a tool that embeds the question with an
`Embedder` and searches a vector index. In the `retrieval` run, `search_policies` is such a tool: the
query is embedded through the fake server's ``/v1/embeddings`` (an instrumented embeddings span inside
the tool span) and ranked against an index of the three policies built beforehand, uninstrumented,
as an offline indexing job would. The fake embeddings carry no meaning, so only documents sharing a
word with the query are kept (`harness.search_policies`) and the embedding orders them.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENAI_API_KEY", "fake")

import math
from typing import Any

import fake_models
import harness
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, Embedder
from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def instrument(provider: TracerProvider) -> None:
    settings = InstrumentationSettings(tracer_provider=provider)
    Agent.instrument_all(settings)
    Embedder.instrument_all(settings)


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    try:
        return harness.lookup_order(order_id)
    except harness.ToolFailure as exc:
        raise ToolFailed(str(exc)) from exc


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def retriever_tool(embedder: Embedder, index: list[tuple[str, list[float]]]):
    async def search_policies(query: str) -> list[str]:
        """The store policies that match a query."""
        vector = (await embedder.embed_query(query)).embeddings[0]
        matching = set(harness.search_policies(query))
        ranked = sorted(index, key=lambda item: _cosine(vector, item[1]), reverse=True)
        return [text for text, _ in ranked if text in matching][:2]

    return search_policies


def agent(run: str, url: str) -> Any:
    provider = OpenAIProvider(base_url=url + "/v1", api_key="fake")
    model = OpenAIChatModel("gpt-fake", provider=provider)
    tools: list[Any] = [lookup_order, harness.track_shipment]
    if run == "retrieval":
        embedding_model = OpenAIEmbeddingModel("text-embedding-fake", provider=provider)
        offline = Embedder(embedding_model, instrument=False)
        vectors = offline.embed_documents_sync(fake_models.POLICIES).embeddings
        index = list(zip(fake_models.POLICIES, vectors, strict=True))
        tools.append(retriever_tool(Embedder(embedding_model), index))
    else:
        tools.append(harness.search_policies)
    support = Agent(model, name="support-agent", instructions=harness.SYSTEM_PROMPT, tools=tools)
    return support.run_sync(harness.question(run)).output


if __name__ == "__main__":
    harness.main(
        "pydantic-ai",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.RUNS},
    )
