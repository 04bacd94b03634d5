"""``export --format otlp-json|otlp-proto`` (issue 39): every bundled sample, a recorded run and a
fork go out as OTLP traces and come back here as the same runs (content identity, steps, outcome;
an imported run its own trace and span ids and times); each JSON line is the OTLP JSON of the very
``ExportTraceServiceRequest`` the protobuf stream holds, read with ``opentelemetry.proto``; the
spans speak OpenInference and OTel GenAI; a fork links to its source; ``--with-verdict`` writes a
kept report on the root and the culprit's span; bad input is one line and exit 1."""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from typer.testing import CliRunner

from otel_replay import Store, Trajectory
from otel_replay.model import StepKind
from otel_replay.replay._tracing import run_spans
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
BUNDLED = sorted(p for p in SAMPLES.iterdir() if p.is_file()) + sorted(FRAMEWORKS.glob("*.otlp.*"))
AGENT_FILE = ROOT / "examples" / "incident" / "agent.py"
LIVE = ("--agent", f"{AGENT_FILE}:investigate", "--outcome", f"{AGENT_FILE}:outcome")
FAILING = "ef2843ff74cff6a6b6dc0914faa30751"  # the incident sample's failing run


def _runs(store: Path) -> list[Trajectory]:
    with Store.open(store, read_only=True) as db:
        return [db.get(s.id) for s in db.summaries()]


def _content(run: Trajectory) -> tuple[Any, ...]:
    """What a round trip keeps: the identity, the outcome, and each step as it was stored."""
    steps = tuple(
        (s.kind, s.name, orjson.dumps(s.inputs), orjson.dumps(s.output), s.status, s.error)
        for s in run.steps
    )
    return (run.identity, run.outcome, steps)


def _export(store: Path, out: Path, kind: str, *args: str) -> None:
    ok(invoke(CliRunner(), store, "export", *args, "--format", kind, "--out", str(out)))


def _imported(path: Path, store: Path) -> list[Trajectory]:
    ok(invoke(CliRunner(), store, "import", str(path)))
    return _runs(store)


def _frames(path: Path) -> list[ExportTraceServiceRequest]:
    """The Collector file exporter's ``format: proto`` stream, read with the OTLP messages."""
    data, at, found = path.read_bytes(), 0, []
    while at < len(data):
        (length,) = struct.unpack_from(">I", data, at)
        found.append(ExportTraceServiceRequest.FromString(data[at + 4 : at + 4 + length]))
        at += 4 + length
    return found


