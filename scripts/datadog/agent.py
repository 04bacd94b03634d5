"""The support agent of the framework corpus on the raw OpenAI and Anthropic clients, traced by ddtrace.

Imported by ``scripts/make_datadog_fixtures.py`` after it has set ddtrace's settings (environment
variables): importing this module patches ddtrace's openai and anthropic integrations and, when
``DD_LLMOBS_ENABLED`` is true, enables LLM Observability. Each tool is an LLM Observability
``@tool``, each run a ``@workflow``; the model is the fake server of ``fake_models`` on loopback.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import anthropic
import fake_models
import openai
from ddtrace import patch
from ddtrace.llmobs import LLMObs
from ddtrace.llmobs.decorators import tool, workflow
from ddtrace.trace import tracer

patch(openai=True, anthropic=True)
if os.environ.get("DD_LLMOBS_ENABLED") == "true":
    LLMObs.enable(ml_app="support-agent", agentless_enabled=False)

SYSTEM_PROMPT = (
    "You are a customer-support agent. Use the tools to look orders up, track shipments and check "
    "the policies before you answer."
)
ORDER_QUESTION = "Where is my order A-1001, and can I get a refund if it arrives late?"
_failing: set[str] = set()


class ToolFailure(RuntimeError):
    pass


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up by its id."""
    if "lookup_order" in _failing:
        raise ToolFailure("order service unavailable (HTTP 503)")
    return dict(fake_models.ORDER, order_id=order_id)


@tool
def track_shipment(tracking_id: str) -> dict[str, Any]:
    """Where a shipment is, by its tracking id."""
    return dict(fake_models.SHIPMENT, tracking_id=tracking_id)


@tool
def search_policies(query: str) -> list[str]:
    """The store policies that match a query."""
    words = set(query.lower().split())
    return [p for p in fake_models.POLICIES if words & set(p.lower().replace(":", " ").split())][:2]


TOOLS: dict[str, Callable[..., Any]] = {
    "lookup_order": lookup_order,
    "track_shipment": track_shipment,
    "search_policies": search_policies,
}
PARAMETERS = {
    "lookup_order": "order_id",
    "track_shipment": "tracking_id",
    "search_policies": "query",
}


def _call(name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """A tool's result as the text the model is sent, and whether it failed."""
    try:
        return json.dumps(TOOLS[name](**arguments)), False
    except ToolFailure as exc:
        return f"error: {exc}", True


def _openai_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": function.__doc__,
                "parameters": {
                    "type": "object",
                    "properties": {PARAMETERS[name]: {"type": "string"}},
                    "required": [PARAMETERS[name]],
                },
            },
        }
        for name, function in TOOLS.items()
    ]


@workflow(name="support_run")
def openai_agent(question: str, url: str) -> str | None:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="fake", max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=_openai_tools(), temperature=0
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            output, _ = _call(call.function.name, json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return None


@workflow(name="support_run")
def anthropic_agent(question: str, url: str) -> str | None:
    client = anthropic.Anthropic(base_url=url, api_key="fake", max_retries=0)
    schemas = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in _openai_tools()
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(6):
        reply = client.messages.create(
            model="claude-fake",
            max_tokens=256,
            system=SYSTEM_PROMPT,
            messages=messages,
            tools=schemas,
        )
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text")
        results = []
        for call in calls:
            output, failed = _call(call.name, dict(call.input))
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": output,
                    "is_error": failed,
                }
            )
        messages.append({"role": "user", "content": results})
    return None


def run_all(runs: Iterable[str]) -> None:
    """Each run against the fake model server under a plain APM span of the application's own
    (``support.request``, as a web request's span would be), its answer said on standard error."""
    _, url = fake_models.serve()
    for run in runs:
        _failing.clear()
        if run.endswith("tool-error"):
            _failing.add("lookup_order")
        question = fake_models.PARALLEL_QUESTION if run.endswith("parallel") else ORDER_QUESTION
        agent = anthropic_agent if run.startswith("anthropic") else openai_agent
        with tracer.trace("support.request", resource=run, span_type="web"):
            answer = agent(question, url)
        print(f"datadog {run}: {str(answer)[:80]!r}", file=sys.stderr)
