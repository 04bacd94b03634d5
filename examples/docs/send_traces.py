"""A stand-in for your own agent: one short run sent over OTLP/HTTP, as an instrumented app sends it.

The docs' receiver example points this at `agent-replay serve`: the endpoint comes from
``OTEL_EXPORTER_OTLP_ENDPOINT``, as for any OpenTelemetry app, so nothing here names the receiver.
The spans carry OpenInference attributes (an agent span, a model call, a tool call), which is what
an instrumented framework writes and what the importer turns into steps.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python examples/docs/send_traces.py
"""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def main() -> None:
    provider = TracerProvider()
    # Simple rather than batched: the run is sent before the script ends, span by span.
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("docs-example")
    question = "Why is checkout failing?"
    with tracer.start_as_current_span("investigate") as root:
        root.set_attribute("openinference.span.kind", "AGENT")
        root.set_attribute("input.value", question)
        with tracer.start_as_current_span("ChatCompletion") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.model_name", "stand-in-model")
            llm.set_attribute("llm.input_messages.0.message.role", "user")
            llm.set_attribute("llm.input_messages.0.message.content", question)
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", "Checking the deploys.")
        with tracer.start_as_current_span("list_deploys") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            tool.set_attribute("tool.name", "list_deploys")
            tool.set_attribute("input.value", json.dumps({"service": "checkout"}))
            tool.set_attribute("output.value", json.dumps([{"version": "v841"}]))
        root.set_attribute("output.value", "deploy v841")
    provider.shutdown()


if __name__ == "__main__":
    main()
