"""Flat span lists and any-agent traces (issue 24): the real exports in
``../shared/trace-corpus/platforms/`` read, step by step, through the one table of JSON document
formats (`otel_replay.importers._documents`).

Before: every one of these files was refused ("expected an OTLP JSON object with resourceSpans",
"no 'resourceSpans' key"); any-agent's 128-bit integer trace ids could not have come back exact
through orjson, which reads them as floats.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import ReadOptions, Store, TraceFormatError, read_path
from otel_replay.importers import Format
from otel_replay.importers._assemble import assemble
from otel_replay.importers._documents import DOCUMENT_FORMATS, parse_document, reader_for
from otel_replay.importers._merge import built_from_spans
from otel_replay.importers._spans import SpanRecord
from otel_replay.model import StepKind, Trajectory
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT

STRANDS = "platforms/strands-evals-spans"
ANY_AGENT = "platforms/any-agent-traces"
GPT = "gpt-4o-mini-2024-07-18"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
HAIKU = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
MISTRAL = "mistral/mistral-small-latest"
ANSWER = (
    "The population of Tokyo is approximately 14 million people as of 2023. (The city proper has "
    "over 14 million residents, while the greater Tokyo metropolitan area has approximately 37 "
    "million people.)"
)

# file: (format, trace id, spans, [(kind, name, status)], [tool arguments, in step order])
GOLDEN: dict[str, tuple[str, str, int, list[tuple[str, str, str]], list[Any]]] = {
    f"{STRANDS}/openai_agents_genai_live_spans.json": (
        "flat-spans",
        "9fa516c6d3cd456d5b2bf8349dcfa39b",
        17,
        # the specialists' own calls, not the ask_*_specialist tools that ran them (see below)
        [
            ("llm", GPT, "ok"),
            ("llm", GPT, "ok"),
            ("tool", "lookup_stock_price", "ok"),
            ("llm", GPT, "ok"),
            ("llm", GPT, "ok"),
            ("llm", GPT, "ok"),
            ("tool", "multiply_numbers", "ok"),
            ("llm", GPT, "ok"),
            ("tool", "multiply_numbers", "ok"),
            ("llm", GPT, "ok"),
            ("llm", GPT, "ok"),
        ],
        [{"ticker": "AMZN"}, {"a": 240, "b": 1000}, {"a": 0, "b": 1000}],
    ),
    f"{STRANDS}/pydantic_ai_live_spans.json": (
        "flat-spans",
        "25664b7144ee8f957a50b6ff74dfa337",
        4,
        [("llm", SONNET, "ok"), ("tool", "get_weather", "ok"), ("llm", SONNET, "ok")],
        [{"city": "Seattle"}],
    ),
    f"{STRANDS}/smolagents_live_spans.json": (
        "flat-spans",
        "f63de90470d666fccdf71a2b9cb7d089",
        7,
        [
            ("llm", HAIKU, "ok"),
            ("tool", "web_search", "ok"),
            ("llm", HAIKU, "ok"),
            ("tool", "final_answer", "ok"),
        ],
        # a positional argument stays the traced call it was recorded as
        [
            {"query": "population of Tokyo"},
            {"args": [ANSWER], "sanitize_inputs_outputs": False, "kwargs": {}},
        ],
    ),
    f"{ANY_AGENT}/LANGCHAIN_trace.json": (
        "any-agent",
        "572318454595034fe5076610d6400542",
        7,
        [
            ("llm", MISTRAL, "ok"),
            ("tool", "get_current_time", "ok"),
            ("llm", MISTRAL, "ok"),
            ("tool", "write_file", "ok"),
            ("llm", MISTRAL, "ok"),
            ("llm", MISTRAL, "ok"),
        ],
        [{"timezone": "America/New_York"}, {"text": "2025"}],
    ),
    f"{ANY_AGENT}/OPENAI_trace.json": (
        "any-agent",
        "4bedea77bb33b9c5f280371eae21ea97",
        6,
        [
            ("llm", MISTRAL, "ok"),
            ("tool", "get_current_time", "ok"),
            ("llm", MISTRAL, "ok"),
            ("tool", "write_file", "ok"),
            ("llm", MISTRAL, "ok"),
        ],
        [{"timezone": "America/New_York"}, {"text": "2025"}],
    ),
}


def _one_run(path: Path, options: ReadOptions | None = None) -> Trajectory:
    options = options or ReadOptions()
    (run,) = read_path(path, options=options)
    assert not options.report.skipped and not options.report.warnings
    return run


def _steps(run: Trajectory) -> list[tuple[str, str, str]]:
    return [(s.kind.value, s.name, s.status.value) for s in run.steps]


def _arguments(run: Trajectory) -> list[Any]:
    return [s.inputs.get("arguments") for s in run.steps if s.kind is StepKind.TOOL]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_platform_file_reads_step_by_step(corpus: Path, name: str) -> None:
    fmt, trace_id, spans, steps, arguments = GOLDEN[name]
    options = ReadOptions()
    run = _one_run(corpus / name, options)
    assert (run.metadata["format"], run.id, options.report.spans) == (fmt, trace_id, spans)
    assert _steps(run) == steps
    assert _arguments(run) == arguments
    # none of these files carries a score, and no root span failed: the outcome is unknown
    assert run.outcome is None
    assert all(s.span_id for s in run.steps)  # each step read from its span, none rebuilt


def test_every_span_of_a_platform_file_is_in_the_tree(corpus: Path) -> None:
    for name in GOLDEN:
        document = json.loads((corpus / name).read_text())
        listed = document["spans"] if isinstance(document, dict) else document
        run = _one_run(corpus / name)
        assert len(run.spans) == len(listed), name


def test_any_agent_ids_are_exact_integers(corpus: Path) -> None:
    """The 128-bit trace id and the span ids above 2**63 come back as the integers written."""
    path = corpus / ANY_AGENT / "OPENAI_trace.json"
    document = json.loads(path.read_text())  # Python's decoder: integers exact
    trace_id = document["spans"][0]["context"]["trace_id"]
    assert trace_id > 2**64
    # what orjson would have made of it: a float, its low digits gone
    assert isinstance(orjson.loads(path.read_bytes())["spans"][0]["context"]["trace_id"], float)
    assert isinstance(parse_document(path.read_bytes())["spans"][0]["context"]["trace_id"], int)
    run = _one_run(path)
    assert run.id == format(trace_id, "032x")
    written = {format(s["context"]["span_id"], "016x") for s in document["spans"]}
    assert {s.span_id for s in run.spans} == written
    assert any(s["context"]["span_id"] >= 2**63 for s in document["spans"])
    # the root names its parent as a context whose ids are null: a root, not an orphan
    root = next(s for s in run.spans if s.parent_span_id is None)
    assert root.name == "invoke_agent [any_agent]"
    assert run.metadata["root_span"] == root.name and "roots" not in run.metadata


def test_any_agent_model_turns_hold_the_calls_they_asked_for(corpus: Path) -> None:
    run = _one_run(corpus / ANY_AGENT / "OPENAI_trace.json")
    first, tool = run.steps[:2]
    assert first.output == {
        "role": "assistant",
        "tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "America/New_York"}}],
    }
    assert first.inputs["messages"][0] == {
        "role": "system",
        "content": "Use the available tools to answer.",
    }
    assert tool.output["timezone"] == "America/New_York"
    # the final answer (any-agent's final_output) is the last model turn's output, not a score
    final_output = json.loads((corpus / ANY_AGENT / "OPENAI_trace.json").read_text())[
        "final_output"
    ]
    assert run.steps[-1].output == final_output
    assert run.outcome is None


def test_an_agent_run_inside_a_tool_call_hangs_from_that_tool(corpus: Path) -> None:
    """The agents-as-tools case: each specialist's agent span hangs from the workflow (recorded),
    though it ran inside the coordinator's ask_*_specialist tool span; it is nested under that tool,
    which then, like any agent used as a tool, is structure, the specialist's calls its steps."""
    path = corpus / STRANDS / "openai_agents_genai_live_spans.json"
    recorded = {s["name"]: s for s in json.loads(path.read_text())}
    workflow = recorded["Agent Workflow"]["span_id"]
    assert recorded["research_specialist.agent"]["parent_span_id"] == workflow
    assert recorded["math_specialist.agent"]["parent_span_id"] == workflow
    run = _one_run(path)
    by_id = {s.span_id: s for s in run.spans}
    tree = {s.name: by_id[s.parent_span_id].name for s in run.spans if s.parent_span_id in by_id}
    assert tree["research_specialist.agent"] == "ask_research_specialist.tool"
    assert tree["math_specialist.agent"] == "ask_math_specialist.tool"
    assert tree["lookup_stock_price.tool"] == "research_specialist.agent"
    assert tree["ask_research_specialist.tool"] == "coordinator.agent"
    assert tree["coordinator.agent"] == "Agent Workflow"
    roles = {s.name: s.role for s in run.spans}
    assert roles["ask_research_specialist.tool"] == roles["ask_math_specialist.tool"] == "tool"
    # the step keeps the parent its span recorded
    (lookup,) = [s for s in run.steps if s.name == "lookup_stock_price"]
    assert lookup.parent_span_id == recorded["research_specialist.agent"]["span_id"]


