"""Zipkin v2 JSON: span lists from Zipkin's own published test data and an LLM agent's run as the
real OpenTelemetry Zipkin exporter sent it (`scripts/make_jaeger_zipkin_fixtures.py`; the README
beside the files names their sources). Shapes made here (the API's list of traces, 64-bit ids,
damage) are derived from those files, never written whole by hand.
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
from otel_replay.importers._documents import claiming_row
from otel_replay.importers._zipkin import decode_zipkin
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT
from tests.importers.test_fuzz import FAST, _read_all, json_values
from tests.importers.test_platform_jaeger import refused

HERE = ROOT / "tests" / "fixtures" / "platforms" / "zipkin"
AGENT = HERE / "support-agent.zipkin.json"
JAEGER_AGENT = ROOT / "tests" / "fixtures" / "platforms" / "jaeger" / "support-agent.jaeger.json"


def _load(name: str) -> Any:
    return json.loads((HERE / name).read_text())


def _write(tmp_path: Path, document: Any, name: str = "spans.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    return path


def _raise(exc: TraceFormatError) -> None:
    raise exc


def test_the_agent_run_is_one_step_per_operation() -> None:
    (run,) = read_path(AGENT)
    assert run.metadata["format"] == "zipkin" and run.metadata["service"] == "support-agent"
    assert [(s.kind, s.name, s.status) for s in run.steps] == [
        (StepKind.LLM, "gpt-4o-mini", StepStatus.OK),
        (StepKind.TOOL, "lookup_order", StepStatus.OK),
        (StepKind.TOOL, "issue_refund", StepStatus.ERROR),
        (StepKind.LLM, "gpt-4o-mini", StepStatus.OK),
    ]
    first, lookup, refund, _ = run.steps
    assert [c["name"] for c in first.output["tool_calls"]] == ["lookup_order", "issue_refund"]
    assert lookup.inputs == {"arguments": {"order_id": "1042"}, "tool_call_id": "call_lookup"}
    assert lookup.output["status"] == "replacement shipped"
    assert refund.error == "payments service did not answer within 30 s"
    assert run.outcome == 0.0  # the tag's text "0.0"
    assert run.metadata["token_usage"][first.span_id] == {"input_tokens": 182, "output_tokens": 41}


def test_the_same_run_through_jaeger_and_zipkin_is_one_run() -> None:
    (zipkin,) = read_path(AGENT)
    jaeger, _ = read_path(JAEGER_AGENT)
    assert zipkin.id == jaeger.id and zipkin.identity == jaeger.identity
    assert [s.hash for s in zipkin.steps] == [s.hash for s in jaeger.steps]


def test_tags_holding_json_stay_text_in_the_spans() -> None:
    spans = list(decode_zipkin(_load("support-agent.zipkin.json"), _raise))
    chat = spans[0]
    assert isinstance(chat.attributes["gen_ai.output.messages"], str)
    assert chat.attributes["gen_ai.usage.input_tokens"] == "182"
    assert chat.kind == 3 and chat.scope_name == "support_agent"
    assert "otel.scope.name" not in chat.attributes
    (refund,) = [s for s in spans if s.name == "execute_tool issue_refund"]
    assert refund.kind == 1 and refund.status_code == 2  # "kind": null is internal
    assert "error" not in refund.attributes and "otel.status_code" not in refund.attributes
    (exception,) = refund.events
    assert exception.name == "exception"  # the exporter's {"exception": {...}} annotation
    assert exception.attributes["exception.type"] == "TimeoutError"


# file: [(trace id, spans, steps)]
PUBLISHED = {
    "skew.json": [("00000000000000001e223ff1f80f1c69", 4, 2)],
    "messaging.json": [("5aab74dbb904746bb33447baae403ed6", 4, 1)],
    "envoy.json": [("0000000000000000978883983d506fa5", 1, 1)],
    "yelp.json": [("0000000000000000a03ee8fff1dcd9b9", 16, 11)],
    "ascend.json": [("0000000000000000ef86c83c0a05a6d6", 8, 5)],
    "zipkin2-client.json": [("4d1e00c0db9010db86154a4ba6e91385", 1, 1)],
    "support-agent.zipkin.json": [("06a3f5be62a9701b4279530735b8cfae", 5, 4)],
}


def test_every_file_here_has_its_row() -> None:
    assert {p.name for p in HERE.glob("*.json")} == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_file(name: str) -> None:
    runs = list(read_path(HERE / name, options=ReadOptions(skip_invalid=False)))
    assert [(r.id, len(r.spans), len(r.steps)) for r in runs] == PUBLISHED[name]
    assert {r.metadata["format"] for r in runs} == {"zipkin"}


def test_64_and_128_bit_trace_ids() -> None:
    short = list(decode_zipkin(_load("skew.json"), _raise))
    assert {s.trace_id for s in short} == {"00000000000000001e223ff1f80f1c69"}
    long = list(decode_zipkin(_load("messaging.json"), _raise))
    assert {s.trace_id for s in long} == {"5aab74dbb904746bb33447baae403ed6"}


def test_a_shared_server_half_hangs_under_its_client() -> None:
    """skew.json: the client ``post`` of servicea and the server half of serviceb share an id."""
    spans = {
        (s.name, s.resource["service.name"]): s for s in decode_zipkin(_load("skew.json"), _raise)
    }
    client, server = spans[("post", "servicea")], spans[("post", "serviceb")]
    assert client.span_id == "74280ae0c10d8062" and client.kind == 3
    assert server.parent_span_id == client.span_id and server.span_id != client.span_id
    assert spans[("async", "serviceb")].parent_span_id == "74280ae0c10d8062"
    (alone,) = decode_zipkin(_load("envoy.json"), _raise)  # no client beside it: its own id
    assert alone.span_id == "978883983d506fa5"


def test_the_api_list_of_traces(tmp_path: Path) -> None:
    document = [_load("skew.json"), _load("messaging.json")]
    runs = list(read_path(_write(tmp_path, document)))
    assert sorted(len(r.spans) for r in runs) == [4, 4]


def test_remote_endpoint_and_annotations() -> None:
    spans = list(decode_zipkin(_load("messaging.json"), _raise))
    remote = [s for s in spans if "peer.service" in s.attributes]
    assert remote and all(isinstance(s.attributes["peer.service"], str) for s in remote)
    yelp = list(decode_zipkin(_load("yelp.json"), _raise))
    assert any(e.name and e.time_unix_nano for s in yelp for e in s.events)


def test_every_other_format_keeps_its_reader() -> None:
    """Zipkin's claim takes no flat span list, Langfuse observation or Jaeger span."""
    flat = {"trace_id": "ab" * 16, "span_id": "cd" * 8, "name": "agent", "start_time": 1}
    assert claiming_row([flat]).name == "flat-spans"  # type: ignore[union-attr]
    camel = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "x", "timestamp": 1}
    assert claiming_row([camel]).name == "flat-spans"  # type: ignore[union-attr]
    observation = {"id": "o", "traceId": "t", "startTime": "2026-01-01T00:00:00Z", "type": "SPAN"}
    assert claiming_row(observation).name == "langfuse"  # type: ignore[union-attr]
    v1 = [{**_load("skew.json")[0], "binaryAnnotations": []}]
    assert claiming_row(v1) is None


