"""Jaeger's JSON: the query API's answers and the UI's download, read from Jaeger's own published
files and from an LLM agent's run (`scripts/make_jaeger_zipkin_fixtures.py`; the README beside the
files names their sources). Shapes made here (a bare trace, a list, API v3 lines, a follows-from
reference, a missing parent, damage) are derived from those files, never written whole by hand.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from otel_replay import ReadOptions, StepKind, StepStatus, Store, TraceFormatError, read_path
from otel_replay.importers import Format
from otel_replay.importers._sniff import detect
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.importers.test_fuzz import FAST, _read_all, json_values

HERE = ROOT / "tests" / "fixtures" / "platforms" / "jaeger"
AGENT = HERE / "support-agent.jaeger.json"
TRACE_ID = "06a3f5be62a9701b4279530735b8cfae"
PASSING_ID = "8623121de0bbf37a94594d8b75673fca"


def _load(name: str) -> Any:
    return json.loads((HERE / name).read_text())


def _write(tmp_path: Path, document: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    return path


def test_the_agent_run_is_one_step_per_operation() -> None:
    run, passing = read_path(AGENT)
    assert run.id == TRACE_ID and run.metadata["format"] == "jaeger"
    assert run.metadata["service"] == "support-agent"
    assert [(s.kind, s.name, s.status) for s in run.steps] == [
        (StepKind.LLM, "gpt-4o-mini", StepStatus.OK),
        (StepKind.TOOL, "lookup_order", StepStatus.OK),
        (StepKind.TOOL, "issue_refund", StepStatus.ERROR),
        (StepKind.LLM, "gpt-4o-mini", StepStatus.OK),
    ]
    first, lookup, refund, last = run.steps
    calls = first.output["tool_calls"]
    assert [(c["id"], c["name"], c["arguments"]) for c in calls] == [
        ("call_lookup", "lookup_order", {"order_id": "1042"}),
        ("call_refund", "issue_refund", {"order_id": "1042"}),
    ]
    assert lookup.inputs == {"arguments": {"order_id": "1042"}, "tool_call_id": "call_lookup"}
    assert lookup.output == {
        "order_id": "1042",
        "status": "replacement shipped",
        "eta": "2026-03-17",
    }
    assert refund.error == "payments service did not answer within 30 s"
    assert "could not issue the refund" in last.output["content"]
    assert run.outcome == 0.0
    assert run.metadata["token_usage"][first.span_id] == {"input_tokens": 182, "output_tokens": 41}
    assert passing.outcome == 1.0 and passing.steps[2].status is StepStatus.OK
    assert passing.steps[2].output == {"refund_id": "R-7731", "amount": 49.0}


# file: (format sniffed, [(trace id, spans, steps)])
PUBLISHED = {
    "ui_01.json": [("00000000000000000000000000000001", 4, 2)],
    "otlp2jaeger-out.json": [("83a9efd15c1c98a977e0711cc93ee28b", 1, 1)],
    "apiv3-GetTrace.json": [("00000000000000000000000000000001", 1, 1)],
    "anonymizer-trace_success.json": [("00000000000000002be38093ead7a083", 2, 1)],
    "support-agent.jaeger.json": [(TRACE_ID, 5, 4), (PASSING_ID, 5, 4)],
}


def test_every_file_here_has_its_row() -> None:
    assert {p.name for p in HERE.glob("*.json")} == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_file(name: str) -> None:
    assert detect(HERE / name) is Format.OTLP_JSON  # JSON; the document table picks the reader
    runs = list(read_path(HERE / name))
    assert [(r.id, len(r.spans), len(r.steps)) for r in runs] == PUBLISHED[name]
    assert {r.metadata["format"] for r in runs} == {"jaeger"}


def test_typed_tags_references_and_processes_of_the_ui_model() -> None:
    """ui_01: the parent is the first CHILD_OF of the same trace (one into another trace is not),
    int64 beyond 2**53 is written as text, binary stays base64 text, each process is a resource."""
    from otel_replay.importers._documents import reader_for

    name, decode = reader_for(_load("ui_01.json"))
    spans = list(decode(_load("ui_01.json"), _raise))
    assert name == "jaeger"
    by_name = {s.name: s for s in spans}
    assert by_name["reference-test"].parent_span_id == "0000000000000002"
    assert by_name["preserveParentID-test"].parent_span_id == "0000000000000004"
    tagged = spans[1]
    assert tagged.attributes == {
        "peer.service": "service-y",
        "peer.ipv4": 23456,
        "temperature": 72.5,
        "javascript_limit": 9223372036854775222,
        "blob": "AAAwOQ==",
    }
    assert tagged.status_code == 2  # error: true
    assert spans[0].events[0].name == "some-event" and spans[0].events[1].attributes == {"x": "y"}
    assert spans[2].resource == {"service.name": "service-y"}


def test_kind_scope_and_status_tags_are_read_back() -> None:
    from otel_replay.importers._jaeger import decode_jaeger

    (span, _) = decode_jaeger(_load("otlp2jaeger-out.json"), _raise)
    assert span.kind == 2 and span.scope_name == "telemetrygen"
    assert "span.kind" not in span.attributes and "otel.scope.name" not in span.attributes
    spans = list(decode_jaeger(_load("anonymizer-trace_success.json"), _raise))
    assert spans[1].status_code == 2  # "error": "true", written as text
    assert spans[0].resource == {"service.name": "16af988c443cff37"}


def test_follows_from_is_a_parent_when_no_child_of_is() -> None:
    document = _load("support-agent.jaeger.json")
    for span in document["data"][0]["spans"]:
        for ref in span["references"]:
            ref["refType"] = "FOLLOWS_FROM"
    from otel_replay.importers._jaeger import decode_jaeger

    parents = {s.parent_span_id for s in decode_jaeger(document, _raise) if s.trace_id == TRACE_ID}
    assert parents == {"", "38755cee31ef7910"}


def test_a_missing_parent_leaves_its_children_orphans(tmp_path: Path) -> None:
    document = _load("support-agent.jaeger.json")
    spans = document["data"][0]["spans"]
    document["data"][0]["spans"] = [s for s in spans if s["references"]]  # the root left out
    del document["data"][1]
    (run,) = read_path(_write(tmp_path, document))
    assert len(run.steps) == 4 and run.outcome is None  # the outcome was on the root
    assert {s.parent_span_id for s in run.spans} == {"38755cee31ef7910"}


def test_a_bare_trace_a_list_and_api_v3_lines(tmp_path: Path) -> None:
    expected, _ = read_path(AGENT)
    trace = _load("support-agent.jaeger.json")["data"][0]
    for document in (trace, [trace]):
        (run,) = read_path(_write(tmp_path, document))
        assert run.identity == expected.identity
    v3 = _load("apiv3-GetTrace.json")
    lines = tmp_path / "v3.jsonl"
    lines.write_text(json.dumps(v3) + "\n" + json.dumps(v3) + "\n")
    (run,) = read_path(lines)
    assert run.metadata["format"] == "jaeger" and len(run.steps) == 1


def test_an_answer_with_errors_and_no_traces_is_refused(tmp_path: Path) -> None:
    answer: dict[str, Any] = {
        "data": None,
        "total": 0,
        "limit": 0,
        "offset": 0,
        "errors": [{"code": 500, "msg": "boom"}],
    }
    answer["data"] = []
    with pytest.raises(TraceFormatError, match=r"Jaeger answered with errors, no traces: .*boom"):
        list(read_path(_write(tmp_path, answer)))


def test_an_empty_answer_has_no_runs(tmp_path: Path) -> None:
    answer = _load("otlp2jaeger-out.json")
    answer["data"] = []
    assert list(read_path(_write(tmp_path, answer))) == []


def test_format_jaeger_refuses_a_zipkin_file(runner: CliRunner, tmp_path: Path) -> None:
    zipkin = ROOT / "tests" / "fixtures" / "platforms" / "zipkin" / "skew.json"
    result = invoke(runner, tmp_path / "s.db", "import", str(zipkin), "--format", "jaeger")
    line = refused(result, zipkin)
    assert "not a jaeger document" in line
    assert "--format zipkin" in line  # what reads it
    ok(invoke(runner, tmp_path / "s.db", "import", str(AGENT), "--format", "jaeger"))


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        ("startTime", "yesterday", "data[0].spans[2].startTime"),
        ("spanID", "not-hex", "data[0].spans[2].spanID"),
        ("processID", "p9", "data[0].spans[2].processID"),
    ],
)
def test_a_damaged_span_is_located_and_nothing_is_stored(
    runner: CliRunner, tmp_path: Path, where: str, value: str, said: str
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(HERE / "ui_01.json")))
    with Store.open(store) as db:
        before = db.counts()
    document = _load("support-agent.jaeger.json")
    document["data"][0]["spans"][2][where] = value
    path = _write(tmp_path, document, "damaged.json")
    line = refused(invoke(runner, store, "import", str(path)), path)
    assert said in line and repr(value) in line, line
    with Store.open(store) as db:
        assert db.counts() == before
    runs = list(read_path(path, options=ReadOptions(skip_invalid=True)))
    assert [len(r.spans) for r in runs] == [4, 5]  # the others read, with --skip-invalid


def test_a_tag_whose_value_is_not_its_type_is_located(tmp_path: Path) -> None:
    document = _load("support-agent.jaeger.json")
    document["data"][0]["spans"][0]["tags"][3] = {"key": "n", "type": "int64", "value": "many"}
    with pytest.raises(TraceFormatError) as caught:
        list(read_path(_write(tmp_path, document)))
    assert caught.value.where == "data[0].spans[0].tags[3].value"
    assert "'many'" in str(caught.value)


def _raise(exc: TraceFormatError) -> None:
    raise exc


def refused(result: Result, path: Path) -> str:
    """Exit 1, the error naming the file on one line, and that nothing was imported."""
    assert result.exit_code == 1, result.output
    error, *rest = [line for line in result.stderr.splitlines() if line.strip()]
    assert error.startswith(f"error: {path}"), error
    assert rest == [f"nothing from {path} was imported"], result.stderr
    return error


tags = st.fixed_dictionaries(
    {
        "key": st.one_of(st.text(max_size=8), json_values),
        "type": st.sampled_from(["string", "bool", "int64", "float64", "binary", "other", 3]),
        "value": json_values,
    },
)
ids = st.one_of(st.text("0123456789abcdef", max_size=34), json_values)
spans = st.fixed_dictionaries(
    {
        "traceID": ids,
        "spanID": ids,
        "operationName": st.one_of(st.text(max_size=10), json_values),
        "startTime": st.one_of(st.integers(-5, 1 << 64), json_values),
        "duration": st.one_of(st.integers(-5, 1 << 40), json_values),
        "processID": st.sampled_from(["p1", "p2", None, 7]),
    },
    optional={
        "references": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "refType": st.sampled_from(["CHILD_OF", "FOLLOWS_FROM", "x"]),
                        "traceID": ids,
                        "spanID": ids,
                    }
                ),
                max_size=3,
            ),
            json_values,
        ),
        "tags": st.one_of(st.lists(tags, max_size=3), json_values),
        "logs": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"timestamp": json_values, "fields": st.lists(tags, max_size=2)}
                ),
                max_size=2,
            ),
            json_values,
        ),
        "process": json_values,
    },
)
traces = st.fixed_dictionaries(
    {
        "traceID": st.text("0123456789abcdef", max_size=32),
        "spans": st.lists(spans, max_size=4),
        "processes": st.one_of(
            st.fixed_dictionaries(
                {
                    "p1": st.fixed_dictionaries(
                        {"serviceName": json_values, "tags": st.lists(tags, max_size=2)}
                    )
                }
            ),
            json_values,
        ),
    }
)
documents = st.one_of(
    traces,
    st.lists(traces, max_size=2),
    st.builds(lambda d: {"data": d, "total": 0, "errors": None}, st.lists(traces, max_size=2)),
    st.builds(lambda s: [s], spans),
)


@FAST
@given(document=documents, skip=st.booleans())
def test_jaeger_shaped_input_never_tracebacks(tmp_path: Path, document: Any, skip: bool) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(copy.deepcopy(document)))
    _read_all(path, skip)