def test_a_root_whose_parent_is_not_in_the_file_is_the_run_s_root(corpus: Path) -> None:
    path = corpus / STRANDS / "openai_agents_genai_live_spans.json"
    run = _one_run(path)
    (top,) = [s for s in run.spans if s.name == "Agent Workflow"]
    assert top.parent_span_id == "d7c0afa1915f63ff"  # kept: another file may bring that parent
    assert run.metadata["root_span"] == "Agent Workflow" and "roots" not in run.metadata
    assert run.outcome is None


# --- the same spans, written the other ways flat span lists come ------------------------------------


def _iso(nanos: int) -> str:
    moment = datetime.fromtimestamp(nanos // 10**9, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos % 10**9 // 1000:06d}Z"


def _nested(attributes: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1}`` as ``{"a": {"b": 1}}`` (where no key is also a prefix of another)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        *heads, last = key.split(".")
        node = out
        for head in heads:
            node = node.setdefault(head, {})
        node[last] = value
    return out


def _camel(span: dict[str, Any]) -> dict[str, Any]:
    """A strands span as a JS-style exporter writes it: camelCase, integer ids, ISO times, nested
    attributes, ``events``, the status as a name."""
    return {
        "traceId": int(span["trace_id"], 16),
        "spanId": int(span["span_id"], 16),
        "parentSpanId": int(span["parent_span_id"], 16) if span["parent_span_id"] else None,
        "name": span["name"],
        "startTime": _iso(span["start_time"]),
        "endTime": _iso(span["end_time"]),
        "attributes": _nested(span["attributes"]),
        "status": span["status"]["code"],
        "events": span["span_events"],
    }


def _integer_ids(span: dict[str, Any]) -> dict[str, Any]:
    return {
        **span,
        "trace_id": int(span["trace_id"], 16),
        "span_id": int(span["span_id"], 16),
        "parent_span_id": int(span["parent_span_id"], 16) if span["parent_span_id"] else None,
    }


def _hrtime(span: dict[str, Any]) -> dict[str, Any]:
    return {
        **span,
        "start_time": [span["start_time"] // 10**9, span["start_time"] % 10**9],
        "end_time": str(span["end_time"]),  # int64 as decimal text
    }


@pytest.mark.parametrize("spelling", ["jsonl", "camel", "hrtime"])
def test_other_spellings_of_flat_spans_read_the_same(
    corpus: Path, tmp_path: Path, spelling: str
) -> None:
    source = corpus / STRANDS / "pydantic_ai_live_spans.json"
    spans = json.loads(source.read_text())
    path = tmp_path / f"spans.{spelling}.json"
    if spelling == "jsonl":  # one span per line, its ids as integers
        path.write_text("".join(json.dumps(_integer_ids(span)) + "\n" for span in spans))
    elif spelling == "camel":
        path.write_text(json.dumps([_camel(span) for span in spans]))
    else:
        path.write_text(json.dumps([_hrtime(span) for span in spans]))
    expected = _one_run(source)
    run = _one_run(path)
    assert run.metadata["format"] == "flat-spans"
    assert run.id == expected.id  # integer ids (camel) of 128 bits read exact
    assert [s.span_id for s in run.steps] == [s.span_id for s in expected.steps]
    assert _steps(run) == _steps(expected) and _arguments(run) == _arguments(expected)
    assert [s.inputs for s in run.steps] == [s.inputs for s in expected.steps]
    if spelling != "camel":  # ISO text keeps microseconds only
        assert run.final_hash == expected.final_hash
        assert [s.start_time_unix_nano for s in run.steps] == [
            s.start_time_unix_nano for s in expected.steps
        ]


# --- the table -----------------------------------------------------------------------------------


def test_every_document_format_is_a_format_name_and_built_from_spans() -> None:
    names = [row.name for row in DOCUMENT_FORMATS]
    assert len(set(names)) == len(names)
    assert {f.value for f in Format} >= set(names)
    assert all(built_from_spans(name) for name in names)
    assert reader_for({"resourceSpans": []})[0] == "otlp-json"
    assert reader_for({"trace": {"batches": []}})[0] == "otlp-json"  # Tempo
    assert reader_for({"spans": [], "final_output": None})[0] == "any-agent"
    assert reader_for([{"context": {}}])[0] == "span-dump"
    assert reader_for([{"trace_id": "a", "span_id": "b", "name": "n"}])[0] == "flat-spans"
    assert reader_for({"what": 1})[0] == "otlp-json"  # no row claims it: OTLP says what is missing


@pytest.mark.parametrize("shown_as", ["flat-spans", "any-agent"])
def test_the_format_a_run_shows_is_accepted_by_format(
    corpus: Path, runner: CliRunner, tmp_path: Path, shown_as: str
) -> None:
    name = next(n for n, row in GOLDEN.items() if row[0] == shown_as)
    store = tmp_path / "first.db"
    ok(invoke(runner, store, "import", str(corpus / name)))
    listed = orjson.loads(ok(invoke(runner, store, "list", "--json")).stdout)
    assert [run["format"] for run in listed] == [shown_as]
    ok(invoke(runner, tmp_path / "again.db", "import", str(corpus / name), "--format", shown_as))


# --- bad input -----------------------------------------------------------------------------------


def test_a_broken_span_in_a_flat_list_is_a_located_error_and_nothing_is_stored(
    corpus: Path, runner: CliRunner, tmp_path: Path
) -> None:
    spans = json.loads((corpus / STRANDS / "pydantic_ai_live_spans.json").read_text())
    spans[2]["start_time"] = "yesterday"
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans))
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(corpus / ANY_AGENT / "OPENAI_trace.json")))

    result = invoke(runner, store, "import", str(path))
    assert result.exit_code == 1, result.output
    first = next(line for line in result.stderr.splitlines() if line.strip())
    assert first.startswith("error: ") and str(path) in first
    assert "unreadable timestamp 'yesterday'" in first and first.endswith("at [2].start_time")
    with Store.open(store) as opened:
        assert [s.id for s in opened.summaries()] == ["4bedea77bb33b9c5f280371eae21ea97"]

    skipped = invoke(runner, tmp_path / "other.db", "import", str(path), "--skip-invalid")
    ok(skipped)
    assert "skipped 1" in skipped.stderr
    with Store.open(tmp_path / "other.db") as opened:
        (summary,) = opened.summaries()
        kept = opened.get(summary.id)
    # the broken model call is skipped; the rest of its trace is kept
    assert [s.span_id for s in kept.steps if s.span_id] == [
        spans[0]["span_id"],
        spans[1]["span_id"],
    ]


