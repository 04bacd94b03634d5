"""Datadog: what the real ddtrace 4.16 sent to an agent for the support agent's four runs
(`scripts/make_datadog_fixtures.py`): APM traces (``/v0.4/traces`` and ``/v0.5/traces``, msgpack
decoded to JSON) with and without LLM Observability, and LLM Observability span events (the EVP
proxy's payloads). Shapes made here (both in one document, damage) are derived from those files,
never written whole by hand.

Before: every one of these files was refused, a span list with "expected an object, got
'Messages.create' at [0].resource" (the flat span reader claimed it and failed inside it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from otel_replay import ReadOptions, StepKind, StepStatus, Store, TraceFormatError, read_path
from otel_replay.importers._datadog import decode_datadog
from otel_replay.importers._documents import claiming_row, parse_document
from otel_replay.model import Trajectory
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.importers.test_fuzz import FAST, _read_all, json_values
from tests.importers.test_platform_jaeger import refused

HERE = ROOT / "tests" / "fixtures" / "platforms" / "datadog"
EVENTS = HERE / "llmobs.events.json"  # LLM Observability on, APM tracing off: the EVP payloads
CARRIED = HERE / "llmobs-apm.traces.json"  # LLM Observability on: the events inside the APM spans
APM = HERE / "apm.traces.json"  # LLM Observability off: the integrations' APM spans alone
APM_V05 = HERE / "apm-v05.traces.json"  # the same, as /v0.5/traces
SPLIT_TRACES = HERE / "split.traces.json"  # sampled out: the APM trace without the events ...
SPLIT_EVENTS = HERE / "split.events.json"  # ... and the events apart: one run's operations twice
WITH_CONTENT = (EVENTS, CARRIED, SPLIT_EVENTS)
ANSWER = "Order A-1001 has shipped but is delayed (tracking TRK-42, new ETA 2026-12-04)."
APOLOGY = "Sorry, I could not look up order A-1001 right now; please try again later."
TOOLS = ("lookup_order", "track_shipment", "search_policies")
RUNS = ("openai-pass", "openai-tool-error", "openai-parallel", "anthropic-pass")


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(tmp_path: Path, document: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    return path


def _raise(exc: TraceFormatError) -> None:
    raise exc


def _shape(run: Trajectory) -> list[tuple[StepKind, str, StepStatus]]:
    return [(s.kind, s.name, s.status) for s in run.steps]


def _runs(path: Path) -> dict[str, Trajectory]:
    """The four runs of a file by name, in the order the script ran them."""
    runs = list(read_path(path, options=ReadOptions(skip_invalid=False)))
    assert [r.steps[0].name for r in runs] == ["gpt-4o-mini"] * 3 + ["claude-fake"]
    return dict(zip(RUNS, runs, strict=True))


LLM, TOOL, OK, ERROR = StepKind.LLM, StepKind.TOOL, StepStatus.OK, StepStatus.ERROR


@pytest.mark.parametrize("path", WITH_CONTENT, ids=lambda p: p.name)
def test_one_step_per_operation(path: Path) -> None:
    runs = _runs(path)
    assert {r.metadata["format"] for r in runs.values()} == {"datadog"}
    assert _shape(runs["openai-pass"]) == [
        (LLM, "gpt-4o-mini", OK),
        (TOOL, "lookup_order", OK),
        (LLM, "gpt-4o-mini", OK),
        (TOOL, "track_shipment", OK),
        (LLM, "gpt-4o-mini", OK),
        (TOOL, "search_policies", OK),
        (LLM, "gpt-4o-mini", OK),
    ]
    assert _shape(runs["openai-tool-error"]) == [
        (LLM, "gpt-4o-mini", OK),
        (TOOL, "lookup_order", ERROR),
        (LLM, "gpt-4o-mini", OK),
    ]
    assert _shape(runs["openai-parallel"]) == [
        (LLM, "gpt-4o-mini", OK),
        (TOOL, "lookup_order", OK),
        (TOOL, "search_policies", OK),
        (LLM, "gpt-4o-mini", OK),
        (TOOL, "track_shipment", OK),
        (LLM, "gpt-4o-mini", OK),
    ]
    assert [s.name for s in runs["anthropic-pass"].steps] == [
        "claude-fake", "lookup_order", "claude-fake", "track_shipment",
        "claude-fake", "search_policies", "claude-fake",
    ]  # fmt: skip


@pytest.mark.parametrize("path", WITH_CONTENT, ids=lambda p: p.name)
def test_tool_arguments_results_and_errors(path: Path) -> None:
    runs = _runs(path)
    lookup, track, search = (s for s in runs["openai-pass"].steps if s.kind is TOOL)
    assert lookup.inputs["arguments"] == {"order_id": "A-1001"}
    assert lookup.output == {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
    assert track.output["status"] == "delayed"
    assert search.output == [
        "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping cost."
    ]
    failed = runs["openai-tool-error"].steps[1]
    assert failed.error == "order service unavailable (HTTP 503)" and failed.output is None
    assert failed.inputs["arguments"] == {"order_id": "A-1001"}


@pytest.mark.parametrize("path", WITH_CONTENT, ids=lambda p: p.name)
def test_model_calls_come_with_their_messages(path: Path) -> None:
    runs = _runs(path)
    first, *_, last = runs["openai-pass"].steps
    assert first.inputs["model"] == "gpt-4o-mini"
    assert [m["role"] for m in first.inputs["messages"]] == ["system", "user"]
    assert first.inputs["messages"][1]["content"].startswith("Where is my order A-1001")
    (call,) = first.output["tool_calls"]
    assert call["name"] == "lookup_order" and call["arguments"] == {"order_id": "A-1001"}
    assert [t["name"] for t in first.inputs["tools"]] == list(TOOLS)
    assert first.inputs["parameters"] == {"temperature": 0}
    # the last turn holds the whole conversation: each tool's result with the id of its call
    results = [m for m in last.inputs["messages"] if m["role"] == "tool"]
    calls = [c for m in last.inputs["messages"] for c in m.get("tool_calls", [])]
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
    assert json.loads(results[0]["content"])["tracking_id"] == "TRK-42"
    assert last.output["content"].startswith(ANSWER)
    # a tool step knows the call it answers
    lookup = runs["openai-pass"].steps[1]
    assert lookup.inputs["tool_call_id"] == call["id"]
    apology = runs["openai-tool-error"].steps[2]
    (failure,) = [m for m in apology.inputs["messages"] if m["role"] == "tool"]
    assert "order service unavailable" in failure["content"]
    assert apology.output["content"] == APOLOGY


@pytest.mark.parametrize("path", WITH_CONTENT, ids=lambda p: p.name)
def test_two_tool_calls_of_one_turn_and_anthropic_tool_results(path: Path) -> None:
    runs = _runs(path)
    asked = runs["openai-parallel"].steps[0]
    assert [c["name"] for c in asked.output["tool_calls"]] == ["lookup_order", "search_policies"]
    ids = [c["id"] for c in asked.output["tool_calls"]]
    assert [s.inputs["tool_call_id"] for s in runs["openai-parallel"].steps[1:3]] == ids
    claude = runs["anthropic-pass"].steps
    assert claude[0].inputs["parameters"] == {"max_tokens": 256}
    assert claude[1].inputs["tool_call_id"].startswith("toolu_")
    results = [m for m in claude[-1].inputs["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and all(r["tool_call_id"].startswith("toolu_") for r in results)


@pytest.mark.parametrize("path", [*WITH_CONTENT, APM, APM_V05], ids=lambda p: p.name)
def test_token_usage(path: Path) -> None:
    runs = _runs(path)
    run = runs["openai-pass"]
    models = [s for s in run.steps if s.kind is LLM]
    usage = run.metadata["token_usage"]
    assert [usage[s.span_id] for s in models] == [
        {"input_tokens": 40 * n, "output_tokens": 12, "total_tokens": 40 * n + 12}
        for n in range(1, 5)
    ]  # the fake server counts 20 tokens a message


@pytest.mark.parametrize("path", [APM, APM_V05], ids=lambda p: p.name)
def test_apm_spans_alone_give_the_model_calls(path: Path) -> None:
    """With LLM Observability off, ddtrace 4 records the model and usage on an integration's span,
    no messages; the tools (LLM Observability decorators) leave no span."""
    runs = _runs(path)
    assert [(s.kind, s.name) for s in runs["openai-pass"].steps] == [(LLM, "gpt-4o-mini")] * 4
    assert [(s.kind, s.name) for s in runs["anthropic-pass"].steps] == [(LLM, "claude-fake")] * 4
    assert runs["openai-pass"].steps[0].inputs == {"model": "gpt-4o-mini"}
    assert runs["openai-pass"].metadata["root_span"] == "support.request"


def test_v05_reads_as_v04() -> None:
    """The two APM encodings of one run give the same steps (their ids differ: two processes)."""
    v04, v05 = _runs(APM), _runs(APM_V05)
    assert [r.identity for r in v04.values()] == [r.identity for r in v05.values()]


def test_128_bit_trace_ids_from_dd_p_tid() -> None:
    """Only the chunk's first span carries ``_dd.p.tid``; every span of the trace takes it."""
    traces = _load(CARRIED)
    expected = set()
    for trace in traces:
        (root,) = [s for s in trace if "_dd.p.tid" in s["meta"]]
        assert sum("_dd.p.tid" in s["meta"] for s in trace) == 1
        expected.add(root["meta"]["_dd.p.tid"] + format(root["trace_id"], "016x"))
    spans = list(decode_datadog(parse_document(CARRIED.read_bytes()), _raise))
    assert {s.trace_id for s in spans} == expected and len(expected) == 4
    assert {r.id for r in read_path(CARRIED)} == expected
    assert any(s["trace_id"] >= 1 << 63 for t in traces for s in t)  # beyond 2**63: exact


