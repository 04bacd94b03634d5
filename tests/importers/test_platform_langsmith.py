"""LangSmith's runs: what the real ``langsmith`` SDK sent for a small support agent
(`scripts/make_langsmith_fixtures.py`: ``@traceable`` tools and chain, ``wrap_openai`` model calls,
a re-wrapped model call, a failing tool, two tool calls from one turn, feedback ``outcome``), as the
batch endpoint's payloads, the multipart endpoint's parts put back together, and the SDK's run trees.
Shapes made here (the API's run list, one payload holding a post and its patch, damage) are derived
from those files, never written whole by hand.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from otel_replay import ReadOptions, StepKind, StepStatus, Store, TraceFormatError, read_path
from otel_replay.importers._documents import claiming_row
from otel_replay.importers._langsmith import decode_langsmith, span_id
from otel_replay.model import Trajectory
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.importers.test_fuzz import FAST, _read_all, json_values
from tests.importers.test_platform_jaeger import refused

HERE = ROOT / "tests" / "fixtures" / "platforms" / "langsmith"
BATCH = HERE / "batch.jsonl"
MULTIPART = HERE / "multipart.jsonl"
TREES = HERE / "run-trees.jsonl"
ZIPKIN = ROOT / "tests" / "fixtures" / "platforms" / "zipkin" / "support-agent.zipkin.json"
L, T = StepKind.LLM, StepKind.TOOL


def _lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _runs(path: Path) -> list[dict[str, Any]]:
    """Every run object of a capture (posts and patches, trees walked)."""
    found: list[dict[str, Any]] = []

    def walk(run: dict[str, Any]) -> None:
        found.append(run)
        for child in run.get("child_runs") or []:
            walk(child)

    for document in _lines(path):
        for run in [*(document.get("post") or []), *(document.get("patch") or [])]:
            walk(run)
        if "run_type" in document:
            walk(document)
    return found


def _by_name(path: Path) -> dict[str, Trajectory]:
    """The runs of a capture by the name the script gave each (its root run's metadata)."""
    names = {
        run["trace_id"].replace("-", ""): run["extra"]["metadata"]["support_run"]
        for run in _runs(path)
        if run.get("parent_run_id") is None and "support_run" in run["extra"]["metadata"]
    }
    return {names[run.id]: run for run in read_path(path)}


def _shape(run: Trajectory) -> list[tuple[StepKind, str, StepStatus]]:
    return [(s.kind, s.name, s.status) for s in run.steps]


OK, ERROR = StepStatus.OK, StepStatus.ERROR
EXPECTED = {
    "pass": [
        (L, "gpt-fake", OK),
        (T, "lookup_order", OK),
        (L, "gpt-fake", OK),
        (T, "track_shipment", OK),
        (L, "gpt-fake", OK),
        (T, "search_policies", OK),
        (L, "gpt-fake", OK),
    ],
    "tool-error": [(L, "gpt-fake", OK), (T, "lookup_order", ERROR), (L, "gpt-fake", OK)],
    "parallel": [
        (L, "gpt-fake", OK),
        (T, "lookup_order", OK),
        (T, "search_policies", OK),
        (L, "gpt-fake", OK),
        (T, "track_shipment", OK),
        (L, "gpt-fake", OK),
    ],
}
EXPECTED["rewrapped"] = EXPECTED["langchain"] = EXPECTED["pass"]


@pytest.mark.parametrize("path", [BATCH, MULTIPART, TREES], ids=lambda p: p.name)
def test_one_step_per_operation_the_agent_performed(path: Path) -> None:
    runs = _by_name(path)
    assert {name: _shape(run) for name, run in runs.items()} == EXPECTED
    assert {run.metadata["format"] for run in runs.values()} == {"langsmith"}
    for run in runs.values():  # counted from what the SDK recorded: its model requests and tools
        recorded = {r["id"]: r for r in _runs(path) if r["trace_id"].replace("-", "") == run.id}
        requests = [r for r in recorded.values() if r["name"] == "ChatOpenAI"]
        tools = [r for r in recorded.values() if r["run_type"] == "tool"]
        assert len(run.steps) == len(requests) + len(tools)
        assert all(step.span_id for step in run.steps)  # every step from a span: none rebuilt


def test_a_model_call_traced_twice_is_one_step() -> None:
    """The re-wrapped run: a ``@traceable(run_type="llm")`` function around the wrapped client
    records each model call as two nested llm runs; the step is read from the richer, inner one."""
    run = _by_name(BATCH)["rewrapped"]
    recorded = [r for r in _runs(BATCH) if r["trace_id"].replace("-", "") == run.id]
    outer = {r["id"] for r in recorded if r["name"] == "call_model"}
    inner = {r["id"]: r for r in recorded if r["name"] == "ChatOpenAI"}
    assert len(outer) == len(inner) == 4
    models = [s for s in run.steps if s.kind is L]
    assert {s.span_id for s in models} == {span_id(i) for i in inner}
    assert all(s.inputs["model"] == "gpt-fake" and len(s.inputs["tools"]) == 3 for s in models)
    assert [s.hash for s in run.steps] != [s.hash for s in _by_name(BATCH)["pass"].steps]
    assert run.identity == _by_name(BATCH)["pass"].identity  # the same calls, made the same way


def test_model_calls_come_with_their_messages_and_tools() -> None:
    run = _by_name(BATCH)["pass"]
    first, lookup, second, *_ = run.steps
    assert [m["role"] for m in first.inputs["messages"]] == ["system", "user"]
    assert first.inputs["messages"][1]["content"].startswith("Where is my order A-1001")
    assert [t["name"] for t in first.inputs["tools"]] == [
        "lookup_order",
        "track_shipment",
        "search_policies",
    ]
    (call,) = first.output["tool_calls"]
    assert call["name"] == "lookup_order" and call["arguments"] == {"order_id": "A-1001"}
    assert first.output["finish_reason"] == "tool_calls"
    assert lookup.inputs == {"arguments": {"order_id": "A-1001"}, "tool_call_id": call["id"]}
    told = second.inputs["messages"][-1]
    assert told["role"] == "tool" and told["tool_call_id"] == call["id"]
    assert json.loads(told["content"]) == lookup.output
    assert run.steps[-1].output["content"].startswith("Order A-1001 has shipped but is delayed")
    assert run.metadata["token_usage"][first.span_id]["input_tokens"] > 0


def test_tool_arguments_results_and_errors() -> None:
    runs = _by_name(BATCH)
    search = runs["pass"].steps[5]
    assert search.inputs["arguments"] == {"query": "late delivery refund"}
    assert search.output == [  # the SDK's {"output": [...]} for a value that is not an object
        "Refunds: a delivery more than 3 days late qualifies for a full refund of the shipping "
        "cost."
    ]
    failed = runs["tool-error"].steps[1]
    assert failed.status is ERROR and failed.output is None
    assert failed.error == "ToolFailure('order service unavailable (HTTP 503)')"  # no traceback
    apology = runs["tool-error"].steps[2]
    assert apology.inputs["messages"][-1]["content"].startswith("error: order service unavailable")
    first = runs["parallel"].steps[0]
    asked = [c["id"] for c in first.output["tool_calls"]]
    assert [s.inputs["tool_call_id"] for s in runs["parallel"].steps[1:3]] == asked


def test_langchain_runs_come_with_their_messages() -> None:
    """The agent on LangChain: its chat model's inputs are LangChain's serialised messages, a
    tool's result is its ToolMessage; usage and finish reason are read from the generation."""
    run = _by_name(BATCH)["langchain"]
    third = run.steps[2]
    assert [m["role"] for m in third.inputs["messages"]] == ["system", "user", "assistant", "tool"]
    asked = third.inputs["messages"][2]["tool_calls"][0]
    assert asked["name"] == "lookup_order" and asked["arguments"] == {"order_id": "A-1001"}
    lookup = run.steps[1]
    assert lookup.inputs == {"arguments": {"order_id": "A-1001"}, "tool_call_id": asked["id"]}
    assert lookup.output == {"order_id": "A-1001", "status": "shipped", "tracking_id": "TRK-42"}
    assert run.metadata["token_usage"][run.steps[0].span_id]["output_tokens"] > 0


def test_a_langchain_model_call_outputs_its_message() -> None:
    """A LangChain chat model's run outputs an ``LLMResult``; its step's output is the reply in it."""
    for path in (BATCH, MULTIPART, TREES):
        first = _by_name(path)["langchain"].steps[0]
        assert first.output["role"] == "assistant"
        assert [c["name"] for c in first.output["tool_calls"]] == ["lookup_order"]
        assert first.output["finish_reason"] == "tool_calls"


def test_the_outcome_is_the_feedback_named_outcome() -> None:
    """Feedback ``outcome`` on the root run is the outcome; a failed tool run does not fail the
    run; the run trees carry no feedback, so no outcome (not 0 for the failed tool)."""
    for path in (BATCH, MULTIPART):
        outcomes = {name: run.outcome for name, run in _by_name(path).items()}
        assert outcomes == {
            "pass": 1.0,
            "tool-error": 0.0,
            "parallel": 1.0,
            "rewrapped": 1.0,
            "langchain": 1.0,
        }
    assert {run.outcome for run in _by_name(TREES).values()} == {None}


def test_other_feedback_is_an_outcome_only_when_named(tmp_path: Path) -> None:
    lines = _lines(BATCH)
    for line in lines:
        if line.get("key") == "outcome":
            line["key"] = "correctness"
    path = tmp_path / "correctness.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert {run.outcome for run in read_path(path)} == {None}
    named = ReadOptions(outcome_attribute="langsmith.feedback.correctness")
    assert sorted(str(run.outcome) for run in read_path(path, options=named)) == [
        "0.0",
        *["1.0"] * 4,
    ]


def test_a_run_posted_then_patched_is_one_span(tmp_path: Path) -> None:
    lines = _lines(BATCH)
    patched = {run["id"] for line in lines for run in line.get("patch") or []}
    posted_open = {
        run["id"] for line in lines for run in line.get("post") or [] if run.get("end_time") is None
    }
    assert patched & posted_open  # the capture holds runs whose end came in a later request
    options = ReadOptions()
    runs = list(read_path(BATCH, options=options))
    assert options.report.warnings == []  # a patch is not a span delivered twice
    steps = {s.span_id: s for run in runs for s in run.steps}
    spans = {s.span_id: s for run in runs for s in run.spans}
    for run_id in patched & posted_open:
        span = spans[span_id(run_id)]
        assert span.end_time_unix_nano and span.name
        if span_id(run_id) in steps:
            assert steps[span_id(run_id)].output is not None
    # every post and patch in one payload: merged by id, the same runs
    together = {"post": [], "patch": []}
    for line in lines:
        for key in ("post", "patch"):
            together[key].extend(line.get(key) or [])
    one = tmp_path / "one-payload.json"
    one.write_text(json.dumps(together))
    merged = {run.id: run for run in read_path(one)}
    assert {i: r.identity for i, r in merged.items()} == {r.id: r.identity for r in runs}


def test_the_same_agent_by_every_route_is_the_same_run() -> None:
    """Batch and multipart are two runs of the agent, the trees the multipart run's own: content
    identity (ids and clocks aside) is the same for each named run."""
    routes = [_by_name(path) for path in (BATCH, MULTIPART, TREES)]
    for name in EXPECTED:
        assert len({route[name].identity for route in routes}) == 1, name
    assert {r.id for r in routes[1].values()} == {r.id for r in routes[2].values()}


def test_the_api_run_list_takes_parents_and_order_from_dotted_order(tmp_path: Path) -> None:
    """``POST /runs/query`` answers a flat list; here the trees' runs, shuffled, without
    ``parent_run_id`` or ``trace_id``, and the multipart run's feedback as ``feedback_stats``."""
    scores = {line["run_id"]: line["score"] for line in _lines(MULTIPART) if "key" in line}
    flat = []
    for run in _runs(TREES):
        item = {
            k: v for k, v in run.items() if k not in ("child_runs", "parent_run_id", "trace_id")
        }
        if run["id"] in scores:
            item["feedback_stats"] = {"outcome": {"n": 1, "avg": scores[run["id"]]}}
        flat.append(item)
    random.Random(7).shuffle(flat)
    path = tmp_path / "query.json"
    path.write_text(json.dumps({"runs": flat, "cursors": {"next": None}}))
    from_list = {run.id: run for run in read_path(path)}
    from_trees = {run.id: run for run in read_path(TREES)}
    assert {i: r.identity for i, r in from_list.items()} == {
        i: r.identity for i, r in from_trees.items()
    }
    assert {i: [s.span_id for s in r.steps] for i, r in from_list.items()} == {
        i: [s.span_id for s in r.steps] for i, r in from_trees.items()
    }
    assert {r.outcome for r in from_list.values()} == {0.0, 1.0}


def test_ids_map_deterministically() -> None:
    (tree,) = [json.loads(line) for line in TREES.read_text().splitlines()[:1]]
    spans = list(decode_langsmith(tree, _raise))
    root = next(s for s in spans if not s.parent_span_id)
    assert root.trace_id == tree["trace_id"].replace("-", "")
    assert root.span_id == span_id(tree["id"]) == span_id(tree["id"].upper())
    assert root.attributes["langsmith.span.id"] == tree["id"]
    assert len({s.span_id for s in spans}) == len(spans)
    assert [s.attributes["langsmith.span.dotted_order"] for s in spans] == sorted(
        s.attributes["langsmith.span.dotted_order"] for s in spans
    )


def _raise(exc: TraceFormatError) -> None:
    raise exc


def test_format_langsmith_is_forced_and_refuses_other_documents(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "s.db"
    result = ok(invoke(runner, store, "import", str(BATCH), "--format", "langsmith"))
    assert "4" in result.output
    line = refused(invoke(runner, store, "import", str(ZIPKIN), "--format", "langsmith"), ZIPKIN)
    assert "not a langsmith document" in line
    assert claiming_row(_lines(TREES)[0]).name == "langsmith"  # type: ignore[union-attr]
    assert claiming_row(_lines(BATCH)[0]).name == "langsmith"  # type: ignore[union-attr]
    flat = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}
    assert claiming_row([flat]).name == "flat-spans"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("start_time", "soon", "start_time"),
        ("dotted_order", "20261206T000000Znot-a-run", "dotted_order"),
        ("error", {"message": "x"}, "error"),
        ("extra", ["metadata"], "extra"),
        ("events", [{"name": "new_token", "time": "soon"}], "events[0].time"),
        ("child_runs", {"id": "x"}, "child_runs"),
    ],
)
def test_a_damaged_run_is_located_and_nothing_is_stored(
    runner: CliRunner, tmp_path: Path, key: str, value: Any, said: str
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(TREES)))
    with Store.open(store) as db:
        before = db.counts()
    lines = _lines(BATCH)
    number, line = next((n, d) for n, d in enumerate(lines, start=1) if d.get("post"))
    line["post"][2][key] = value
    path = tmp_path / "damaged.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    error = refused(invoke(runner, store, "import", str(path)), path)
    assert error.startswith(f"error: {path}:{number}: ") and f"at post[2].{said}" in error, error
    with Store.open(store) as db:
        assert db.counts() == before
    skipped = ReadOptions(skip_invalid=True)
    assert len(list(read_path(path, options=skipped))) == 5
    assert len(skipped.report.skipped) == 1


