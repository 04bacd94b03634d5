"""The support agent on LangGraph's prebuilt tool-calling agent (``create_react_agent``) over
langchain-openai's ChatOpenAI, OpenInference instrumentation (``LangChainInstrumentor``).

* ``pass`` — plain chat completions; the three harness functions as LangChain tools.
* ``tool-error`` — the same agent with ``ChatOpenAI(streaming=True)`` (SSE chat completions, usage in
  the last chunk); ``lookup_order`` raises and the ToolNode hands the error to the model as a tool result.
* ``retrieval`` — ``search_policies`` is a retriever tool over a LangChain ``InMemoryVectorStore`` of
  the three policies, embedded with ``OpenAIEmbeddings`` on the fake server's ``/v1/embeddings``.

Worked around: the shared fake embedding (sha256 bytes) ranks the refund policy last for the query
"late delivery refund"; `KeywordEmbeddings` answers ``/v1/embeddings`` with a bag-of-words vector
instead, so the retriever's top document is the refund policy, as a real embedding model's would be.
"""

from __future__ import annotations

import os

# Before the framework is imported: no LangSmith tracing, nothing reaches the network.
os.environ.update(
    {
        "LANGCHAIN_TRACING_V2": "false",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING": "false",
        "OPENAI_API_KEY": "fake",
    }
)

import hashlib
import json
import re
import warnings
from typing import Any

import fake_models
import harness
from langchain_core.messages import HumanMessage
from langchain_core.tools import create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langgraph.prebuilt import ToolNode, create_react_agent
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider

warnings.filterwarnings("ignore", message=".*create_react_agent has been moved.*")

DIMENSIONS = 16


def keyword_embedding(text: str) -> list[float]:
    """A bag of word stems (first five letters), each hashed into one of `DIMENSIONS` buckets, normalised."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        if len(word) > 3:
            vector[hashlib.sha256(word[:5].encode()).digest()[0] % DIMENSIONS] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in vector]


class KeywordEmbeddings(fake_models.Handler):
    """The shared fake server, with ``/v1/embeddings`` answered by `keyword_embedding`."""

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
                    {"object": "embedding", "index": i, "embedding": keyword_embedding(str(t))}
                    for i, t in enumerate(texts)
                ],
                "usage": {"prompt_tokens": 4 * len(texts), "total_tokens": 4 * len(texts)},
            }
        )


def instrument(provider: TracerProvider) -> None:
    LangChainInstrumentor().instrument(tracer_provider=provider)


def policy_retriever_tool(url: str) -> Any:
    embeddings = OpenAIEmbeddings(
        model="text-embedding-3-small",
        base_url=f"{url}/v1",
        api_key="fake",
        check_embedding_ctx_length=False,
    )
    store = InMemoryVectorStore.from_texts(fake_models.POLICIES, embeddings)
    return create_retriever_tool(
        store.as_retriever(search_kwargs={"k": 1}),
        "search_policies",
        harness.search_policies.__doc__ or "",
    )


def agent(run: str, url: str) -> Any:
    model = ChatOpenAI(
        model="gpt-fake",
        base_url=f"{url}/v1",
        api_key="fake",
        temperature=0,
        streaming=run == "tool-error",
        stream_usage=True,
    )
    search = policy_retriever_tool(url) if run == "retrieval" else tool(harness.search_policies)
    tools = [tool(harness.lookup_order), tool(harness.track_shipment), search]
    graph = create_react_agent(
        model, ToolNode(tools, handle_tool_errors=True), prompt=harness.SYSTEM_PROMPT
    )
    state = graph.invoke(
        {"messages": [HumanMessage(harness.question(run))]}, {"recursion_limit": 12}
    )
    return state["messages"][-1].content


if __name__ == "__main__":
    harness.main(
        "langgraph",
        instrument,
        {run: (lambda url, run=run: agent(run, url)) for run in harness.RUNS},
        handler=KeywordEmbeddings,
    )
