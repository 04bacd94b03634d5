"""The ingest policy: added, unchanged, merged, replaced. A trace whose spans arrive in two files
(rotated Collector output) becomes one trajectory."""

from __future__ import annotations

from pathlib import Path

from otel_replay import StepKind, Store, read_path
from otel_replay.ingest import IngestResult, ingest
from otel_replay.otlp_encode import spans_to_request, write_otlp_json_lines, write_otlp_proto_stream
from tests.sdk import Recorder


def _split_run(tmp_path: Path) -> tuple[Path, Path]:
    rec = Recorder()
    with rec.span("agent", {"openinference.span.kind": "AGENT", "agent_replay.outcome": 0.0}):
        with rec.span("research", {"openinference.span.kind": "TOOL", "tool.name": "research"}):
            with rec.span("inner", {"openinference.span.kind": "LLM", "llm.model_name": "m"}):
                pass
        with rec.span("lookup", {"openinference.span.kind": "TOOL", "tool.name": "lookup"}):
            pass
    inner, research, lookup, agent = rec.spans()  # end order
    first, second = tmp_path / "part-1.jsonl", tmp_path / "part-2.pb"
    # the first file holds a recognised operation whose own child only the second file has
    write_otlp_json_lines([spans_to_request([research])], first)
    write_otlp_proto_stream([spans_to_request([inner, lookup, agent])], second)
    return first, second


def test_parts_in_either_order_make_the_whole_run(tmp_path: Path) -> None:
    first, second = _split_run(tmp_path)
    expected = [(StepKind.LLM, "m"), (StepKind.TOOL, "lookup")]
    for order in ((first, second), (second, first)):
        with Store.open(tmp_path / f"{order[0].stem}.db") as store:
            results = [ingest(store, read_path(p))[0].result for p in order]
            assert results == [IngestResult.ADDED, IngestResult.MERGED]
            (summary,) = store.summaries()
            run = store.get(summary.id)
            # "research" contains "inner": structure, once both files are in
            assert [(s.kind, s.name) for s in run.steps] == expected
            assert run.outcome == 0.0
            assert {s.name for s in run.spans} == {"agent", "research", "inner", "lookup"}
            assert sorted(run.metadata["sources"]) == sorted(str(p) for p in order)
            # importing a part again changes nothing
            assert ingest(store, read_path(order[0]))[0].result is IngestResult.UNCHANGED
            assert store.get(summary.id).final_hash == run.final_hash


def test_steps_rebuilt_from_the_conversation_survive_a_split_trace(tmp_path: Path) -> None:
    """A raw SDK tool loop (tool calls only in the conversation) whose spans arrive in two files
    becomes the same run as when they arrive in one: rebuilt steps once each, in place."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from tests.conftest import ROOT

    fixture = ROOT / "tests" / "fixtures" / "frameworks" / "anthropic.otlp.pb"
    request = ExportTraceServiceRequest.FromString(fixture.read_bytes())
    (whole,) = [r for r in read_path(fixture) if r.metadata["root_span"] == "support run pass"]
    first, second = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    for resource in request.resource_spans:
        for target in (first, second):
            part = target.resource_spans.add(resource=resource.resource)
            for scope in resource.scope_spans:
                kept = [
                    s
                    for s in scope.spans
                    if s.trace_id.hex() == whole.id
                    and (s.start_time_unix_nano % 2 == 0) == (target is first)
                ]
                part.scope_spans.add(scope=scope.scope).spans.extend(kept)
    paths = [tmp_path / "first.pb", tmp_path / "second.pb"]
    for path, part_request in zip(paths, (first, second), strict=True):
        path.write_bytes(part_request.SerializeToString())
    with Store.open(tmp_path / "store.db") as store:
        results = [ingest(store, read_path(p))[0].result for p in paths]
        merged = store.get(whole.id)
    assert results == [IngestResult.ADDED, IngestResult.MERGED]
    assert [(s.kind, s.name) for s in merged.steps] == [(s.kind, s.name) for s in whole.steps]
    assert merged.metadata["reconstructed_steps"] == whole.metadata["reconstructed_steps"]
    # and the tokens its model calls' spans recorded, whichever part brought them
    assert merged.metadata["token_usage"] == whole.metadata["token_usage"] != {}