ids = st.one_of(st.uuids().map(str), st.text(max_size=8), json_values)
times = st.one_of(st.datetimes().map(lambda d: d.isoformat()), st.text(max_size=12), json_values)
runs = st.recursive(
    st.fixed_dictionaries(
        {"id": ids, "run_type": st.one_of(st.sampled_from(["llm", "tool", "chain"]), json_values)},
        optional={
            "trace_id": ids,
            "parent_run_id": ids,
            "dotted_order": st.one_of(st.text(max_size=40), json_values),
            "name": json_values,
            "start_time": times,
            "end_time": times,
            "inputs": json_values,
            "outputs": json_values,
            "error": json_values,
            "extra": st.one_of(st.fixed_dictionaries({"metadata": json_values}), json_values),
            "events": json_values,
            "feedback_stats": json_values,
            "tags": json_values,
        },
    ),
    lambda children: st.fixed_dictionaries(
        {"id": ids, "run_type": st.just("chain"), "child_runs": st.lists(children, max_size=3)}
    ),
    max_leaves=6,
)
feedback = st.fixed_dictionaries(
    {"run_id": ids, "key": st.text(max_size=8), "score": json_values},
    optional={"trace_id": ids},
)
documents = st.one_of(
    runs,
    st.lists(st.one_of(runs, feedback), max_size=4),
    st.fixed_dictionaries(
        {}, optional={"post": st.lists(runs, max_size=3), "patch": st.lists(runs, max_size=3)}
    ),
    st.fixed_dictionaries({"runs": st.lists(runs, max_size=4)}, optional={"cursors": json_values}),
    feedback,
)


@FAST
@given(document=documents, skip=st.booleans())
def test_langsmith_shaped_input_never_tracebacks(tmp_path: Path, document: Any, skip: bool) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(document))
    _read_all(path, skip)
    lines = tmp_path / "fuzz.jsonl"
    lines.write_text(json.dumps(document) + "\n" + json.dumps(document) + "\n")
    _read_all(lines, skip)


def test_a_result_langsmith_wrapped_is_the_tools_own_through_opentelemetry_too() -> None:
    """LangSmith keeps a tool result that is not an object as ``{"output": value}``, in its runs and
    in its OpenTelemetry export alike; both routes give the tool's own value."""
    corpus = ROOT / "tests" / "fixtures" / "frameworks" / "langsmith-otel.otlp.jsonl"
    for path in (corpus, BATCH):
        results = {
            step.name: step.output
            for run in read_path(path)
            for step in run.steps
            if step.kind is T
        }
        assert isinstance(results["search_policies"], list), path