def test_a_64_bit_trace_id_alone(tmp_path: Path) -> None:
    traces = _load(APM)
    for trace in traces:
        for span in trace:
            span["meta"].pop("_dd.p.tid", None)
    runs = list(read_path(_write(tmp_path, traces)))
    assert all(r.id.startswith("0" * 16) for r in runs) and len(runs) == 4


def test_an_event_is_read_in_its_apm_trace() -> None:
    """An event's trace is its APM trace (``_dd.apm_trace_id``), its span ids the APM spans' own:
    the two records of one run name the same spans."""
    events = {s.span_id: s for s in decode_datadog(_load(SPLIT_EVENTS), _raise)}
    apm = {s.span_id: s for s in decode_datadog(_load(SPLIT_TRACES), _raise)}
    assert set(events) < set(apm)
    for span_id, event in events.items():
        assert event.trace_id == apm[span_id].trace_id
        assert event.attributes["datadog.llmobs.trace_id"] != event.trace_id


def test_both_records_in_two_files_are_one_run(runner: CliRunner, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(SPLIT_TRACES)))
    result = ok(invoke(runner, store, "import", str(SPLIT_EVENTS)))
    assert "4 merged" in result.output
    with Store.open(store) as db:
        runs = [db.get(r.id) for r in db.runs()]
    assert sorted(len(r.steps) for r in runs) == [3, 6, 7, 7]
    assert all("messages" in s.inputs for r in runs for s in r.steps if s.kind is LLM)


