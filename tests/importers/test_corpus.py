"""Every published trace file in ../shared/trace-corpus imports, with span and step counts; one golden
test per format. The corpus is read in place, never copied into the project."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_replay import ReadOptions, StepKind, StepStatus, TraceFormatError, read_path
from otel_replay.importers import Format
from otel_replay.importers._semconv import build_step, recognise
from otel_replay.importers._sniff import detect
from otel_replay.importers._spans import SpanRecord

# file: (detected format, spans read, [(trajectory id, steps, outcome), ...])
CORPUS_FILES: dict[str, tuple[Format, int, list[tuple[str, int, float | None]]]] = {
    "genai-interlingua/openinference-in.json": (
        Format.OTLP_JSON, 1, [("9ed94f9bdc36b397e11c51f77d49e01a", 1, None)]
    ),
    "genai-interlingua/raw-in.json": (
        Format.OTLP_JSON, 1, [("053074667b1113278073667614bb3e19", 1, None)]
    ),
    "genai-interlingua/vercel-in.json": (
        Format.OTLP_JSON, 3, [("c4a1f7e29b0d3856a1f2c3d4e5f60718", 2, None)]
    ),
    "jaeger/link_attributes_trace.json": (
        Format.OTLP_JSON, 1, [("00000000000000000000000000000226", 1, None)]
    ),
    "jaeger/log_tags_trace.json": (
        Format.OTLP_JSON, 1, [("00000000000000000000000000000002", 1, None)]
    ),
    "jaeger/otel_traces_01.json": (
        Format.OTLP_JSON,
        4,
        [("00000000000000010000000000000000", 2, None), ("00000000000000020000000000000000", 2, None)],
    ),
    "openinference-vercel/ai-generateText-doGenerate.json": (
        Format.OTLP_JSON,
        2,
        [("b3e700af9eab81e19f72f964d62a35af", 1, None), ("edff2fc5854be6170e8cccccec0c82cf", 1, None)],
    ),
    "otel-spec/file-exporter-example-traces.jsonl": (Format.OTLP_JSON, 8, [("untraced", 2, 0.0)] * 4),
    "otel-spec/legacy-instrumentationLibrarySpans-traces.jsonl": (
        Format.OTLP_JSON, 8, [("untraced", 2, 0.0)] * 4
    ),
    "otlp-proto-examples/trace.json": (
        Format.OTLP_JSON, 1, [("5b8efff798038103d269b633813fc60c", 1, None)]
    ),
    "otlp-proto-examples/trace.protobuf-bin": (
        Format.OTLP_PROTO, 1, [("5b8efff798038103d269b633813fc60c", 1, None)]
    ),
    "ottl-playground/traces.json": (
        Format.OTLP_JSON, 2, [("5b8efff798038103d269b633813fc60c", 1, None)]
    ),
    # flat span lists and any-agent traces: their steps in tests/importers/test_platform_flat.py
    "platforms/strands-evals-spans/openai_agents_genai_live_spans.json": (
        Format.OTLP_JSON, 17, [("9fa516c6d3cd456d5b2bf8349dcfa39b", 11, None)]
    ),
    "platforms/strands-evals-spans/pydantic_ai_live_spans.json": (
        Format.OTLP_JSON, 4, [("25664b7144ee8f957a50b6ff74dfa337", 3, None)]
    ),
    "platforms/strands-evals-spans/smolagents_live_spans.json": (
        Format.OTLP_JSON, 7, [("f63de90470d666fccdf71a2b9cb7d089", 4, None)]
    ),
    "platforms/any-agent-traces/LANGCHAIN_trace.json": (
        Format.OTLP_JSON, 7, [("572318454595034fe5076610d6400542", 6, None)]
    ),
    "platforms/any-agent-traces/OPENAI_trace.json": (
        Format.OTLP_JSON, 6, [("4bedea77bb33b9c5f280371eae21ea97", 5, None)]
    ),
    # Langfuse exports and Vercel AI SDK spans: their steps in test_platform_langfuse.py and
    # test_platform_vercel.py
    "platforms/langfuse-framework-traces/agno-2025-06-11.trace.json": (
        Format.OTLP_JSON, 6, [("080130871f53145aecf7c29d5dfb6e4c", 3, None)]
    ),
    "platforms/langfuse-framework-traces/autogen-2025-06-06.trace.json": (
        Format.OTLP_JSON, 2, [("1b72c51fabed12ae7df83bfd4a09f545", 1, None)]
    ),
    "platforms/langfuse-framework-traces/crewai-2025-07-11.trace.json": (
        Format.OTLP_JSON, 6, [("a287bb31e317433610d8827617471140", 1, None)]
    ),
    "platforms/langfuse-framework-traces/langgraph-python-2025-08-22.trace.json": (
        Format.OTLP_JSON, 9, [("e1fde3efec57ce8a69bafd3fb928a7eb", 3, None)]
    ),
    "platforms/langfuse-framework-traces/llamaindex-2025-06-05.trace.json": (
        Format.OTLP_JSON, 2, [("12ea412956f99347b0503c1144acd0ec", 1, None)]
    ),
    "platforms/langfuse-framework-traces/openai-agents-2025-09-30.trace.json": (
        Format.OTLP_JSON, 5, [("fee618f96dc31e0ca38b2f7b26eb8b29", 3, None)]
    ),
    "platforms/langfuse-framework-traces/pydantic-ai-2025-06-06.trace.json": (
        Format.OTLP_JSON, 3, [("25f4bdeebaab60e6e1bee7e8469554bc", 1, None)]
    ),
    "platforms/langfuse-framework-traces/vercel-aisdk-2025-11-17.trace.json": (
        Format.OTLP_JSON, 3, [("df41e597d0a85e0d7a6ae8ebfaa70aa0", 2, None)]
    ),
    "platforms/openinference-vercel/ai-embed.json": (
        Format.OTLP_JSON, 1, [("91621bbaaf1920e94ae594e91b3a99fd", 1, None)]
    ),
    "platforms/openinference-vercel/ai-generateText.json": (
        Format.OTLP_JSON,
        2,
        [("700d5f98fe2420adcf6ab0822f7a323c", 1, None), ("673a889f59126f8b4c90dce5a1f99368", 1, None)],
    ),
    "platforms/openinference-vercel/all-spans.json": (
        Format.OTLP_JSON,
        10,
        [
            ("b3e700af9eab81e19f72f964d62a35af", 1, None),
            ("700d5f98fe2420adcf6ab0822f7a323c", 1, None),
            ("edff2fc5854be6170e8cccccec0c82cf", 1, None),
            ("673a889f59126f8b4c90dce5a1f99368", 1, None),
            ("8f60802815d6e97da2dbc4708a8e5c7b", 1, None),
            ("f99cc53c9bb8fe40462f7a48999e7088", 1, None),
            ("478d4dcc697ecfabc5e7a3d6e4216291", 1, None),
            ("8185b815e471184c6525a601a042be42", 1, None),
            ("045d21a7f69972edf509fe0ff911f3f5", 1, None),
            ("91621bbaaf1920e94ae594e91b3a99fd", 1, None),
        ],
    ),
}  # fmt: skip

NOT_TRACES = ("otlp-proto-examples/logs.json", "otlp-proto-examples/events.json")

#: Exports of observability platforms and eval harnesses (Langfuse, Phoenix through Vercel's
#: OpenInference, any-agent, flat span lists), which are not OTLP documents. Those read right have
#: a row in `CORPUS_FILES` (their steps: tests/importers/test_platform_*.py); until a file has
#: one it is held to the rule for any input: it imports, or it is refused with one line naming the
#: file; never a traceback.
PLATFORMS = "platforms"


def _trace_files(corpus: Path) -> set[str]:
    return {
        str(p.relative_to(corpus))
        for p in corpus.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl", ".protobuf-bin")
    }


def test_the_table_covers_every_trace_file(corpus: Path) -> None:
    found = _trace_files(corpus)
    not_trace_files = {str(p.relative_to(corpus)) for p in corpus.glob("otel-semconv-genai/*")}
    attribute_maps = {
        str(p.relative_to(corpus)) for p in corpus.glob("openinference-genai-fixtures/*")
    }
    platform_exports = {name for name in found if name.startswith(f"{PLATFORMS}/")}
    rest = found - not_trace_files - attribute_maps - set(NOT_TRACES) - platform_exports
    assert rest | (platform_exports & set(CORPUS_FILES)) == set(CORPUS_FILES)


def test_a_platform_export_imports_or_is_refused_in_one_line(corpus: Path) -> None:
    exports = sorted(n for n in _trace_files(corpus) if n.startswith(f"{PLATFORMS}/"))
    if not exports:
        pytest.skip(f"no platform exports under {corpus / PLATFORMS}")
    for name in exports:
        if name in CORPUS_FILES:
            continue  # read right: its row says what it holds
        try:
            runs = list(read_path(corpus / name, options=ReadOptions()))
        except TraceFormatError as exc:
            message = str(exc)
            assert str(corpus / name) in message and "\n" not in message.strip(), message
        else:
            assert runs and all(run.steps for run in runs), name


@pytest.mark.parametrize("name", sorted(CORPUS_FILES))
def test_corpus_file_imports(corpus: Path, name: str) -> None:
    fmt, spans, expected = CORPUS_FILES[name]
    assert detect(corpus / name) is fmt
    options = ReadOptions()
    runs = list(read_path(corpus / name, options=options))
    assert options.report.spans == spans
    assert not options.report.skipped and not options.report.warnings
    got = [
        (r.id if not r.id.startswith("untraced-") else "untraced", len(r.steps), r.outcome)
        for r in runs
    ]
    assert got == expected


@pytest.mark.parametrize("name", NOT_TRACES)
def test_logs_files_are_refused_with_a_reason(corpus: Path, name: str) -> None:
    with pytest.raises(TraceFormatError, match="OTLP logs file"):
        list(read_path(corpus / name))


def test_golden_otlp_json(corpus: Path) -> None:
    """Upper-case hex ids, int64 timestamps as strings (exact, never via float), a missing parent."""
    (run,) = read_path(corpus / "otlp-proto-examples/trace.json")
    (step,) = run.steps
    assert run.id == "5b8efff798038103d269b633813fc60c"
    assert (step.kind, step.name, step.status) == (
        StepKind.OTHER,
        "I'm a server span",
        StepStatus.OK,
    )
    assert step.span_id == "eee19b7ec3c1b174" and step.parent_span_id == "eee19b7ec3c1b173"
    assert step.start_time_unix_nano == 1544712660000000000
    assert step.end_time_unix_nano == 1544712661000000000
    assert step.inputs == {"my.span.attr": "some value"}
    assert run.metadata["service"] == "my.service"


def test_golden_protobuf_equals_its_json_twin(corpus: Path) -> None:
    (from_json,) = read_path(corpus / "otlp-proto-examples/trace.json")
    (from_proto,) = read_path(corpus / "otlp-proto-examples/trace.protobuf-bin")
    assert from_proto.steps == from_json.steps
    assert from_proto.final_hash == from_json.final_hash


def test_golden_file_exporter_lines(corpus: Path) -> None:
    """Empty ids everywhere: each line's spans are one run; status code 2 with its message."""
    runs = list(read_path(corpus / "otel-spec/file-exporter-example-traces.jsonl"))
    assert len({r.id for r in runs}) == 4
    a, b = runs[0].steps
    assert (a.name, a.status, a.error) == ("operationA", StepStatus.ERROR, "status-cancelled")
    assert (b.name, b.status, b.error) == ("operationB", StepStatus.OK, None)
    assert a.span_id is None and a.start_time_unix_nano == 1581452772000000321