def _hex_ids_as_base64(value: Any) -> Any:
    """OTLP JSON writes trace and span ids in hex where protobuf's JSON mapping has base64 (the
    one difference the Collector's reader makes): turned back, the line is protobuf JSON."""
    if isinstance(value, list):
        return [_hex_ids_as_base64(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        key: base64.b64encode(bytes.fromhex(v)).decode()
        if key in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
        else _hex_ids_as_base64(v)
        for key, v in value.items()
    }


def _json_lines(path: Path) -> list[ExportTraceServiceRequest]:
    found = []
    for line in path.read_bytes().splitlines():
        request = ExportTraceServiceRequest()
        json_format.Parse(orjson.dumps(_hex_ids_as_base64(orjson.loads(line))), request)
        found.append(request)
    return found


def _spans(request: ExportTraceServiceRequest) -> list[Span]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _attributes(span: Span) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        values[kv.key] = getattr(kv.value, kind) if kind else None
    return values


def _round_trip(store: Path, tmp_path: Path) -> None:
    """Every run of ``store`` out as OTLP JSON and as protobuf, each read back into a fresh store:
    the same runs, and the two files the same requests."""
    before = _runs(store)
    as_json, as_proto = tmp_path / "out.otlp.jsonl", tmp_path / "out.otlp.pb"
    _export(store, as_json, "otlp-json")
    _export(store, as_proto, "otlp-proto")
    assert _json_lines(as_json) == _frames(as_proto)
    assert len(_frames(as_proto)) == len(before)
    for path, fresh in ((as_json, "json.db"), (as_proto, "proto.db")):
        after = _imported(path, tmp_path / fresh)
        assert sorted(map(_content, after)) == sorted(map(_content, before))
        kept = {run.id: run for run in after}
        for run in before:
            if run.id not in kept:  # an id that was no trace id: the trace's is derived from it
                assert len(run.id) != 32
                continue
            back = kept[run.id]
            assert _content(back) == _content(run)
            assert [(s.span_id, s.start_time_unix_nano, s.end_time_unix_nano) for s in back.steps] == [
                (s.span_id, s.start_time_unix_nano, s.end_time_unix_nano) for s in run.steps
            ]  # fmt: skip


@pytest.mark.parametrize("sample", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_sample_comes_back_the_same(sample: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    assert _imported(sample, store)
    _round_trip(store, tmp_path)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, int]:
    """The incident investigator recorded once, and a fork of it that hides deploy v841."""
    store = tmp_path_factory.mktemp("export-otlp") / "store.db"
    run_id = ok(invoke(CliRunner(), store, "record", *LIVE)).stdout.strip().splitlines()[-1]
    with Store.open(store) as db:
        original = db.get(run_id)
    (at,) = [s.index for s in original.steps if s.name == "list_deploys"]
    deploys = [d for d in original.steps[at].output if d["version"] != "v841"]
    args = ["fork", run_id, "--at", str(at), "--value", orjson.dumps(deploys).decode(), *LIVE]
    forked = ok(invoke(CliRunner(), store, *args)).stdout.splitlines()[0].removeprefix("forked ")
    return store, run_id, forked, at


def test_a_recorded_run_and_its_fork_come_back_the_same(
    made: tuple[Path, str, str, int], tmp_path: Path
) -> None:
    store, run_id, _, _ = made
    _round_trip(store, tmp_path)  # the recording and its fork
    with Store.open(store, read_only=True) as db:
        recorded = db.get(run_id)
    back = {r.id: r for r in _imported(tmp_path / "out.otlp.jsonl", tmp_path / "again.db")}
    for key in ("seed", "input", "agent"):  # what replaying it needs came too
        assert back[run_id].metadata[key] == recorded.metadata[key]


def test_a_fork_links_to_its_source_and_its_step(
    made: tuple[Path, str, str, int], tmp_path: Path
) -> None:
    store, run_id, forked, at = made
    out = tmp_path / "fork.otlp.jsonl"
    _export(store, out, "otlp-json", forked, run_id)
    fork_request, source_request = _json_lines(out)
    (root,) = [s for s in _spans(fork_request) if not s.parent_span_id]
    (source_root,) = [s for s in _spans(source_request) if not s.parent_span_id]
    source_steps = [s for s in _spans(source_request) if s.parent_span_id]
    said = _attributes(root)
    assert said["agent_replay.forked_from"] == run_id and said["agent_replay.fork_at"] == at
    assert said["agent_replay.run_id"] == forked
    linked = {(link.trace_id, link.span_id) for link in root.links}
    assert linked == {
        (source_root.trace_id, source_root.span_id),
        (source_root.trace_id, source_steps[at].span_id),
    }
    assert _attributes(source_steps[at])["tool.name"] == "list_deploys"
    # what --otlp-endpoint sends of the fork has the very ids the export gives it
    with Store.open(store, read_only=True) as db:
        sent = run_spans(db.get(forked), source=db.get(run_id)).request
    assert sorted(s.span_id for s in _spans(sent)) == sorted(
        s.span_id for s in _spans(fork_request)
    )
    assert {s.trace_id for s in _spans(sent)} == {root.trace_id}


def test_the_spans_speak_openinference_and_genai(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    _imported(SAMPLES / "incident.otlp.jsonl", store)
    out = tmp_path / "out.otlp.jsonl"
    _export(store, out, "otlp-json", FAILING)
    (request,) = _json_lines(out)
    (resource,) = request.resource_spans
    assert _attributes(resource.resource)["service.name"] == "incident-investigator"
    spans = _spans(request)
    (root,) = [s for s in spans if not s.parent_span_id]
    assert _attributes(root)["agent_replay.outcome"] == 0.0
    assert _attributes(root)["agent_replay.task"].startswith("PagerDuty alert for service checkout")
    with Store.open(store, read_only=True) as db:
        run = db.get(FAILING)
    by_id = {s.span_id.hex(): s for s in spans}
    for step in run.steps:
        assert step.span_id is not None
        said = _attributes(by_id[step.span_id])
        if step.kind is StepKind.TOOL:
            assert said["openinference.span.kind"] == "TOOL"
            assert said["tool.name"] == said["gen_ai.tool.name"] == step.name
            assert said["gen_ai.operation.name"] == "execute_tool"
            assert orjson.loads(said["gen_ai.tool.call.arguments"]) == step.inputs["arguments"]
            assert (
                said["gen_ai.tool.call.id"] == said["tool_call.id"] == step.inputs["tool_call_id"]
            )
        else:
            assert said["openinference.span.kind"] == "LLM"
            assert said["gen_ai.operation.name"] == "chat"
            assert said["llm.model_name"] == said["gen_ai.request.model"] == step.name
            messages = orjson.loads(said["gen_ai.input.messages"])
            assert [m["role"] for m in messages] == [m["role"] for m in step.inputs["messages"]]
            assert said["llm.input_messages.0.message.role"] == "system"
            assert orjson.loads(said["gen_ai.output.messages"])[0]["role"] == "assistant"
        if step.status.value == "error":
            assert by_id[step.span_id].status.code == Status.STATUS_CODE_ERROR
            assert by_id[step.span_id].status.message == step.error


def test_the_conventions_alone_give_the_steps(tmp_path: Path) -> None:
    """Without agent-replay's own record on its spans (what another tool reads), the steps are
    still the same operations: kinds, names, tool arguments and results."""
    store = tmp_path / "store.db"
    before = _imported(SAMPLES / "incident.otlp.jsonl", store)
    out = tmp_path / "out.otlp.jsonl"
    _export(store, out, "otlp-json")
    bare = tmp_path / "bare.otlp.jsonl"
    lines = []
    for line in out.read_bytes().splitlines():
        document = orjson.loads(line)
        for rs in document["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["attributes"] = [
                        a for a in span.get("attributes", []) if a["key"] != "agent_replay.record"
                    ]
        lines.append(orjson.dumps(document))
    bare.write_bytes(b"\n".join(lines) + b"\n")
    after = {run.id: run for run in _imported(bare, tmp_path / "bare.db")}
    for run in before:
        back = after[run.id]
        assert back.outcome == run.outcome
        assert [(s.kind, s.name, s.status, s.error) for s in back.steps] == [
            (s.kind, s.name, s.status, s.error) for s in run.steps
        ]
        tools = [(s.inputs["arguments"], s.output) for s in run.steps if s.kind is StepKind.TOOL]
        assert [
            (s.inputs["arguments"], s.output) for s in back.steps if s.kind is StepKind.TOOL
        ] == tools


def test_with_verdict_writes_the_kept_report_on_the_root_and_the_culprit(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    _imported(SAMPLES / "incident.otlp.jsonl", store)
    resamplers = str(ROOT / "examples" / "incident" / "tools.py")
    ok(
        invoke(
            CliRunner(),
            store,
            "attribute",
            FAILING[:8],
            "--resamplers",
            resamplers,
            "--success-if",
            "v841",
        )
    )
    with Store.open(store, read_only=True) as db:
        report = db.reports(FAILING)[0]["report"]
        run = db.get(FAILING)
    culprit = report["point_of_commitment"]
    assert report["verdict"] == "culprit" and isinstance(culprit, int)
    out = tmp_path / "out.otlp.pb"
    result = ok(
        invoke(
            CliRunner(), store, "export", "--format", "otlp-proto", "--with-verdict", "-o", str(out)
        )
    )
    assert "2 runs of 3 had no kept attribution report" in result.stderr
    (request,) = [r for r in _frames(out) if _spans(r)[0].trace_id.hex() == FAILING]
    spans = _spans(request)
    (root,) = [s for s in spans if not s.parent_span_id]
    said = _attributes(root)
    assert said["agent_replay.verdict"] == "culprit"
    assert said["agent_replay.point_of_commitment"] == culprit
    assert said["agent_replay.explanation"] == report["explanation"]
    step_span = run.steps[culprit].span_id
    (marked,) = [s for s in spans if "agent_replay.attribution" in _attributes(s)]
    assert marked.span_id.hex() == step_span
    (row,) = [r for r in report["steps"] if r["index"] == culprit]
    assert _attributes(marked)["agent_replay.attribution"] == pytest.approx(row["attribution"])
    assert _attributes(marked)["agent_replay.verdict"] == "culprit"
    # and the run still comes back the same
    (back,) = [r for r in _imported(out, tmp_path / "back.db") if r.id == FAILING]
    assert _content(back) == _content(run)


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    _imported(SAMPLES / "incident.otlp.jsonl", store)
    runner = CliRunner()
    before = store.read_bytes()
    unknown = one_line_error(invoke(runner, store, "export", "nosuchrun", "--format", "otlp-json"))
    assert "nosuchrun" in unknown
    folder = tmp_path / "a-folder"
    folder.mkdir()
    unwritable = one_line_error(
        invoke(runner, store, "export", "--format", "otlp-json", "--out", str(folder))
    )
    assert str(folder) in unwritable
    a_file = tmp_path / "a-file"
    a_file.write_text("kept")
    missing = a_file / "out.otlp.pb"  # under a file: no folder can be made there
    assert str(missing) in one_line_error(
        invoke(runner, store, "export", "--format", "otlp-proto", "--out", str(missing))
    )
    cannot = one_line_error(invoke(runner, store, "export", "--format", "jsonl", "--with-verdict"))
    assert "--format jsonl" in cannot and "otlp-json" in cannot
    assert "--out" in one_line_error(invoke(runner, store, "export", "--format", "otlp-proto"))
    assert store.read_bytes() == before
    assert a_file.read_text() == "kept"


def test_a_run_too_big_for_a_protobuf_frame_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame's length is 4 bytes: a run past it (here a smaller limit stands in for 4 GiB) is
    one line naming the run and what holds it instead, and the file is untouched."""
    store = tmp_path / "store.db"
    _imported(SAMPLES / "incident.otlp.jsonl", store)
    out = tmp_path / "out.otlp.pb"
    out.write_bytes(b"before")
    monkeypatch.setattr("otel_replay.export._MAX_FRAME", 1000)
    said = one_line_error(
        invoke(CliRunner(), store, "export", "--format", "otlp-proto", "--out", str(out))
    )
    assert "bytes of protobuf" in said and "OTLP JSON Lines" in said
    assert any(run.id in said for run in _runs(store))
    assert out.read_bytes() == b"before"
