"""Langfuse's exports and public-API JSON, read from the real files in ../shared/trace-corpus/platforms/
(traces of eight agent frameworks as Langfuse exports them): per file the exact steps, the tool
arguments and the outcome; the API's shapes of the same traces; bad input; fuzzing.

The API shapes are made here from the real exports (a trace holding its observations is what
``GET /api/public/traces/{id}`` returns; ``{data, meta}`` what the paged lists return), never written
by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from otel_replay import (
    ReadOptions,
    StepKind,
    StepStatus,
    Store,
    TraceFormatError,
    Trajectory,
    read_path,
)
from otel_replay.cli import app
from tests.importers.test_fuzz import FAST, SLOW, _read_all, iso_times, json_values

FOLDER = "platforms/langfuse-framework-traces"
OK = StepStatus.OK

# file: (trace id, [(kind, name, status)], {tool: arguments})
GOLDEN: dict[str, tuple[str, list[tuple[str, str, StepStatus]], dict[str, Any]]] = {
    "agno-2025-06-11.trace.json": (
        "080130871f53145aecf7c29d5dfb6e4c",
        [("llm", "gpt-4o-mini", OK), ("tool", "duckduckgo_search", OK), ("llm", "gpt-4o-mini", OK)],
        {"duckduckgo_search": {"query": "currently trending on Twitter"}},
    ),
    "autogen-2025-06-06.trace.json": (
        "1b72c51fabed12ae7df83bfd4a09f545", [("llm", "gpt-4o", OK)], {}
    ),
    "crewai-2025-07-11.trace.json": (
        "a287bb31e317433610d8827617471140", [("llm", "gpt-4o-mini", OK)], {}
    ),
    "langgraph-python-2025-08-22.trace.json": (
        "e1fde3efec57ce8a69bafd3fb928a7eb",
        [
            ("llm", "gpt-4o-2024-08-06", OK),
            ("tool", "Web-Search", OK),
            ("llm", "gpt-4o-2024-08-06", OK),
        ],
        {"Web-Search": {"query": "example"}},
    ),
    "llamaindex-2025-06-05.trace.json": (
        "12ea412956f99347b0503c1144acd0ec", [("llm", "gpt-4o", OK)], {}
    ),
    "openai-agents-2025-09-30.trace.json": (
        "fee618f96dc31e0ca38b2f7b26eb8b29",
        [
            ("llm", "gpt-4.1-2025-04-14", OK),
            ("tool", "get_weather", OK),
            ("llm", "gpt-4.1-2025-04-14", OK),
        ],
        {"get_weather": {"city": "Tokyo"}},
    ),
    "pydantic-ai-2025-06-06.trace.json": (
        "25f4bdeebaab60e6e1bee7e8469554bc", [("llm", "gpt-4o", OK)], {}
    ),
    "vercel-aisdk-2025-11-17.trace.json": (
        "df41e597d0a85e0d7a6ae8ebfaa70aa0",
        [("llm", "gpt-5", OK), ("tool", "getWeather", OK)],
        {"getWeather": {"location": "San Francisco"}},
    ),
}  # fmt: skip


def _read(path: Path, options: ReadOptions | None = None) -> Trajectory:
    options = options or ReadOptions()
    (run,) = read_path(path, options=options)
    assert not options.report.skipped and not options.report.warnings
    return run


def _steps(run: Trajectory) -> list[tuple[str, str, StepStatus]]:
    return [(s.kind.value, s.name, s.status) for s in run.steps]


def _export(corpus: Path, name: str) -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads((corpus / FOLDER / name).read_bytes())
    return document


def _write(tmp_path: Path, document: Any, name: str = "langfuse.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=2))
    return path


def test_every_export_in_the_corpus_has_its_golden_row(corpus: Path) -> None:
    assert {p.name for p in (corpus / FOLDER).glob("*.json")} == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_export(corpus: Path, name: str) -> None:
    trace_id, steps, arguments = GOLDEN[name]
    run = _read(corpus / FOLDER / name)
    assert run.id == trace_id
    assert _steps(run) == steps
    assert {
        s.name: s.inputs["arguments"] for s in run.steps if s.kind is StepKind.TOOL
    } == arguments
    assert run.outcome is None  # the scores here are evaluations (toxicity, hallucination)
    assert run.metadata["format"] == "langfuse"
    assert not run.metadata.get("reconstructed_steps")  # every step is an observation
    assert all(s.span_id for s in run.steps)


def test_a_model_call_wrapping_the_same_call_is_one_step(corpus: Path) -> None:
    """agno: OpenAIChat.invoke (OpenInference) around `chat gpt-4o-mini` (Langfuse's own, no OTel
    attributes) for each of its two calls: one llm step each, read from the richer wrapper."""
    run = _read(corpus / FOLDER / "agno-2025-06-11.trace.json")
    roles = {s.span_id: (s.name, s.role) for s in run.spans}
    first, _, last = run.steps
    assert roles[first.span_id] == ("OpenAIChat.invoke", "step")
    assert roles["1f883bb9668167c0"] == ("chat gpt-4o-mini", "llm")  # inside it, not a step
    assert first.output["tool_calls"][0]["name"] == "duckduckgo_search"
    assert last.inputs["messages"][-1]["role"] == "tool"


def test_a_plain_span_holding_a_tools_result_is_that_tool(corpus: Path) -> None:
    """LangGraph through Langfuse's callback handler: Web-Search is a plain SPAN whose output is the
    tool message answering the model's call; its arguments are the model's (the span kept a repr)."""
    run = _read(corpus / FOLDER / "langgraph-python-2025-08-22.trace.json")
    ask, tool, answer = run.steps
    call = ask.output["tool_calls"][0]
    assert tool.span_id == "21441266a9f21251"
    assert tool.inputs == {"arguments": call["arguments"], "tool_call_id": call["id"]}
    assert tool.output == [
        {"url": "https://example.com", "title": "Example Result", "q": "example"}
    ]
    # the tool definitions the handler lists among the messages are the call's tools
    assert [t["name"] for t in ask.inputs["tools"]] == ["Web-Search"]
    assert [m["role"] for m in answer.inputs["messages"]] == ["user", "user", "assistant", "tool"]
    assert ask.inputs["parameters"] == {"temperature": 0}  # Langfuse's modelParameters


def test_stripped_vercel_attributes_are_put_back(corpus: Path) -> None:
    run = _read(corpus / FOLDER / "vercel-aisdk-2025-11-17.trace.json")
    llm, tool = run.steps
    assert llm.inputs["messages"] == [
        {"role": "user", "content": "What is the weather like today in San Francisco?"}
    ]
    assert llm.output["tool_calls"] == [
        {
            "id": "call_DgKARp7a7IhJPDczfifMp6Ra",
            "name": "getWeather",
            "arguments": {"location": "San Francisco"},
        }
    ]
    assert tool.output == {"location": "San Francisco", "temperature": 64}


def test_langfuse_sdk_observations_keep_model_and_content(corpus: Path) -> None:
    """autogen and pydantic-ai: observations the Langfuse SDK itself made (no OTel attributes), and a
    GenAI choice Langfuse lifted into the output."""
    (llm,) = _read(corpus / FOLDER / "autogen-2025-06-06.trace.json").steps
    assert llm.inputs["model"] == "gpt-4o" and llm.output == "Hello World!"
    run = _read(corpus / FOLDER / "pydantic-ai-2025-06-06.trace.json")
    (chat,) = run.steps
    assert chat.inputs["messages"][1] == {"role": "user", "content": "What is Langfuse?"}
    assert chat.output["role"] == "assistant"
    assert chat.output["content"].startswith("Langfuse is a tool")
    assert (run.metadata["session"], run.metadata["user"]) == ("session_abc", "user_123")


def test_scores_are_an_outcome_only_when_named_so(corpus: Path, tmp_path: Path) -> None:
    path = corpus / FOLDER / "crewai-2025-07-11.trace.json"
    assert _read(path).outcome is None
    named = ReadOptions(outcome_attribute="langfuse.score.hallucination")
    assert _read(path, named).outcome == 1.0
    document = _export(corpus, "crewai-2025-07-11.trace.json")
    score = dict(document["trace"]["scores"][0], name="outcome", value=0.25)
    document["trace"]["scores"].append(score)
    assert _read(_write(tmp_path, document)).outcome == 0.25


def test_an_error_level_observation_failed(corpus: Path, tmp_path: Path) -> None:
    document = _export(corpus, "openai-agents-2025-09-30.trace.json")
    tool = next(o for o in document["observations"] if o["type"] == "TOOL")
    tool.update(level="ERROR", statusMessage="weather service unavailable")
    run = _read(_write(tmp_path, document))
    failed = [(s.name, s.status, s.error) for s in run.steps if s.status is StepStatus.ERROR]
    assert failed == [("get_weather", StepStatus.ERROR, "weather service unavailable")]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_the_public_api_trace_reads_as_the_export(corpus: Path, tmp_path: Path, name: str) -> None:
    """``GET /api/public/traces/{id}``: the trace with its observations inside."""
    document = _export(corpus, name)
    trace = dict(document["trace"], observations=document["observations"])
    run = _read(_write(tmp_path, trace))
    assert (run.id, _steps(run)) == (GOLDEN[name][0], GOLDEN[name][1])


def test_the_paged_observations_list_reads_as_the_exports(corpus: Path, tmp_path: Path) -> None:
    """``GET /api/public/observations``: observations of several traces, one page."""
    names = sorted(GOLDEN)
    data = [o for name in names for o in _export(corpus, name)["observations"]]
    page = {
        "data": data,
        "meta": {"page": 1, "limit": 100, "totalItems": len(data), "totalPages": 1},
    }
    runs = {r.id: _steps(r) for r in read_path(_write(tmp_path, page))}
    assert runs == {GOLDEN[n][0]: GOLDEN[n][1] for n in names}


def test_the_v2_observations_page_reads_as_the_export(corpus: Path, tmp_path: Path) -> None:
    """``GET /api/public/v2/observations``: a cursor in ``meta``, ``metadata`` an object."""
    name = "vercel-aisdk-2025-11-17.trace.json"
    data = [
        dict(o, metadata=json.loads(o["metadata"])) for o in _export(corpus, name)["observations"]
    ]
    run = _read(_write(tmp_path, {"data": data, "meta": {"cursor": "eyJwYWdlIjoyfQ"}}))
    assert (run.id, _steps(run)) == (GOLDEN[name][0], GOLDEN[name][1])


def test_observations_one_per_line_and_a_compact_export(corpus: Path, tmp_path: Path) -> None:
    document = _export(corpus, "langgraph-python-2025-08-22.trace.json")
    lines = tmp_path / "observations.jsonl"
    lines.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in document["observations"]))
    compact = tmp_path / "compact.json"
    compact.write_bytes(orjson.dumps(document))
    for path in (lines, compact):
        run = _read(path)
        assert _steps(run) == GOLDEN["langgraph-python-2025-08-22.trace.json"][1]
        assert run.metadata["format"] == "langfuse"


def test_uuid_ids_of_langfuse_sdks_keep_the_tree(corpus: Path, tmp_path: Path) -> None:
    """Langfuse's own SDKs name observations with UUIDs: hashed to span ids, parents follow."""
    document = _export(corpus, "openai-agents-2025-09-30.trace.json")
    uuid = {
        o["id"]: f"{o['id'][:8]}-0000-4000-8000-{o['id'][4:16]}" for o in document["observations"]
    }
    for o in document["observations"]:
        o["id"] = uuid[o["id"]]
        o["parentObservationId"] = uuid.get(o["parentObservationId"])
    run = _read(_write(tmp_path, document))
    assert _steps(run) == GOLDEN["openai-agents-2025-09-30.trace.json"][1]
    assert (
        len({s.span_id for s in run.spans}) == 5
        and sum(s.parent_span_id is None for s in run.spans) == 1
    )


