"""The support agent as a hand-written tool loop on the OpenAI client (Chat Completions), traced by
LangSmith through its OpenTelemetry export (``LANGSMITH_TRACING_MODE=otel``: runs become OTel spans,
nothing is sent to LangSmith itself).

The client is wrapped with ``wrap_openai`` (a run of type ``llm`` for each completion) and each
model call is made inside a ``@traceable(run_type="llm")`` function as well, as users re-wrap a
client call to name it or add metadata: every model call is recorded by two ``llm`` runs, one
inside the other. The tools are ``@traceable(run_type="tool")`` functions, the loop a ``chain`` run.

LangSmith's OTel exporter writes its spans through the tracer provider already set (the harness's,
which `harness.main` sets before ``instrument``); without one it would build its own, exporting to
``OTEL_EXPORTER_OTLP_ENDPOINT``. `_loopback_only` makes any connection to a non-loopback address
fail loudly, so nothing leaves the machine whatever the library attempts.
"""

from __future__ import annotations

import os
import socket

os.environ["LANGSMITH_TRACING"] = "true"
os.environ["LANGSMITH_TRACING_MODE"] = "otel"
os.environ["LANGSMITH_API_KEY"] = "fake"
os.environ["LANGSMITH_ENDPOINT"] = "http://127.0.0.1:9"  # never reached in otel mode

_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and not str(host).startswith(("127.", "::1", "localhost")):
        raise OSError(f"langsmith-otel corpus: refusing a connection to {host!r} (loopback only)")
    return _connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

import json  # noqa: E402
from typing import Any  # noqa: E402

import harness  # noqa: E402
from langsmith import Client, traceable  # noqa: E402
from langsmith.run_helpers import tracing_context  # noqa: E402
from langsmith.wrappers import wrap_openai  # noqa: E402
from openai import OpenAI  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

FUNCTIONS = {
    "lookup_order": harness.lookup_order,
    "track_shipment": harness.track_shipment,
    "search_policies": harness.search_policies,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": function.__doc__,
            "parameters": {
                "type": "object",
                "properties": {parameter: {"type": "string"} for parameter in parameters},
                "required": list(parameters),
            },
        },
    }
    for name, function, parameters in (
        ("lookup_order", harness.lookup_order, ["order_id"]),
        ("track_shipment", harness.track_shipment, ["tracking_id"]),
        ("search_policies", harness.search_policies, ["query"]),
    )
]

_client: list[Client] = []


def instrument(provider: TracerProvider) -> None:
    _client.append(Client())  # in otel mode: its exporter writes through ``provider``


@traceable(run_type="llm", name="support model call")
def ask(client: Any, messages: list[dict[str, Any]]) -> Any:
    """One model call, re-wrapped: the wrapped client records it again inside this run."""
    response = client.chat.completions.create(model="gpt-fake", messages=messages, tools=TOOLS)
    return response.choices[0].message


def _run_tool(name: str, arguments: dict[str, Any]) -> Any:
    @traceable(run_type="tool", name=name)
    def tool(**kwargs: Any) -> Any:
        return FUNCTIONS[name](**kwargs)

    return tool(**arguments)


@traceable(run_type="chain", name="support agent")
def agent(question: str, url: str) -> str:
    client = wrap_openai(OpenAI(base_url=f"{url}/v1", api_key="fake", max_retries=0))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": harness.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        message = ask(client, messages)
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return str(message.content)
        for call in message.tool_calls:
            try:
                result = _run_tool(call.function.name, json.loads(call.function.arguments))
                content = json.dumps(result)
            except harness.ToolFailure as failure:
                content = json.dumps({"error": str(failure)})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return "gave up"


def run(name: str, url: str) -> str:
    with tracing_context(client=_client[0], enabled=True):
        answer = agent(harness.question(name), url)
    _client[0].flush()
    return answer


if __name__ == "__main__":
    harness.main(
        "langsmith-otel", instrument, {r: (lambda url, r=r: run(r, url)) for r in harness.ALL_RUNS}
    )
