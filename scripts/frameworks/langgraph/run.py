"""The support agent on LangGraph's prebuilt tool-calling agent (``create_react_agent``) over
langchain-openai's ChatOpenAI, OpenInference instrumentation (``LangChainInstrumentor``).

* ``pass`` — plain chat completions; the three harness functions as LangChain tools.
* ``tool-error`` — the same agent with ``ChatOpenAI(streaming=True)`` (SSE chat completions, usage in
  the last chunk); ``lookup_order`` raises and the ToolNode hands the error to the model as a tool result.
* ``retrieval`` — ``search_policies`` is a retriever tool over a LangChain ``InMemoryVectorStore`` of
  the three policies, embedded with ``OpenAIEmbeddings`` on the fake server's ``/v1/embeddings``.
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
    )