def test_golden_legacy_layout_and_deprecated_status(corpus: Path) -> None:
    legacy = list(read_path(corpus / "otel-spec/legacy-instrumentationLibrarySpans-traces.jsonl"))
    assert [len(r.steps) for r in legacy] == [2, 2, 2, 2]
    first = legacy[0].steps[0]
    assert (first.status, first.error) == (StepStatus.ERROR, "status-cancelled")


def test_golden_enum_names_and_openinference(corpus: Path) -> None:
    (run,) = read_path(corpus / "genai-interlingua/openinference-in.json")
    (llm,) = run.steps
    assert (llm.kind, llm.name) == (StepKind.LLM, "gpt-4o-mini-2024-07-18")
    assert llm.inputs["messages"] == [
        {"role": "system", "content": "You are a support agent. Use the tools you are given."},
        {"role": "user", "content": "Where is order A-1187?"},
    ]
    assert llm.inputs["tools"][0]["name"] == "lookup_order"
    assert llm.output == {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_9RtYbK2mXqLp", "name": "lookup_order", "arguments": {"order_id": "A-1187"}}
        ],
        "finish_reason": "tool_calls",  # from llm.finish_reason beside the message
    }


def test_golden_vercel_tool_outlives_its_parent(corpus: Path) -> None:
    (run,) = read_path(corpus / "genai-interlingua/vercel-in.json")
    llm, tool = run.steps
    assert (llm.kind, tool.kind, tool.name) == (StepKind.LLM, StepKind.TOOL, "lookup_order")
    assert tool.inputs == {"arguments": {"order_id": "A-1187"}, "tool_call_id": "call_9RtYbK2mXqLp"}
    assert tool.output == {"status": "in_transit", "eta": "2026-06-15"}
    assert llm.output["finish_reason"] == "tool-calls"


