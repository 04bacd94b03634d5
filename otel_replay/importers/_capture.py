"""Which instrumentation wrote a step's span, and the setting of it that closes each capture gap
``lint`` finds (`otel_replay.replayable`): inputs hidden or not recorded (a model call's messages
or their content, a tool's arguments), outputs not recorded, values cut by a length limit.

One table, `CAPTURES`: an instrumentation is told by its instrumentation scope name (a prefix) or
by an attribute only it writes; the first row that matches a span names it. Its settings are the
library's own names, each checked against the library's source (cited beside the row). Import
keeps, in the run's metadata, which steps each instrumentation wrote (``instrumentation``:
``{"openinference": [0, 2]}``); `lint` reads it back for a stored run as for a file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from otel_replay.importers._spans import SpanRecord
from otel_replay.replayable import ReplayabilityGap

#: The OpenTelemetry SDKs' attribute length limit (Python: opentelemetry-sdk
#: ``opentelemetry/sdk/environment_variables/__init__.py``; the JS SDK reads the same names). The
#: span limit wins over the general one.
SDK_LENGTH = (
    "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT and OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT unset or larger "
    "(SpanLimits(max_attribute_length=None) in code)"
)
#: The OpenAI Agents SDK leaves model and tool data out of its traces unless told
#: (openai-agents ``agents/run_config.py``: ``RunConfig.trace_include_sensitive_data``, whose
#: default is read from ``OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA``; the SDK's
#: ``OPENAI_AGENTS_DONT_LOG_MODEL_DATA`` is about its debug log, not its traces).
_AGENTS_SDK = (
    "RunConfig(trace_include_sensitive_data=True) in the OpenAI Agents SDK "
    "(OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=true)"
)
#: openinference-instrumentation ``openinference/instrumentation/config.py``: the environment
#: variables and the ``TraceConfig`` fields of the same names.
_OI_INPUTS = (
    "OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES and OPENINFERENCE_HIDE_INPUT_TEXT "
    "unset or false (TraceConfig(hide_inputs=False, hide_input_messages=False, "
    "hide_input_text=False))"
)
_OI_OUTPUTS = (
    "OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_OUTPUT_MESSAGES and "
    "OPENINFERENCE_HIDE_OUTPUT_TEXT unset or false (TraceConfig(hide_outputs=False, "
    "hide_output_messages=False, hide_output_text=False))"
)
_OI_LENGTH = f"{SDK_LENGTH}; images: OPENINFERENCE_BASE64_IMAGE_MAX_LENGTH"
#: traceloop/openllmetry, every instrumentation's ``should_send_prompts()`` (``utils.py``).
_TRACELOOP = "TRACELOOP_TRACE_CONTENT=true"
#: opentelemetry-python-contrib: the GenAI instrumentations (openai-v2, google-genai, vertexai) and
#: ``util/opentelemetry-util-genai`` (whose enum values need the latest experimental conventions).
_GENAI = (
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (with OTEL_SEMCONV_STABILITY_OPT_IN="
    "gen_ai_latest_experimental: SPAN_ONLY or SPAN_AND_EVENT)"
)


class Capture(NamedTuple):
    """An instrumentation: its key (kept in a run's metadata) and name, the scope name prefixes
    and the attributes (a key, or a prefix ending in ``.``) that show it wrote a span, and the
    setting that records a span's inputs, its outputs, and values whole."""

    key: str
    name: str
    scopes: tuple[str, ...]
    markers: tuple[str, ...]
    inputs: str
    outputs: str
    length: str = SDK_LENGTH

    def writes(self, span: SpanRecord) -> bool:
        scope = span.scope_name
        if scope and any(scope == s or scope.startswith(s + ".") for s in self.scopes):
            return True
        return any(
            key in span.attributes
            if not key.endswith(".")
            else any(k.startswith(key) for k in span.attributes)
            for key in self.markers
        )


#: In order: the first row that writes a span names its instrumentation (the Agents SDK's
#: instrumentors before their families). A scope is the name or a name below it
#: (``openinference.instrumentation.openai``); the contrib GenAI row goes by its scopes only, since
#: frameworks write the GenAI attributes too, with settings of their own.
CAPTURES: tuple[Capture, ...] = (
    Capture("openinference-openai-agents", "OpenInference's OpenAI Agents SDK instrumentation",
            ("openinference.instrumentation.openai_agents",), (),
            f"{_OI_INPUTS}, and {_AGENTS_SDK}", f"{_OI_OUTPUTS}, and {_AGENTS_SDK}", _OI_LENGTH),
    Capture("openllmetry-openai-agents", "OpenLLMetry's OpenAI Agents SDK instrumentation",
            ("opentelemetry.instrumentation.openai_agents",), (),
            f"{_TRACELOOP}, and {_AGENTS_SDK}", f"{_TRACELOOP}, and {_AGENTS_SDK}"),
    Capture("openinference", "OpenInference", ("openinference.instrumentation",),
            ("openinference.span.kind",), _OI_INPUTS, _OI_OUTPUTS, _OI_LENGTH),
    Capture("openllmetry", "OpenLLMetry (Traceloop)", ("traceloop",),
            ("traceloop.", "llm.request.type"), _TRACELOOP, _TRACELOOP),
    # the AI SDK's telemetry settings (vercel/ai ``packages/ai/src/telemetry/telemetry-settings.ts``)
    Capture("vercel-ai", "the Vercel AI SDK", ("ai",), ("ai.operationId",),
            "experimental_telemetry: { isEnabled: true, recordInputs: true }",
            "experimental_telemetry: { isEnabled: true, recordOutputs: true }"),
    # pydantic-ai ``InstrumentationSettings(include_content=...)``, which logfire's
    # ``instrument_pydantic_ai(include_content=...)`` passes on
    Capture("logfire", "Pydantic AI / Logfire", ("pydantic-ai", "logfire"),
            ("logfire.span_type", "logfire.msg_template"),
            "InstrumentationSettings(include_content=True) (logfire.instrument_pydantic_ai("
            "include_content=True))",
            "InstrumentationSettings(include_content=True) (logfire.instrument_pydantic_ai("
            "include_content=True))"),
    # langfuse ``langfuse/_client/observe.py`` and ``environment_variables.py``
    Capture("langfuse", "Langfuse", ("langfuse-sdk", "langfuse"), ("langfuse.observation.type",),
            "@observe(capture_input=True), LANGFUSE_OBSERVE_DECORATOR_IO_CAPTURE_ENABLED=true",
            "@observe(capture_output=True), LANGFUSE_OBSERVE_DECORATOR_IO_CAPTURE_ENABLED=true"),
    # mlflow ``mlflow/tracing``: a traced function's arguments and result are its span's inputs
    # and outputs; no setting hides them
    Capture("mlflow", "MLflow", ("mlflow",), ("mlflow.spanType",),
            "@mlflow.trace on the function (its arguments are recorded), or "
            "mlflow.<library>.autolog() for a client library's calls",
            "@mlflow.trace on the function (its result is recorded), or "
            "mlflow.<library>.autolog() for a client library's calls"),
    # ddtrace: with LLM Observability off its LLM integrations record no messages, only the
    # model and token counts (``ddtrace/llmobs/_llmobs.py``); an event larger than
    # DD_LLMOBS_EVENT_SIZE_BYTES loses its input and output (``ddtrace/llmobs/_writer.py``)
    Capture("ddtrace", "ddtrace (Datadog)", ("ddtrace",),
            ("_dd.llmobs.span_kind", "datadog.llmobs.span.kind"),
            "LLM Observability on (DD_LLMOBS_ENABLED=1, or LLMObs.enable()); a function's "
            "arguments: @tool, @workflow or LLMObs.annotate(input_data=...); an event whose input "
            "was dropped for its size (collection_errors: dropped_io): DD_LLMOBS_EVENT_SIZE_BYTES "
            "larger",
            "LLM Observability on (DD_LLMOBS_ENABLED=1, or LLMObs.enable()); a function's result: "
            "@tool, @workflow or LLMObs.annotate(output_data=...); an event whose output was "
            "dropped for its size (collection_errors: dropped_io): DD_LLMOBS_EVENT_SIZE_BYTES "
            "larger",
            "DD_LLMOBS_EVENT_SIZE_BYTES larger (an event over it loses its input and output)"),
    Capture("otel-genai", "an OpenTelemetry GenAI instrumentation",
            ("opentelemetry.instrumentation.openai_v2", "opentelemetry.instrumentation.google_genai",
             "opentelemetry.instrumentation.vertexai", "opentelemetry.util.genai"),
            (), _GENAI, _GENAI),
    Capture("gen-ai", "a GenAI instrumentation", (), ("gen_ai.operation.name", "gen_ai.system"),
            f"if an OpenTelemetry contrib instrumentation wrote it, {_GENAI}; a framework's own "
            "has a setting of its own", f"if an OpenTelemetry contrib instrumentation wrote it, "
            f"{_GENAI}; a framework's own has a setting of its own"),
)  # fmt: skip
_BY_KEY = {capture.key: capture for capture in CAPTURES}

#: Which of a span's settings closes each gap (the others are not the instrumentation's to close:
#: a rebuilt step, a trace of no operations, a conversation kept on the server).
_SIDES: Mapping[ReplayabilityGap, str] = {
    ReplayabilityGap.NO_MESSAGES: "inputs",
    ReplayabilityGap.NO_CONTENT: "inputs",
    ReplayabilityGap.NO_ARGUMENTS: "inputs",
    ReplayabilityGap.NO_INPUT: "inputs",
    ReplayabilityGap.HIDDEN_INPUT: "inputs",
    ReplayabilityGap.NO_RESULT: "outputs",
    ReplayabilityGap.HIDDEN_OUTPUT: "outputs",
    ReplayabilityGap.TRUNCATED_INPUT: "length",
    ReplayabilityGap.TRUNCATED_OUTPUT: "length",
}


def instrumentation_of(span: SpanRecord) -> str | None:
    """The key of the instrumentation that wrote ``span`` (a row of `CAPTURES`), or None."""
    return next((capture.key for capture in CAPTURES if capture.writes(span)), None)


def step_instrumentation(
    spans: Sequence[SpanRecord], step_of_span: Mapping[int, int]
) -> dict[str, list[int]]:
    """Which steps each instrumentation wrote: ``step_of_span`` maps a span's position to the step
    read from it."""
    found: dict[str, list[int]] = {}
    for position, step in sorted(step_of_span.items(), key=lambda item: item[1]):
        key = instrumentation_of(spans[position])
        if key is not None:
            found.setdefault(key, []).append(step)
    return found


def closing(metadata: Mapping[str, Any], step: int | None, gap: ReplayabilityGap) -> Capture | None:
    """The instrumentation that wrote ``step`` (as the run's metadata keeps it), when it has a
    setting that closes ``gap``; a cut value without a known instrumentation is the SDK's limit."""
    side = _SIDES.get(gap)
    if side is None or step is None:
        return None
    kept = metadata.get("instrumentation")
    if isinstance(kept, dict):
        for key, steps in kept.items():
            if isinstance(steps, list) and step in steps and key in _BY_KEY:
                return _BY_KEY[key]
    return _SDK if side == "length" else None


def setting(capture: Capture, gap: ReplayabilityGap) -> str:
    """What of ``capture`` closes ``gap`` (one `closing` found it for)."""
    return str(getattr(capture, _SIDES[gap]))


#: What closes a cut value when no row names the span's instrumentation.
_SDK = Capture("otel-sdk", "the OpenTelemetry SDK", (), (), "", "")