@pytest.mark.parametrize(
    ("document", "where", "says"),
    [
        (
            [{"trace_id": 1.5e38, "span_id": 1, "name": "n"}],
            "[0].trace_id",
            "floating-point number",
        ),
        (
            [{"trace_id": 2**128, "span_id": 1, "name": "n"}],
            "[0].trace_id",
            "does not fit in 128 bits",
        ),
        (
            [{"trace_id": "ab" * 16, "span_id": 1, "name": "n"}, 7],
            "[1]",
            "a span must be an object",
        ),
        (
            [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "n", "attributes": 3}],
            "[0].attributes",
            "object",
        ),
        ({"spans": [{"context": {"trace_id": -1}}], "final_output": 1}, "spans[0]", "traceId"),
    ],
)
def test_a_bad_value_names_the_span_and_the_key(
    tmp_path: Path, document: Any, where: str, says: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:") and says in message, message  # one line: read as JSONL
    assert message.endswith(f" at {where}"), message


# --- the rule on its own: which spans it moves ----------------------------------------------------


def _span(span_id: str, parent: str, name: str, start: int, end: int, **attrs: Any) -> SpanRecord:
    return SpanRecord(
        "ab" * 16, span_id * 8, parent * 8 if parent else "", name, 1, start, end, attrs
    )


def _tree_of(spans: list[SpanRecord]) -> dict[str, str | None]:
    run = assemble("t", spans, ReadOptions(), {})
    names = {s.span_id: s.name for s in run.spans}
    return {s.name: names.get(s.parent_span_id or "") for s in run.spans}


TOOL = {"gen_ai.operation.name": "execute_tool"}
AGENT = {"gen_ai.operation.name": "invoke_agent"}
LLM = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[]"}


def test_only_a_container_inside_one_tool_and_hung_above_it_moves() -> None:
    spans = [
        _span("01", "", "workflow", 1, 100, **AGENT),
        _span("02", "01", "caller", 1, 99, **AGENT),
        _span("03", "02", "tool a", 10, 50, **TOOL),
        _span("04", "02", "tool b", 20, 40, **TOOL),  # parallel with a, inside its time: not moved
        _span("05", "01", "helper agent", 11, 49, **AGENT),  # inside a, not b
        _span("06", "05", "helper call", 12, 13, **LLM),
        _span("07", "02", "late agent", 60, 70, **AGENT),  # inside no tool
    ]
    tree = _tree_of(spans)
    assert tree["helper agent"] == "tool a"
    assert tree["tool b"] == "caller" and tree["late agent"] == "caller"
    assert tree["helper call"] == "helper agent"


def test_a_container_inside_two_tools_that_do_not_nest_stays_where_it_was() -> None:
    spans = [
        _span("01", "", "caller", 1, 100, **AGENT),
        _span("02", "01", "tool a", 10, 50, **TOOL),
        _span("03", "01", "tool b", 10, 50, **TOOL),
        _span("04", "01", "helper agent", 20, 30, **AGENT),
    ]
    assert _tree_of(spans)["helper agent"] == "caller"


def test_a_container_whose_parent_is_not_above_the_tool_stays() -> None:
    spans = [
        _span("01", "", "caller", 1, 100, **AGENT),
        _span("02", "01", "tool a", 10, 50, **TOOL),
        _span("03", "02", "inner agent", 11, 49, **AGENT),
        _span("04", "03", "inner chain", 20, 30, **AGENT),  # already under the tool: unchanged
    ]
    tree = _tree_of(spans)
    assert tree["inner agent"] == "tool a" and tree["inner chain"] == "inner agent"


# --- what is not a flat span list (review of the JSON readers) ------------------------------------

TRACE, SPAN = "ab" * 16, "cd" * 8


def _log_record(n: int) -> dict[str, Any]:
    """A log record as the Python SDK's ConsoleLogExporter writes it (``LogRecord.to_json``)."""
    return {
        "body": f"message {n}",
        "severity_number": 9,
        "severity_text": "INFO",
        "attributes": {"code.lineno": n},
        "dropped_attributes": 0,
        "timestamp": "2025-01-01T00:00:00.000000Z",
        "observed_timestamp": "2025-01-01T00:00:00.000000Z",
        "trace_id": f"0x{TRACE}",
        "span_id": f"0x{SPAN}",
        "trace_flags": 1,
        "resource": {"attributes": {"service.name": "agent"}, "schema_url": ""},
        "event_name": None,
    }


@pytest.mark.parametrize("layout", ["pretty back to back", "a list", "one object"])
def test_console_log_records_are_logs_not_a_flat_span_run(tmp_path: Path, layout: str) -> None:
    records = [_log_record(1), _log_record(2)]
    path = tmp_path / "logs.json"
    if layout == "pretty back to back":  # what the exporter writes: indent=4, one after another
        path.write_text("".join(json.dumps(r, indent=4) + "\n" for r in records))
    elif layout == "a list":
        path.write_text(json.dumps(records, indent=2))
    else:
        path.write_text(json.dumps(records[0], indent=2))
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    assert "log records" in str(caught.value) and "not traces" in str(caught.value)
    assert reader_for(records)[0] == "otlp-json"  # no row claims them


@pytest.mark.parametrize(
    "document",
    [
        {"spans": {"a": 1}, "final_output": "done"},  # any-agent's keys, spans not a list
        {"data": [{"foo": 1}], "meta": {"page": 1}},  # a paged API answer of something else
        {"hello\n'": 1, **{f"k{i}": i for i in range(8)}},
    ],
)
def test_a_document_no_format_claims_names_what_was_tried(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document, indent=1))
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    message = str(caught.value)
    # what it looks like (issue 39: its shape; no family of _lookalikes.FAMILIES matches these)
    assert "not a trace document: it is a JSON object with key" in message, message
    assert message.endswith("no reader takes this shape (the formats read: docs/importing.md)")
    assert "resourceSpans" not in message and "\n" not in message
    assert repr(next(iter(document))) in message