def test_format_zipkin_refuses_a_jaeger_file(runner: CliRunner, tmp_path: Path) -> None:
    result = invoke(runner, tmp_path / "s.db", "import", str(JAEGER_AGENT), "--format", "zipkin")
    line = refused(result, JAEGER_AGENT)
    assert "not a zipkin document" in line and "--format jaeger" in line
    ok(invoke(runner, tmp_path / "s.db", "import", str(AGENT), "--format", "zipkin"))


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("timestamp", "soon", "[2].timestamp"),
        ("id", "xyz", "[2].id"),
        ("traceId", "ab" * 17, "[2].traceId"),
        ("tags", {"gen_ai.tool.name": ["a"]}, "[2].tags.gen_ai.tool.name"),
        ("kind", "SIDEWAYS", "[2].kind"),
    ],
)
def test_a_damaged_span_is_located_and_nothing_is_stored(
    runner: CliRunner, tmp_path: Path, key: str, value: Any, said: str
) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(HERE / "skew.json")))
    with Store.open(store) as db:
        before = db.counts()
    document = _load("support-agent.zipkin.json")
    document[2][key] = value
    path = _write(tmp_path, document, "damaged.json")
    line = refused(invoke(runner, store, "import", str(path)), path)
    assert f"at {said}" in line, line
    with Store.open(store) as db:
        assert db.counts() == before
    (run,) = read_path(path, options=ReadOptions(skip_invalid=True))
    assert len(run.spans) == 4


ids = st.one_of(st.text("0123456789abcdef", max_size=34), json_values)
spans = st.fixed_dictionaries(
    {"traceId": ids, "id": ids, "timestamp": st.one_of(st.integers(-5, 1 << 62), json_values)},
    optional={
        "parentId": ids,
        "name": json_values,
        "kind": st.one_of(st.sampled_from(["CLIENT", "SERVER", "PRODUCER", "x"]), json_values),
        "duration": st.one_of(st.integers(-5, 1 << 40), json_values),
        "localEndpoint": st.one_of(
            st.fixed_dictionaries({"serviceName": json_values}), json_values
        ),
        "remoteEndpoint": st.one_of(
            st.fixed_dictionaries(
                {}, optional={"serviceName": json_values, "port": json_values, "ipv4": json_values}
            ),
            json_values,
        ),
        "tags": st.one_of(
            st.dictionaries(st.text(max_size=6), json_values, max_size=3), json_values
        ),
        "annotations": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "timestamp": json_values,
                        "value": st.one_of(st.text(max_size=20), json_values),
                    }
                ),
                max_size=2,
            ),
            json_values,
        ),
        "shared": json_values,
    },
)
documents = st.one_of(
    st.lists(spans, max_size=5), st.lists(st.lists(spans, max_size=3), max_size=2), spans
)


@FAST
@given(document=documents, skip=st.booleans())
def test_zipkin_shaped_input_never_tracebacks(tmp_path: Path, document: Any, skip: bool) -> None:
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(document))
    _read_all(path, skip)


def test_a_zipkin_v1_list_is_refused_saying_what_makes_v2_of_it(tmp_path: Path) -> None:
    document = _load("skew.json")
    for span in document:
        span["binaryAnnotations"] = []  # v1's key: the v2 reader does not take v1
    path = _write(tmp_path, document)
    for fmt in ("auto", "zipkin"):
        with pytest.raises(TraceFormatError) as caught:
            list(read_path(path, fmt))  # type: ignore[arg-type]
        assert (
            "it looks like a Zipkin v1 span list: send it through the OpenTelemetry Collector"
            in (str(caught.value))
        )
