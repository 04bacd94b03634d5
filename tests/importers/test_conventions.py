"""The one table of span vocabularies (`otel_replay.importers._conventions`): the docs show it as the
code has it, every row says known things, and a vocabulary is supported by adding a row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.importers import _conventions
from otel_replay.importers._conventions import (
    MESSAGE_PARTS,
    PARTS,
    VOCABULARIES,
    Vocabulary,
    is_structured,
    markdown_table,
    recognised,
    sources,
)
from otel_replay.importers.otlp_json import read_otlp_json
from otel_replay.model import StepKind, StepStatus
from otel_replay.otlp_encode import spans_to_request, write_otlp_json_lines

ROOT = Path(__file__).resolve().parents[2]
ROLES = {kind.value for kind in StepKind} | {"agent", "chain"}


def test_the_docs_show_the_table_the_code_has() -> None:
    page = (ROOT / "docs" / "importing.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- vocabularies:[^\n]*-->\n(.*?)<!-- /vocabularies -->", page, re.S)
    assert shown is not None, "docs/importing.md has lost its table of vocabularies"
    assert shown.group(1) == markdown_table(), (
        "docs/importing.md's table of vocabularies differs from otel_replay/importers/"
        "_conventions.py: paste markdown_table()'s output between its markers"
    )


@pytest.mark.parametrize("row", VOCABULARIES, ids=lambda row: row.name)
def test_every_row_says_known_roles_and_parts(row: Vocabulary) -> None:
    said = [role for _, role in row.roles] + [role for _, role in row.marks]
    assert said, f"{row.name} names no role"
    assert set(said) <= ROLES
    assert row.otherwise is None or row.otherwise in ROLES
    assert set(row.parts) <= set(PARTS)
    assert all(pattern == pattern.lower() for pattern, _ in row.roles)


def test_the_first_claim_wins_and_the_last_rows_are_a_last_resort() -> None:
    langsmith = {"langsmith.span.kind": "llm", "gen_ai.operation.name": "chain"}
    assert recognised(langsmith, "span") == ("llm", "langsmith")
    assert recognised({"gen_ai.tool.name": "lookup"}, "x") == ("tool", "heuristic")
    assert recognised({"openinference.span.kind": "CHAIN"}, "x") == ("chain", "openinference")
    assert recognised({"ai.operationId": "ai.generateText.doGenerate"}, "x") == ("llm", "vercel")
    assert recognised({"ai.operationId": "ai.embedMany.doEmbed"}, "x") == ("embedding", "vercel")
    assert recognised({"ai.operationId": "ai.generateText"}, "x") == ("agent", "vercel")
    assert recognised({}, "running tool") == ("tool", "pydantic-ai")
    assert recognised({"http.method": "GET"}, "GET /") is None


def test_a_part_is_read_from_the_recognising_row_first_and_messages_structured_first() -> None:
    assert list(sources("model", "vercel"))[:2] == ["ai.model.id", "llm.model_name"]
    assert next(sources("model")) == "llm.model_name"  # table order: OpenInference first
    # a row named by its keys alone never goes first: its keys are a last resort
    assert list(sources("arguments", "heuristic"))[-1] == "input"
    for part in MESSAGE_PARTS:
        found = list(sources(part, "langfuse"))  # Langfuse's own messages are raw text
        tiers = [is_structured(source) for source in found]
        assert tiers == sorted(tiers, reverse=True), part
        assert len(found) == len(set(found))


def _spans(attributes: list[dict[str, str]]) -> bytes:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("acme-agents")
    with tracer.start_as_current_span("run", attributes={"agent_replay.outcome": 0.0}):
        for i, attrs in enumerate(attributes):
            with tracer.start_as_current_span(f"op {i}", attributes=attrs):
                pass
    return exporter.get_finished_spans()  # type: ignore[return-value]


def test_a_new_vocabulary_is_a_new_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A made-up instrumentation's spans are plumbing until its row is added; with the row, they are
    its operations, read from its keys: model, messages, tool, arguments, result, tokens, error."""
    spans = _spans(
        [
            {
                "acme.kind": "Completion",
                "acme.model": "acme-1",
                "acme.prompt": '[{"role": "user", "content": "refund order 7?"}]',
                "acme.reply": '{"role": "assistant", "content": "checking"}',
                "acme.tokens_in": "12",
            },
            {
                "acme.kind": "Function",
                "acme.function": "lookup_order",
                "acme.args": '{"order_id": 7}',
                "acme.returned": '{"status": "lost"}',
                "acme.call": "call-1",
                "acme.failed": "yes",
            },
        ]
    )
    path = tmp_path / "acme.otlp.jsonl"
    write_otlp_json_lines([spans_to_request(spans)], path)  # type: ignore[arg-type]
    (before,) = read_otlp_json(path)
    assert [step.kind for step in before.steps] == [StepKind.OTHER, StepKind.OTHER]

    acme = Vocabulary(
        "acme",
        "Acme Agents",
        kind_key="acme.kind",
        roles=(("completion", "llm"), ("function", "tool")),
        failed=(("acme.failed", "YES"),),
        parts={
            "model": ("acme.model",),
            "input_messages": ("acme.prompt",),
            "output_messages": ("acme.reply",),
            "tool_name": ("acme.function",),
            "arguments": ("acme.args",),
            "result": ("acme.returned",),
            "tool_call_id": ("acme.call",),
            "input_tokens": ("acme.tokens_in",),
        },
    )
    rows = (*VOCABULARIES[:-1], acme, VOCABULARIES[-1])
    monkeypatch.setattr(_conventions, "VOCABULARIES", rows)
    monkeypatch.setattr(_conventions, "BY_NAME", {row.name: row for row in rows})
    (after,) = read_otlp_json(path)
    llm, tool = after.steps
    assert (llm.kind, llm.name, llm.inputs["messages"][0]["content"]) == (
        StepKind.LLM,
        "acme-1",
        "refund order 7?",
    )
    assert llm.output == {"role": "assistant", "content": "checking"}
    assert after.metadata["token_usage"][llm.span_id] == {"input_tokens": 12}
    assert (tool.kind, tool.name, tool.inputs, tool.output) == (
        StepKind.TOOL,
        "lookup_order",
        {"arguments": {"order_id": 7}, "tool_call_id": "call-1"},
        {"status": "lost"},
    )
    assert tool.status is StepStatus.ERROR


def test_a_prompt_kept_as_text_is_the_calls_input(tmp_path: Path) -> None:
    """The deprecated GenAI ``gen_ai.prompt`` (and LangSmith's, the inputs object) that holds no
    messages is still what the call was asked: the step's raw input, never dropped."""
    spans = _spans([{"gen_ai.operation.name": "chat", "gen_ai.prompt": "7" * 2_000}])
    path = tmp_path / "prompt.otlp.jsonl"
    write_otlp_json_lines([spans_to_request(spans)], path)  # type: ignore[arg-type]
    (run,) = read_otlp_json(path)
    (step,) = run.steps
    assert step.kind is StepKind.LLM
    assert step.inputs["input"] == "7" * 2_000