def test_an_otlp_looking_document_keeps_the_otlp_message(tmp_path: Path) -> None:
    path = tmp_path / "logs.json"
    path.write_text(json.dumps({"resourceLogs": []}, indent=1))
    with pytest.raises(TraceFormatError, match=r"OTLP logs file \('resourceLogs'\), not traces"):
        list(read_path(path))


def _phoenix_page(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    fixture = ROOT / "tests" / "fixtures" / "platforms" / "phoenix" / "genai.otlpv1.json"
    page = orjson.loads(fixture.read_bytes())
    page["data"][1]["start_time_unix_nano"] = "yesterday"
    path = tmp_path / "page.json"
    path.write_bytes(orjson.dumps(page))
    return page, path


def test_a_phoenix_page_with_one_bad_span_is_still_a_phoenix_page(tmp_path: Path) -> None:
    page, path = _phoenix_page(tmp_path)
    assert reader_for(page)[0] == "phoenix-otlp"
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    assert str(caught.value).endswith(" at data[1].start_time_unix_nano"), str(caught.value)
    options = ReadOptions(skip_invalid=True)
    runs = list(read_path(path, options=options))
    assert {r.metadata["format"] for r in runs} == {"phoenix-otlp"}
    assert len(options.report.skipped) == 1
    assert sum(len(r.spans) for r in runs) == len(page["data"]) - 1


@pytest.mark.parametrize(
    ("parent", "where"),
    [
        ({"parent_id": 1.5}, "[0].parent_id"),
        ({"parentId": "xyz"}, "[0].parentId"),
        ({"parent": {"span_id": 1.5}}, "[0].parent.span_id"),
        ({"parent": "xyz"}, "[0].parent"),
        ({"parent_span_id": "xyz"}, "[0].parent_span_id"),
    ],
)
def test_a_bad_parent_names_the_key_it_was_read_from(
    tmp_path: Path, parent: dict[str, Any], where: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"trace_id": TRACE, "span_id": SPAN, "name": "n", **parent}]))
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    assert str(caught.value).endswith(f" at {where}"), str(caught.value)