@pytest.mark.parametrize("order", ["apm first", "events first"])
def test_both_records_in_one_document_are_one_run(tmp_path: Path, order: str) -> None:
    traces, events = _load(SPLIT_TRACES), _load(SPLIT_EVENTS)
    both = [*traces, *events] if order == "apm first" else [*events, *traces]
    runs = {r.id: r for r in read_path(_write(tmp_path, both))}
    alone = {r.id: r for r in read_path(SPLIT_EVENTS)}
    assert sorted(runs) == sorted(alone)
    for key, run in runs.items():
        assert run.identity == alone[key].identity
        assert run.metadata["root_span"] == "support.request"  # the APM trace's root, above


def test_the_native_fields_are_kept() -> None:
    spans = list(decode_datadog(_load(EVENTS), _raise))
    chat = next(s for s in spans if s.name == "OpenAI.createChatCompletion")
    assert chat.attributes["datadog.llmobs.span.kind"] == "llm"
    assert chat.attributes["datadog.llmobs.model_name"] == "gpt-4o-mini"
    assert chat.attributes["datadog.llmobs.metrics.input_tokens"] == 40
    assert "ml_app:support-agent" in chat.attributes["datadog.llmobs.tags"]
    assert chat.resource == {"service.name": "support-agent"}
    workflow = next(s for s in spans if s.name == "support_run")
    assert workflow.parent_span_id == "" and workflow.attributes["datadog.llmobs.span.kind"] == (
        "workflow"
    )
    failed = next(s for s in spans if s.status_code == 2)
    assert failed.attributes["datadog.llmobs.error.type"] == "agent.ToolFailure"


def test_forced_format(runner: CliRunner, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(APM), "--format", "datadog"))
    otlp = next((ROOT / "tests" / "fixtures" / "frameworks").glob("*.otlp.jsonl"))
    line = one_line(invoke(runner, store, "import", str(otlp), "--format", "datadog"))
    assert "not a datadog document, the format it was given as" in line
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(APM, "flat-spans"))
    assert "not a flat-spans document" in str(caught.value)
    assert "--format datadog" in str(caught.value)


