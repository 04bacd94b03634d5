"""The support agent on Haystack: an Agent with an OpenAIChatGenerator, OpenInference instrumentation.

``pass`` and ``tool-error`` run the Agent (its own chat-generator / ToolInvoker loop) over the three
harness tools; a failing tool is handed back to the model as an error tool result
(``raise_on_tool_invocation_failure=False``). ``retrieval`` runs a Pipeline: OpenAITextEmbedder →
InMemoryEmbeddingRetriever (over the three policies, embedded by OpenAIDocumentEmbedder) →
ChatPromptBuilder → the Agent, so the trace holds real embedder and retriever spans. The policies are
indexed with instrumentation suppressed: the trace shows the query path only.
"""

from __future__ import annotations

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("OPENAI_API_KEY", "fake")

from typing import Any

import fake_models
import harness
from haystack import Document, Pipeline
from haystack.components.agents import Agent
from haystack.components.builders import ChatPromptBuilder
from haystack.components.embedders import OpenAIDocumentEmbedder, OpenAITextEmbedder
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.tools import create_tool_from_function
from haystack.utils import Secret
from openinference.instrumentation.haystack import HaystackInstrumentor
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import TracerProvider

TOOLS = [
    create_tool_from_function(harness.lookup_order),
    create_tool_from_function(harness.track_shipment),
    create_tool_from_function(harness.search_policies),
]
KEY = Secret.from_token("fake")
RAG_TEMPLATE = [
    ChatMessage.from_user(
        "Answer from these store policies:\n{% for d in documents %}- {{ d.content }}\n{% endfor %}\n"
        "Question: {{ question }}"
    )
]


def instrument(provider: TracerProvider) -> None:
    HaystackInstrumentor().instrument(tracer_provider=provider)


def support_agent(url: str, tools: list[Any]) -> Agent:
    generator = OpenAIChatGenerator(api_key=KEY, model="gpt-fake", api_base_url=url + "/v1")
    agent = Agent(
        chat_generator=generator,
        tools=tools,
        system_prompt=harness.SYSTEM_PROMPT,
        max_agent_steps=6,
        raise_on_tool_invocation_failure=False,
    )
    agent.warm_up()
    return agent


def policy_store(url: str) -> InMemoryDocumentStore:
    """The three policies, embedded by the fake server, in an in-memory store (not traced)."""
    store = InMemoryDocumentStore()
    embedder = OpenAIDocumentEmbedder(
        api_key=KEY, model="fake-embedding", api_base_url=url + "/v1", progress_bar=False
    )
    token = otel_context.attach(
        otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
    )
    try:
        documents = embedder.run(documents=[Document(content=p) for p in fake_models.POLICIES])[
            "documents"
        ]
    finally:
        otel_context.detach(token)
    store.write_documents(documents)
    return store


def run_agent(run: str, url: str) -> Any:
    result = support_agent(url, TOOLS).run(messages=[ChatMessage.from_user(harness.question(run))])
    return result["last_message"].text


def run_retrieval(url: str) -> Any:
    rag = Pipeline()
    rag.add_component(
        "embedder",
        OpenAITextEmbedder(api_key=KEY, model="fake-embedding", api_base_url=url + "/v1"),
    )
    rag.add_component(
        "retriever", InMemoryEmbeddingRetriever(document_store=policy_store(url), top_k=1)
    )
    rag.add_component(
        "prompt",
        ChatPromptBuilder(template=RAG_TEMPLATE, required_variables=["documents", "question"]),
    )
    # the order tools only: the policy comes from the retriever, not from a tool
    rag.add_component("agent", support_agent(url, TOOLS[:2]))
    rag.connect("embedder.embedding", "retriever.query_embedding")
    rag.connect("retriever.documents", "prompt.documents")
    rag.connect("prompt.prompt", "agent.messages")
    question = harness.question("retrieval")
    result = rag.run({"embedder": {"text": question}, "prompt": {"question": question}})
    return result["agent"]["last_message"].text


if __name__ == "__main__":
    harness.main(
        "haystack",
        instrument,
        {
            "pass": lambda url: run_agent("pass", url),
            "tool-error": lambda url: run_agent("tool-error", url),
            "retrieval": run_retrieval,
        },
    )
