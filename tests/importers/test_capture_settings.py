"""``lint`` names the setting that closes each capture gap, for the instrumentation that wrote the
step's span (issue 39, item 6): OpenInference's hide settings and the OpenAI Agents SDK's
``trace_include_sensitive_data``, read from runs the real instrumentation traced with content
capture off; the SDK's attribute length limit from a run its SpanLimits cut; and each row of the
table (`_capture.CAPTURES`) from a span the real OpenTelemetry SDK made under that
instrumentation's scope name. Before, lint said what was missing and not how to record it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from examples import fake_model_server
from otel_replay.importers._capture import CAPTURES, SDK_LENGTH, Capture
from otel_replay.importers._lint import LintedRun, lint_file
from otel_replay.replayable import ReplayabilityGap
from tests.cli_helpers import invoke, ok

try:
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    from tests.scenarios import agents_sdk_agent
except ImportError:  # the test extra has them; under CI their absence is a failure
    if os.environ.get("CI"):
        raise
    pytest.skip("the OpenAI Agents SDK or its instrumentor is not installed (the test extra)",
                allow_module_level=True)  # fmt: skip

FAKE = fake_model_server
QUESTION = "Where is my order A-1001?"
AGENTS = next(c for c in CAPTURES if c.key == "openinference-openai-agents")


def _written(path: Path, spans: Sequence[ReadableSpan]) -> Path:
    """``spans`` as the OTLP/HTTP exporter would send them: one protobuf request."""
    path.write_bytes(encode_spans(spans).SerializeToString())
    return path


def _provider(limit: int | None = None) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=limit))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def agents_run(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Run the support agent (the OpenAI Agents SDK against the local fake server) traced by
    OpenInference's instrumentor with a given `TraceConfig` and span length limit; the file of
    its spans."""
    httpd, url = FAKE.serve(handler=FAKE.EchoingHandler)

    def run(config: Any = None, limit: int | None = None, name: str = "run.pb") -> Path:
        provider, exporter = _provider(limit)
        instrumentor = OpenAIAgentsInstrumentor()
        instrumentor.instrument(tracer_provider=provider, config=config)
        try:
            asyncio.run(agents_sdk_agent.support(QUESTION, f"{url}/v1", traced=True))
        finally:
            instrumentor.uninstrument()
        return _written(tmp_path / name, exporter.get_finished_spans())

    try:
        yield run
    finally:
        httpd.shutdown()
        httpd.server_close()


def _named(run: LintedRun) -> dict[ReplayabilityGap, set[tuple[str, str] | None]]:
    found: dict[ReplayabilityGap, set[tuple[str, str] | None]] = {}
    for reason, named in zip(run.replayability.reasons, run.settings, strict=True):
        found.setdefault(reason.gap, set()).add(named)
    return found


def test_values_openinference_hid_name_its_settings_and_the_agents_sdks(
    agents_run: Callable[..., Path],
) -> None:
    path = agents_run(TraceConfig(hide_inputs=True, hide_outputs=True))
    (run,) = lint_file(path)
    named = _named(run)
    assert named[ReplayabilityGap.HIDDEN_INPUT] == {(AGENTS.name, AGENTS.inputs)}
    assert named[ReplayabilityGap.HIDDEN_OUTPUT] == {(AGENTS.name, AGENTS.outputs)}
    assert "OPENINFERENCE_HIDE_INPUTS" in AGENTS.inputs and "hide_inputs=False" in AGENTS.inputs
    assert "OPENINFERENCE_HIDE_OUTPUTS" in AGENTS.outputs
    assert "trace_include_sensitive_data=True" in AGENTS.inputs


