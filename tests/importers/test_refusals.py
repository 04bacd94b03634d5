"""Refusals that help (issue 39, item 6): a document no reader claims says what it looks like and
what to do.

Before: a Datadog span list got "expected an object, got 'Messages.create' at [0].resource" (the
flat span reader claimed it by its ids and failed at a value it does not read: it read as a corrupt
file), a Zipkin array "expected an OTLP JSON object with resourceSpans", a one-line MLflow trace a
stray ``:1:``, and none said what the file was or what to do.

The documents below are each family's shape as the tool writes it, cut to the keys a family is
told by; the published files of the corpus are read in place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from otel_replay import TraceFormatError, read_path
from otel_replay.importers._documents import FORMAT_NAMES, reader_for
from otel_replay.importers._lookalikes import FAMILIES, describe, lookalike
from tests.cli_helpers import invoke, one_line_error

#: A ddtrace span as its agent payload carries it (``resource`` is text, tags under ``meta``).
DATADOG_SPAN = {
    "trace_id": 15538573068790617574,
    "span_id": 13126027150826809231,
    "parent_id": 0,
    "name": "anthropic.request",
    "resource": "Messages.create",
    "service": "support-agent",
    "start": 1796538339749025234,
    "duration": 257817027,
    "error": 0,
    "meta": {"anthropic.request.model": "claude-3-5-haiku"},
    "metrics": {"_sampling_priority_v1": 1},
}

#: One document of each family no reader of this version takes, with the family's name.
UNREAD: dict[str, tuple[Any, str]] = {
    "chrome": ({"traceEvents": [{"ph": "X", "ts": 1, "pid": 1}]}, "Chrome trace events"),
    "chrome-array": ([{"name": "a", "ph": "X", "ts": 1, "dur": 2, "pid": 1}], "Chrome trace"),
    "har": ({"log": {"version": "1.2", "entries": []}}, "an HTTP archive (HAR)"),
    "xray": (
        {"trace_id": "1-5759e988-bd862e3fe1be46a994272793", "id": "defdfd9912dc5a56",
         "start_time": 1461096053.37518, "name": "api"},
        "an AWS X-Ray segment",
    ),
    "honeycomb": (
        [{"trace.trace_id": "a", "trace.span_id": "b", "name": "x", "duration_ms": 1}],
        "Honeycomb events",
    ),
    "newrelic": ([{"common": {}, "spans": [{"id": "b", "trace.id": "a"}]}], "a New Relic Trace API payload"),
    "elastic": ({"transaction": {"id": "b", "trace_id": "a", "name": "GET /"}}, "an Elastic APM transaction"),
    "prometheus": ({"status": "success", "data": {"resultType": "vector"}}, "a Prometheus query answer"),
    "chat-request": (
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        "an OpenAI chat completions request",
    ),
    "chat-completion": (
        {"id": "chatcmpl-1", "object": "chat.completion", "choices": []},
        "an OpenAI chat completion",
    ),
    "transcript": ([{"role": "user", "content": "hi"}], "a chat transcript"),
    "langchain-events": (
        [{"event": "on_chain_start", "run_id": "r", "name": "x", "data": {}}],
        "LangChain callback events",
    ),
}  # fmt: skip


def _write(tmp_path: Path, document: Any, name: str = "doc.json", indent: int = 1) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=indent))
    return path


@pytest.mark.parametrize("case", sorted(UNREAD))
def test_a_document_no_reader_takes_says_what_it_looks_like(tmp_path: Path, case: str) -> None:
    document, name = UNREAD[case]
    path = _write(tmp_path, document)
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: not a trace document: it is {describe(document)}; ")
    assert f"it looks like {name}" in message, message
    family = lookalike(document)
    assert family is not None and message.endswith(family.advice(FORMAT_NAMES))
    assert "\n" not in message


def test_a_datadog_span_list_is_named_not_refused_deep_inside(tmp_path: Path) -> None:
    """The flat span reader claimed it (a span's ids and a name at the top) and failed at
    ``[0].resource``; no generic reader claims a document of a named family now."""
    path = _write(tmp_path, [DATADOG_SPAN, DATADOG_SPAN])
    if "datadog" in FORMAT_NAMES:  # its own reader takes it: the refusal is that of another row
        with pytest.raises(TraceFormatError) as caught:
            list(read_path(path, "flat-spans"))
        assert "not a flat-spans document, the format it was given as" in str(caught.value)
        return
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    message = str(caught.value)
    assert "[0].resource" not in message and "expected an object" not in message
    assert "a JSON array of 2 objects with keys 'trace_id', 'span_id', 'parent_id'" in message
    assert "it looks like a Datadog APM span list" in message
    assert message.endswith(
        "send it through the OpenTelemetry Collector with the datadog receiver and export OTLP"
    )


def test_a_format_given_by_name_says_which_format_reads_the_file(tmp_path: Path) -> None:
    flat = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}
    path = _write(tmp_path, [flat])
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path, "langfuse"))
    assert str(caught.value).endswith(
        "it reads as flat-spans: give --format flat-spans, or leave it out"
    )
    chrome, _ = UNREAD["chrome"]
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(_write(tmp_path, chrome, "chrome.json"), "span-dump"))
    message = str(caught.value)
    assert "not a span-dump document, the format it was given as: it is a JSON object" in message
    assert message.endswith("Chrome trace events (a profiler timeline): this holds no spans")


def test_a_family_names_the_format_that_reads_it_once_a_row_does() -> None:
    family = next(f for f in FAMILIES if f.name == "a Datadog APM span list")
    assert family.advice({"datadog"}) == "give --format datadog"
    assert "OpenTelemetry Collector" in family.advice(set())


def test_a_file_of_one_unclaimed_line_is_refused_as_a_file(tmp_path: Path) -> None:
    """A one-line JSON file was refused at ``file:1:``, as if one line of many were wrong."""
    document = {"info": {"request_id": "tr-1"}, "data": {"spans": []}}  # MLflow's Trace.to_json()
    one = _write(tmp_path, document, "trace.json", indent=0)
    one.write_text(json.dumps(document))  # one line, no newline: as json.dump writes it
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(one))
    assert str(caught.value).startswith(f"{one}: not a trace document: it is a JSON object with")
    assert "MLflow trace" in str(caught.value)
    # a file of several records: the refusal names the line of each
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"hello": 1}) + "\n" + json.dumps({"hello": 2}) + "\n")
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(lines))
    assert str(caught.value).startswith(f"{lines}:1: not a trace document")


def test_published_files_that_are_no_trace_say_what_they_are(corpus: Path) -> None:
    schema = corpus / "otel-semconv-genai" / "gen-ai-input-messages.json"
    with pytest.raises(TraceFormatError, match=r"it looks like a JSON Schema: this holds no spans"):
        list(read_path(schema))
    attributes = corpus / "openinference-genai-fixtures" / "otel_genai_client_span_tool_calls.json"
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(attributes))
    assert "one span's GenAI attributes without the span" in str(caught.value)
    logs = corpus / "otlp-proto-examples" / "logs.json"
    with pytest.raises(TraceFormatError, match=r"OTLP logs file"):
        list(read_path(logs))


def test_a_text_file_says_what_it_looks_like(tmp_path: Path) -> None:
    path = tmp_path / "metrics.txt"
    path.write_text("# HELP requests_total Requests.\n# TYPE requests_total counter\n")
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(path))
    assert str(caught.value).endswith(
        "it looks like a Prometheus metrics exposition: this holds no spans"
    )


def test_the_command_refuses_in_one_line_and_leaves_the_store_alone(
    runner: CliRunner, tmp_path: Path
) -> None:
    store = tmp_path / "store.db"
    path = _write(tmp_path, UNREAD["chat-request"][0], "request.json")
    result = invoke(runner, store, "import", str(path))
    assert result.exit_code == 1
    line = result.stderr.splitlines()[0]
    assert line.startswith(f"error: {path}: not a trace document") and "completions request" in line
    assert invoke(runner, store, "list", "--json").stdout.strip() == "[]"
    line = one_line_error(invoke(runner, store, "lint", str(path)))
    assert line.startswith(f"error: {path}: not a trace document")


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({}, "an empty JSON object"),
        ([], "an empty JSON array"),
        ("text", "a JSON string 'text'"),
        ([[{"a": 1}], [{"b": 2}]], "a JSON array of 2 arrays, the first a JSON array of 1 "
         "object with key 'a'"),
        ([{f"k{i}": i} for i in range(10)], "a JSON array of 10 objects with keys 'k0', 'k1', "
         "'k2', 'k3', 'k4', 'k5', 'k6', 'k7' and 2 more"),
        ({"a\nb": 1}, "a JSON object with key 'a\\nb'"),  # escaped: one line on a terminal
        ([1, "x"], "a JSON array of 2 values, the first a JSON number 1"),
    ],
)  # fmt: skip
def test_a_shape_is_described_in_a_few_words(document: Any, said: str) -> None:
    assert describe(document) == said


def test_every_family_is_matched_by_its_own_paths_only_where_a_reader_does_not_claim() -> None:
    """Each family's paths hold for the documents above; no generic reader claims one of them."""
    for document, _ in UNREAD.values():
        assert reader_for(document)[0] == "otlp-json"  # no row claims it: the refusal's name