def one_line(result: Any) -> str:
    assert result.exit_code == 1, result.output
    error = next(line for line in result.stderr.splitlines() if line.strip())
    assert error.startswith("error: ")
    return error


def test_the_misleading_refusal_is_gone(runner: CliRunner, tmp_path: Path) -> None:
    """One span of the list (what the issue quoted) imports; nothing says 'expected an object'."""
    (span, *_) = _load(APM)[0]
    result = ok(invoke(runner, tmp_path / "s.db", "import", str(_write(tmp_path, [span]))))
    assert "expected an object" not in result.output
    assert claiming_row([span]).name == "datadog"  # type: ignore[union-attr]


def test_every_other_format_keeps_its_reader() -> None:
    flat = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}
    assert claiming_row([flat]).name == "flat-spans"  # type: ignore[union-attr]
    assert claiming_row({"spans": [], "final_output": 1}).name == "any-agent"  # type: ignore[union-attr]
    assert claiming_row([["", "x"], [[1]]]) is not None  # a /v0.5 body, even with a bad span
    assert claiming_row([["x"], []]) is None  # strings must start with ""


@pytest.mark.parametrize(
    ("path", "at", "key", "value", "said"),
    [
        (CARRIED, (0, 2), "span_id", "x1", "[0][2].span_id"),
        (CARRIED, (1, 0), "start", -4, "[1][0].start"),
        (CARRIED, (0, 1), "trace_id", 1 << 64, "[0][1].trace_id"),
        (CARRIED, (0, 1), "meta", ["a"], "[0][1].meta"),
        (CARRIED, (2, 3), "metrics", {"x": "many"}, "[2][3].metrics.x"),
        (EVENTS, (3, 0), "parent_id", "0xzz", "[3].spans[0].parent_id"),
        (EVENTS, (5, 0), "meta", {"span": {"kind": 7}}, "[5].spans[0].meta.span.kind"),
        (EVENTS, (1, 0), "duration", "long", "[1].spans[0].duration"),
    ],
)
def test_a_damaged_span_is_located_and_nothing_is_stored(
    runner: CliRunner,
    tmp_path: Path,
    path: Path,
    at: tuple[int, int],
    key: str,
    value: Any,
    said: str,
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(APM)))
    with Store.open(store) as db:
        before = db.counts()
    document = _load(path)
    outer, inner = at
    item = document[outer]
    (item["spans"] if isinstance(item, dict) else item)[inner][key] = value
    damaged = _write(tmp_path, document, "damaged.json")
    line = refused(invoke(runner, store, "import", str(damaged)), damaged)
    assert f"at {said}" in line, line
    assert (repr(value) if not isinstance(value, dict) else "") in line
    with Store.open(store) as db:
        assert db.counts() == before
    kept = list(read_path(damaged, options=ReadOptions(skip_invalid=True)))
    assert len(kept) == 4


def test_a_damaged_line_of_json_lines_names_its_line(runner: CliRunner, tmp_path: Path) -> None:
    events = _load(EVENTS)
    events[4]["spans"][0]["span_id"] = 1.5
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    line = refused(invoke(runner, tmp_path / "s.db", "import", str(path)), path)
    assert line.startswith(f"error: {path}:5: ") and "1.5" in line, line


def test_a_wrong_document_is_refused_in_one_line(runner: CliRunner, tmp_path: Path) -> None:
    path = _write(tmp_path, {"event_type": "span", "spans": "none"})
    line = refused(invoke(runner, tmp_path / "s.db", "import", str(path), "--format", "datadog"),
                   path)  # fmt: skip
    assert "not a datadog document" in line


