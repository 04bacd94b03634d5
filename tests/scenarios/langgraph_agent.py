"""A support agent on LangGraph as a user writes one: a graph of a model node on ``ChatAnthropic``
(its tools bound) and LangGraph's ``ToolNode`` running three ordinary sync tools, which it runs on
worker threads. The tools are also ``@otel_replay.tool`` steps; nothing else of agent-replay is in
it. The shipping service can be down (``shipping_down``): the tracking tool then returns an error,
and the model apologises instead of answering, the run that fails because of a tool. Recorded as
it is:

    agent-replay record --agent tests/scenarios/langgraph_agent.py:support --instrument anthropic \\
        --input '{"question": "...", "base_url": "http://127.0.0.1:8000"}'
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import SecretStr

import otel_replay

MODEL = "support-claude"
SYSTEM = "You are a customer-support agent. Use the tools before you answer."
ORDER = {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
SHIPMENT = {"tracking_id": "TRK-42", "status": "delayed", "eta": "2026-12-04"}
OUTAGE = {"error": "shipping service unavailable (HTTP 503)"}
POLICY = (
    "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping cost."
)

#: What the world is like for this run (the shipping service up or down), and the threads the
#: tools ran on (a test checks they were not the agent's).
WORLD = {"shipping_down": False}
TOOL_THREADS: list[str] = []


@tool
@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    TOOL_THREADS.append(threading.current_thread().name)
    return dict(ORDER, order_id=order_id)


@tool
@otel_replay.tool
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is."""
    TOOL_THREADS.append(threading.current_thread().name)
    if WORLD["shipping_down"]:
        return dict(OUTAGE)
    return dict(SHIPMENT, tracking_id=tracking_id)


@tool
@otel_replay.tool
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    TOOL_THREADS.append(threading.current_thread().name)
    return [POLICY]


TOOLS = [lookup_order, track_shipment, search_policies]


def graph(base_url: str) -> Any:
    """The graph: the model node, then the tools it asked for, until it answers."""
    model = ChatAnthropic(  # type: ignore[call-arg]  # pydantic aliases
        model=MODEL, base_url=base_url, api_key=SecretStr("not-needed-locally"), max_retries=0
    ).bind_tools(TOOLS)

    def agent(state: MessagesState) -> dict[str, list[AnyMessage]]:
        return {"messages": [model.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

    built = StateGraph(MessagesState)
    built.add_node("agent", agent)
    built.add_node("tools", ToolNode(TOOLS))
    built.add_edge(START, "agent")
    built.add_conditional_edges("agent", tools_condition)
    built.add_edge("tools", "agent")
    return built.compile()


def support(question: str, base_url: str, shipping_down: bool = False) -> str:
    """Run the graph on one question and return the agent's answer."""
    WORLD["shipping_down"] = shipping_down
    final = graph(base_url).invoke({"messages": [HumanMessage(question)]})
    last = final["messages"][-1]
    assert isinstance(last, AIMessage)
    return str(last.text)
