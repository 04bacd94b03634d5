"""Write ``examples/formats/console-exporter.json``: what the OpenTelemetry Python SDK's
``ConsoleSpanExporter`` prints for a small agent run (a model call that asks for a tool, the tool,
the model's answer), as ``agent-replay import`` reads it back (objects back to back).

    python scripts/make_console_example.py           # rewrite the file
    python scripts/make_console_example.py --check   # exit 1 if the committed file is stale

The spans are made by the real SDK with fixed ids and times, so the file is the same every run; the
exporter's own output is written unchanged.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import set_span_in_context

OUT = Path(__file__).resolve().parents[1] / "examples" / "formats" / "console-exporter.json"
T0 = 1_765_000_000_000_000_000  # a fixed start, in nanoseconds


class _FixedIds(IdGenerator):
    def __init__(self) -> None:
        self._span = 0

    def generate_trace_id(self) -> int:
        return 0x4BF92F3577B34DA6A3CE929D0E0E4736

    def generate_span_id(self) -> int:
        self._span += 1
        return 0x00F067AA0BA90200 + self._span


def _messages(*pairs: tuple[str, str]) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}
                       for role, text in pairs])  # fmt: skip


def render() -> str:
    """The exporter's output for the run."""
    sink = io.StringIO()
    provider = TracerProvider(
        resource=Resource({"service.name": "weather-agent"}), id_generator=_FixedIds()
    )
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sink)))
    tracer = provider.get_tracer("examples.weather_agent")
    question = ("user", "What is the weather in Paris?")
    agent = tracer.start_span(
        "invoke_agent weather", start_time=T0,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
    )  # fmt: skip
    inside = set_span_in_context(agent)
    ask = tracer.start_span(
        "chat gpt-4o-mini", context=inside, start_time=T0 + 1_000_000,
        attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": _messages(question),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "tool_call", "id": "call_1", "name": "get_weather",
                 "arguments": {"city": "Paris"}}]}]),
        },
    )  # fmt: skip
    ask.end(end_time=T0 + 400_000_000)
    tool = tracer.start_span(
        "execute_tool get_weather", context=inside, start_time=T0 + 401_000_000,
        attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            "gen_ai.tool.call.result": '{"forecast": "sunny", "celsius": 21}',
        },
    )  # fmt: skip
    tool.end(end_time=T0 + 450_000_000)
    answer = tracer.start_span(
        "chat gpt-4o-mini", context=inside, start_time=T0 + 451_000_000,
        attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": _messages(question),
            "gen_ai.output.messages": _messages(("assistant", "Sunny and 21 °C in Paris.")),
        },
    )  # fmt: skip
    answer.end(end_time=T0 + 900_000_000)
    agent.end(end_time=T0 + 901_000_000)
    provider.shutdown()
    return sink.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        stale = not OUT.exists() or OUT.read_text() != text
        print(f"{OUT}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