def test_golden_js_span_dump(corpus: Path) -> None:
    runs = list(read_path(corpus / "openinference-vercel/ai-generateText-doGenerate.json"))
    first = runs[0].steps[0]
    assert first.inputs["messages"] == [
        {"role": "user", "content": "Write a haiku about programming."}
    ]
    assert first.output["content"].startswith("Lines of code align")
    assert first.start_time_unix_nano == 1770131992_242000000  # hrtime [s, ns]
    assert runs[0].metadata["format"] == "span-dump"


def test_golden_self_parented_span(corpus: Path) -> None:
    (run,) = read_path(corpus / "ottl-playground/traces.json")
    tree = {s.name: s.parent_span_id for s in run.spans}
    assert tree == {"Me too": None, "I'm a server span": "eee19b7ec3c1b173"}
    assert [s.name for s in run.steps] == ["I'm a server span"]


def _attribute_map(corpus: Path, name: str) -> SpanRecord:
    attributes: dict[str, Any] = orjson.loads(
        (corpus / "openinference-genai-fixtures" / name).read_bytes()
    )
    return SpanRecord("", "", "", "span", 0, 0, 0, attributes)


def test_three_conventions_describe_one_call_alike(corpus: Path) -> None:
    """The fixtures record the same chat call as OpenInference, GenAI current and GenAI deprecated."""
    names = (
        "openinference_client_span_tool_calls.json",
        "otel_genai_client_span_tool_calls.json",
        "otel_genai_deprecated_client_span_tool_calls.json",
    )
    steps = []
    for name in names:
        span = _attribute_map(corpus, name)
        assert recognise(span)[0] == "llm"
        steps.append(build_step(span, StepKind.LLM))
    expected = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Absolutely! Let me check the weather for you.",
            "tool_calls": [
                {"id": "1234", "name": "get_weather", "arguments": {"location": "Paris"}}
            ],
        },
        {"role": "tool", "content": "rainy, 57°F", "tool_call_id": "1234", "name": "get_weather"},
    ]
    for step in steps:
        assert step.inputs["messages"] == expected
    answer = "The weather in Paris is currently rainy with a temperature of 57°F."
    assert steps[0].output == {"role": "assistant", "content": answer}
    assert steps[1].output == {"role": "assistant", "content": answer, "finish_reason": "stop"}
    assert steps[2].output == {"text": answer, "finish_reason": "stop"}  # not a message: kept as is


def test_genai_tool_execution_map(corpus: Path) -> None:
    span = _attribute_map(corpus, "otel_genai_tool_execution_span.json")
    step = build_step(span, StepKind.TOOL)
    assert recognise(span) == ("tool", "genai")
    assert step.name == "get_weather"
    assert step.inputs == {"arguments": {"city": "New York"}, "tool_call_id": "1234"}
    assert step.output["status"] == "success"