def test_a_trace_without_observations_is_one_span(corpus: Path, tmp_path: Path) -> None:
    document = _export(corpus, "autogen-2025-06-06.trace.json")
    trace = dict(document["trace"], observations=[])
    run = _read(_write(tmp_path, trace))
    assert _steps(run) == [("other", "autogen-chat-trace", OK)]
    (step,) = run.steps
    assert step.inputs["langfuse.trace.output"] == document["trace"]["output"]
    assert run.metadata["session"] == "session_abc"


def test_a_trace_list_naming_observations_by_id_is_refused(corpus: Path, tmp_path: Path) -> None:
    document = _export(corpus, "autogen-2025-06-06.trace.json")
    listed = dict(document["trace"], observations=[o["id"] for o in document["observations"]])
    page = {"data": [listed], "meta": {"page": 1, "limit": 50, "totalItems": 1, "totalPages": 1}}
    path = _write(tmp_path, page)
    with pytest.raises(TraceFormatError, match=r"by id only.*at data\[0\]\.observations") as caught:
        list(read_path(path))
    assert str(path) in str(caught.value)


def _broken(corpus: Path, tmp_path: Path) -> Path:
    document = _export(corpus, "openai-agents-2025-09-30.trace.json")
    document["observations"][3]["startTime"] = "yesterday"
    return _write(tmp_path, document)


