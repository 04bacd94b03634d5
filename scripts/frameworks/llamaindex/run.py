"""The support agent on LlamaIndex: a FunctionAgent (its tool-calling workflow agent) on OpenAILike, and
for the retrieval run a VectorStoreIndex over the three policies (OpenAI embeddings from the fake server)
behind the agent's ``search_policies`` tool. OpenInference instrumentation (LlamaIndexInstrumentor).

The OpenAI LLM class refuses model names it does not know, so the model is ``OpenAILike`` (a subclass
that takes any name).
"""

from __future__ import annotations

import os

# Before the framework is imported: no network, its own bundled tokenizer and NLTK caches.
os.environ.setdefault("OPENAI_API_KEY", "fake")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio
from typing import Any

import fake_models
import harness
from llama_index.core import VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.schema import TextNode
from llama_index.core.tools import FunctionTool
from llama_index.embeddings.openai import OpenAIEmbedding
from llama_index.llms.openai_like import OpenAILike
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import TracerProvider


def embedder(url: str) -> OpenAIEmbedding:
    return OpenAIEmbedding(
        model_name="fake-embedding", api_base=f"{url}/v1", api_key="fake", max_retries=0
    )


def build_index() -> VectorStoreIndex:
    """The policy index, built (embedded by a fake server of its own) before instrumentation: ingestion
    is not part of any run."""
    server, url = fake_models.serve()
    try:
        nodes = [
            TextNode(text=text, id_=f"policy-{i}") for i, text in enumerate(fake_models.POLICIES)
        ]
        return VectorStoreIndex(nodes, embed_model=embedder(url))
    finally:
        server.shutdown()


INDEX = build_index()


def instrument(provider: TracerProvider) -> None:
    LlamaIndexInstrumentor().instrument(tracer_provider=provider)


def agent(run: str, url: str) -> Any:
    llm = OpenAILike(
        model="fake-model",
        api_base=f"{url}/v1",
        api_key="fake",
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=16000,
        max_retries=0,
    )
    search = harness.search_policies
    if run == "retrieval":
        retriever = INDEX.as_retriever(similarity_top_k=2, embed_model=embedder(url))

        def search_policies(query: str) -> list[str]:
            """The store policies that match a query."""
            return [hit.node.get_content() for hit in retriever.retrieve(query)]

        search = search_policies
    tools = [
        FunctionTool.from_defaults(fn=f)
        for f in (harness.lookup_order, harness.track_shipment, search)
    ]
    support = FunctionAgent(tools=tools, llm=llm, system_prompt=harness.SYSTEM_PROMPT)

    async def ask() -> Any:
        return await support.run(user_msg=harness.question(run))

    return str(asyncio.run(ask()))


if __name__ == "__main__":
    harness.main(
        "llamaindex",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.RUNS},
    )