def test_a_run_the_agents_sdk_kept_its_data_out_of_names_it(
    agents_run: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """RunConfig's default is read from the environment when the run starts."""
    monkeypatch.setenv("OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA", "false")
    (run,) = lint_file(agents_run())
    named = _named(run)
    for gap in (ReplayabilityGap.NO_MESSAGES, ReplayabilityGap.NO_ARGUMENTS):
        assert named[gap] == {(AGENTS.name, AGENTS.inputs)}, gap
    assert named[ReplayabilityGap.NO_RESULT] == {(AGENTS.name, AGENTS.outputs)}
    assert "OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=true" in AGENTS.outputs


def test_values_the_sdks_length_limit_cut_name_the_limit(
    agents_run: Callable[..., Path],
) -> None:
    (run,) = lint_file(agents_run(limit=100))
    named = _named(run)
    cut = named[ReplayabilityGap.TRUNCATED_INPUT] | named[ReplayabilityGap.TRUNCATED_OUTPUT]
    assert cut == {(AGENTS.name, AGENTS.length)}
    assert AGENTS.length.startswith(SDK_LENGTH)
    assert "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT" in SDK_LENGTH


@pytest.mark.parametrize("capture", [c for c in CAPTURES if c.scopes], ids=lambda c: c.key)
def test_each_instrumentation_is_told_by_its_scope(tmp_path: Path, capture: Capture) -> None:
    """A model call recorded without its messages, and a tool without its result, under the
    instrumentation's scope name: lint names that instrumentation's settings."""
    provider, exporter = _provider()
    tracer = provider.get_tracer(capture.scopes[0])
    with tracer.start_as_current_span("agent"):
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
        with tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": "lookup",
                                 "gen_ai.tool.call.arguments": json.dumps({"id": 1})})  # fmt: skip
    (run,) = lint_file(_written(tmp_path / "run.pb", exporter.get_finished_spans()))
    named = _named(run)
    assert named[ReplayabilityGap.NO_MESSAGES] == {(capture.name, capture.inputs)}
    assert named[ReplayabilityGap.NO_RESULT] == {(capture.name, capture.outputs)}


def test_a_span_of_no_known_instrumentation_names_no_setting_but_the_length_limit(
    tmp_path: Path,
) -> None:
    """LangSmith's OTel attributes under a scope of the user's own: no row of the table wrote it,
    so a missing input names nothing, and a value the SDK cut names the SDK's limit."""
    provider, exporter = _provider(limit=80)
    tracer = provider.get_tracer("my.own.tracing")
    with tracer.start_as_current_span("agent"):
        with tracer.start_as_current_span("llm") as span:
            span.set_attributes({"langsmith.span.kind": "llm"})
        for letter in "bc":
            with tracer.start_as_current_span("search") as span:
                span.set_attributes({"langsmith.span.kind": "tool", "gen_ai.prompt": '{"q": 1}',
                                     "gen_ai.completion": letter * 200})  # fmt: skip
    (run,) = lint_file(_written(tmp_path / "run.pb", exporter.get_finished_spans()))
    named = _named(run)
    assert named[ReplayabilityGap.NO_MESSAGES] == {None}
    assert named[ReplayabilityGap.TRUNCATED_OUTPUT] == {("the OpenTelemetry SDK", SDK_LENGTH)}
    assert "instrumentation" not in next(iter(lint_file(tmp_path / "run.pb"))).to_record()


def test_the_command_says_it_and_a_stored_run_keeps_who_wrote_it(
    agents_run: Callable[..., Path], runner: CliRunner, tmp_path: Path
) -> None:
    path = agents_run(TraceConfig(hide_outputs=True))
    text = ok(invoke(runner, tmp_path / "unused.db", "lint", str(path)))
    assert f"to capture it ({AGENTS.name}, 7 steps): {AGENTS.outputs}" in " ".join(
        text.stdout.split()
    )
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(path)))
    listed = json.loads(ok(invoke(runner, store, "lint", "--where", "steps > 0", "--json")).stdout)
    (record,) = listed
    hidden = [r for r in record["reasons"] if r["missing"] == "hidden-output"]
    assert hidden and {r["setting"] for r in hidden} == {AGENTS.outputs}
    assert {r["instrumentation"] for r in hidden} == {AGENTS.name}
