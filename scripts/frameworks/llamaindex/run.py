"""The support agent on LlamaIndex: a FunctionAgent (its tool-calling workflow agent) on OpenAILike, and
for the retrieval run a VectorStoreIndex over the three policies (OpenAI embeddings from the fake server)
behind the agent's ``search_policies`` tool. OpenInference instrumentation (LlamaIndexInstrumentor).

The OpenAI LLM class refuses model names it does not know, so the model is ``OpenAILike`` (a subclass
that takes any name). The fake server's embeddings are hashes of whole texts, which rank the policies
at random; ``WordHandler`` serves bag-of-words embeddings instead, so the refund policy is the nearest.
"""

from __future__ import annotations

import os

# Before the framework is imported: no network, its own bundled tokenizer and NLTK caches.
os.environ.setdefault("OPENAI_API_KEY", "fake")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio
import hashlib
import json
import re
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

DIMENSIONS = 16


def word_embedding(text: str) -> list[float]:
    """Bag of words hashed into buckets, unit length: texts sharing words are near."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[hashlib.sha256(word.encode()).digest()[0] % DIMENSIONS] += 1.0
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [round(x / norm, 6) for x in vector]


class WordHandler(fake_models.Handler):
    """The fake server, with `word_embedding` behind ``/v1/embeddings``."""

    def do_POST(self) -> None:
        if not self.path.split("?")[0].endswith("/embeddings"):
            return super().do_POST()
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        self._json(
            {
                "object": "list",
                "model": body.get("model", "fake-embedding"),
                "data": [
                    {"object": "embedding", "index": i, "embedding": word_embedding(str(t))}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": 4 * len(texts), "total_tokens": 4 * len(texts)},
            }
        )


def embedder(url: str) -> OpenAIEmbedding:
    return OpenAIEmbedding(
        model_name="fake-embedding", api_base=f"{url}/v1", api_key="fake", max_retries=0
    )


def build_index() -> VectorStoreIndex:
    """The policy index, built (embedded by a fake server of its own) before instrumentation: ingestion
    is not part of any run."""
    server, url = fake_models.serve(handler=WordHandler)
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
        handler=WordHandler,
    )