def test_a_broken_observation_is_a_located_error(corpus: Path, tmp_path: Path) -> None:
    path = _broken(corpus, tmp_path)
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    message = str(caught.value)
    assert (
        str(path) in message and "observations[3].startTime" in message and "yesterday" in message
    )
    options = ReadOptions(skip_invalid=True)
    (run,) = read_path(path, options=options)
    assert len(options.report.skipped) == 1 and len(run.spans) == 4


def test_import_of_a_broken_export_stores_nothing(
    corpus: Path, tmp_path: Path, runner: CliRunner, store_path: Path
) -> None:
    good = corpus / FOLDER / "autogen-2025-06-06.trace.json"
    given = ["import", str(good), "--store", str(store_path), "--format", "langfuse"]
    assert runner.invoke(app, given).exit_code == 0  # the format runs show, accepted by name
    with Store.open(store_path) as store:
        before = store.counts()
    path = _broken(corpus, tmp_path)
    result = runner.invoke(app, ["import", str(path), "--store", str(store_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    error, *rest = [line for line in result.stderr.splitlines() if line.strip()]
    assert error.startswith(f"error: {path}") and "observations[3].startTime" in error
    assert rest == [f"nothing from {path} was imported"]
    with Store.open(store_path) as store:
        assert store.counts() == before


# --- fuzzing: Langfuse-shaped documents with hostile values ----------------------------------------

lf_ids = st.one_of(
    st.sampled_from(["5b99c3e3411ed17b", "d950b668796240b5", "fee618f96dc31e0ca38b2f7b26eb8b29"]),
    st.uuids().map(str),
    json_values,
)
lf_texts = st.one_of(
    json_values,
    st.sampled_from(['{"attributes": {"ai.operationId": "ai.toolCall"}}', "[1, 2]", '"x"', "{"]),
    st.dictionaries(
        st.sampled_from(["attributes", "resourceAttributes", "scope", "tags"]), json_values
    ).map(json.dumps),
)
observations = st.fixed_dictionaries(
    {
        "id": lf_ids,
        "traceId": lf_ids,
        "type": st.one_of(
            st.sampled_from(["GENERATION", "SPAN", "TOOL", "AGENT", "EVENT"]), json_values
        ),
        "startTime": st.one_of(iso_times, json_values),
    },
    optional={
        "parentObservationId": lf_ids,
        "name": json_values,
        "endTime": st.one_of(iso_times, json_values),
        "metadata": lf_texts,
        "input": lf_texts,
        "output": lf_texts,
        "model": json_values,
        "level": st.one_of(st.sampled_from(["ERROR", "DEFAULT"]), json_values),
        "statusMessage": json_values,
        "usageDetails": json_values,
        "modelParameters": json_values,
    },
)
traces = st.fixed_dictionaries(
    {"id": lf_ids, "timestamp": st.one_of(iso_times, json_values)},
    optional={
        "observations": st.one_of(st.lists(observations, max_size=3), st.lists(lf_ids, max_size=2)),
        "scores": st.one_of(
            json_values,
            st.lists(
                st.fixed_dictionaries({"name": json_values, "value": json_values}), max_size=2
            ),
        ),
        "userId": json_values,
        "sessionId": json_values,
        "latency": st.one_of(st.floats(), json_values),
        "input": lf_texts,
        "name": json_values,
        "tags": json_values,
    },
)
documents = st.one_of(
    st.builds(
        lambda t, o: {"trace": t, "observations": o}, traces, st.lists(observations, max_size=4)
    ),
    traces.filter(lambda t: "observations" in t),
    st.builds(
        lambda d: {"data": d, "meta": {"page": 1, "totalItems": len(d)}},
        st.lists(st.one_of(observations, traces, json_values), max_size=3),
    ),
)


def _check(tmp_path: Path, document: Any, skip: bool, compact: bool) -> None:
    path = tmp_path / "fuzz.langfuse.json"
    path.write_text(json.dumps(document, indent=None if compact else 2))
    _read_all(path, skip)


@FAST
@given(document=documents, skip=st.booleans(), compact=st.booleans())
def test_langfuse_shaped_input_never_tracebacks(
    tmp_path: Path, document: Any, skip: bool, compact: bool
) -> None:
    _check(tmp_path, document, skip, compact)


@pytest.mark.fuzz
@SLOW
@given(document=documents, skip=st.booleans(), compact=st.booleans())
def test_langfuse_shaped_input_at_length(
    tmp_path: Path, document: Any, skip: bool, compact: bool
) -> None:
    _check(tmp_path, document, skip, compact)


def test_bad_trace_scores_keep_the_trace_s_observations(corpus: Path, tmp_path: Path) -> None:
    document = _export(corpus, "openai-agents-2025-09-30.trace.json")
    document["trace"]["scores"] = "high"
    path = _write(tmp_path, document)
    with pytest.raises(TraceFormatError, match="scores"):
        list(read_path(path))
    options = ReadOptions(skip_invalid=True)
    (run,) = read_path(path, options=options)
    assert len(options.report.skipped) == 1 and "scores" in str(options.report.skipped[0])
    assert len(run.spans) == len(document["observations"])