int64 = st.integers(0, (1 << 64) - 1)
ids = st.one_of(int64, int64.map(str), st.integers(-3, 1 << 70), json_values)
apm_spans = st.fixed_dictionaries(
    {"trace_id": ids, "span_id": ids, "start": st.one_of(int64, json_values)},
    optional={
        "parent_id": ids,
        "name": json_values,
        "resource": json_values,
        "service": json_values,
        "duration": st.one_of(st.integers(-5, 1 << 40), json_values),
        "error": json_values,
        "type": json_values,
        "meta": st.one_of(
            st.dictionaries(
                st.sampled_from(["_dd.p.tid", "_dd.llmobs.span_kind", "openai.request.model", "x"]),
                st.one_of(st.sampled_from(["llm", "tool", "6b15014f00000000"]), json_values),
                max_size=3,
            ),
            json_values,
        ),
        "metrics": st.one_of(st.dictionaries(st.text(max_size=6), json_values), json_values),
        "meta_struct": st.one_of(st.fixed_dictionaries({"_llmobs": json_values}), json_values),
    },
)
events = st.fixed_dictionaries(
    {"span_id": ids, "start_ns": st.one_of(int64, json_values), "meta": st.just({})},
    optional={
        "trace_id": st.one_of(st.text("0123456789abcdef", max_size=33), json_values),
        "parent_id": st.one_of(st.just("undefined"), ids),
        "duration": json_values,
        "status": st.sampled_from(["ok", "error", 3]),
        "metrics": json_values,
        "tags": json_values,
        "_dd": json_values,
    },
).flatmap(
    lambda event: st.fixed_dictionaries(
        {
            "span": st.one_of(
                st.fixed_dictionaries(
                    {"kind": st.sampled_from(["llm", "tool", "workflow", "retrieval", 4])}
                ),
                json_values,
            ),
            "input": st.one_of(st.fixed_dictionaries({"messages": json_values}), json_values),
            "output": json_values,
            "error": json_values,
        }
    ).map(lambda meta: {**event, "meta": meta})
)
documents = st.one_of(
    st.lists(st.lists(apm_spans, max_size=3), max_size=3),
    st.lists(apm_spans, max_size=4),
    st.lists(
        st.fixed_dictionaries(
            {"event_type": st.just("span"), "spans": st.lists(events, max_size=3)}
        ),
        max_size=3,
    ),
    st.lists(st.one_of(events, apm_spans), max_size=4),
)


@FAST
@given(document=documents, skip=st.booleans())
def test_datadog_shaped_input_never_tracebacks(tmp_path: Path, document: Any, skip: bool) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(document))
    _read_all(path, skip)


@FAST
@given(low=int64, high=int64)
def test_integer_ids_are_their_hex_exactly(low: int, high: int) -> None:
    """Beyond 2**53 too: the document is parsed with its integers exact."""
    span = _load(APM)[0][0]
    span.update(trace_id=low, span_id=low or 1, parent_id=0)
    span["meta"]["_dd.p.tid"] = format(high, "016x")
    document = parse_document(json.dumps([[span]]).encode())
    (record,) = decode_datadog(document, _raise)
    assert record.trace_id == ("" if not (high or low) else format(high << 64 | low, "032x"))
    assert record.span_id == format(low or 1, "016x")


def test_lint_names_the_setting_that_records_messages(runner: CliRunner, tmp_path: Path) -> None:
    """The APM spans alone hold no messages: ddtrace's LLM Observability records them."""
    result = invoke(runner, tmp_path / "s.db", "lint", str(APM), "--json")
    reasons = [r for run in json.loads(result.stdout) for r in run["reasons"]]
    assert len(reasons) == 26  # 13 model calls, each without its messages and its answer
    assert {r["instrumentation"] for r in reasons} == {"ddtrace (Datadog)"}
    assert all("DD_LLMOBS_ENABLED=1" in r["setting"] for r in reasons)
    events = ok(invoke(runner, tmp_path / "s.db", "lint", str(EVENTS), "--json"))
    assert [run["reasons"] for run in json.loads(events.stdout)] == [[]] * 4


def test_a_value_ddtrace_dropped_for_its_size_is_not_read_as_the_value() -> None:
    """Over DD_LLMOBS_EVENT_SIZE_BYTES ddtrace replaces an event's input and output with a note
    (``collection_errors: ["dropped_io"]``): the model call comes in without them, never with the
    note as its messages, and lint names the setting."""
    runs = _runs(HERE / "dropped.events.json")
    first = runs["openai-pass"].steps[0]
    assert "messages" not in first.inputs and first.output is None
    assert first.inputs["model"] == "gpt-4o-mini" and first.inputs["tools"]
    lookup = runs["openai-pass"].steps[1]  # a small event keeps its values
    assert lookup.inputs["arguments"] == {"order_id": "A-1001"}
    spans = list(decode_datadog(_load(HERE / "dropped.events.json"), _raise))
    cut = [s for s in spans if "datadog.llmobs.collection_errors" in s.attributes]
    assert cut and all("datadog.llmobs.input.value" not in s.attributes for s in cut)
