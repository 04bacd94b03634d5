"""Large files are read in two passes so each trace is assembled right after its last line; the result
must be exactly what holding the whole file gives, in any interleaving of traces across lines."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_replay import ReadOptions, read_path
from otel_replay.importers import otlp_json, otlp_proto
from otel_replay.otlp_encode import spans_to_request, write_otlp_json_lines, write_otlp_proto_stream
from tests.sdk import Recorder


def _interleaved_runs(n_traces: int, seed: int) -> list[list[ReadableSpan]]:
    """Spans of ``n_traces`` agent runs, batched 1–4 spans per record with traces interleaved."""
    rec = Recorder()
    for t in range(n_traces):
        with rec.span("agent", {"openinference.span.kind": "AGENT", "agent_replay.outcome": t % 2}):
            for turn in range(3):
                with rec.span("llm", {"openinference.span.kind": "LLM", "llm.model_name": f"m{t}"}):
                    pass
                with rec.span("tool", {"openinference.span.kind": "TOOL", "tool.name": f"t{turn}"}):
                    pass
    spans = list(rec.spans())  # SDK end order: children before their parents
    rng = random.Random(seed)
    # shuffle within a sliding window so traces overlap across records, but keep each trace's
    # children-first order (as a Collector batching several concurrent agents would)
    window = [spans[i : i + 9] for i in range(0, len(spans), 9)]
    merged: list[ReadableSpan] = []
    for a, b in zip(window[::2], [*window[1::2], []], strict=False):
        while a or b:
            source = a if (a and (not b or rng.random() < 0.5)) else b
            merged.append(source.pop(0))
    batches: list[list[ReadableSpan]] = []
    while merged:
        size = rng.randint(1, 4)
        batches.append(merged[:size])
        merged = merged[size:]
    return batches


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_pass_equals_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    batches = _interleaved_runs(12, seed)
    requests = [spans_to_request(b) for b in batches]
    jsonl, stream = tmp_path / "t.jsonl", tmp_path / "t.pb"
    write_otlp_json_lines(requests, jsonl)
    write_otlp_proto_stream(requests, stream)
    for path in (jsonl, stream):
        held = {t.id: t for t in read_path(path)}
        monkeypatch.setattr(otlp_json, "TWO_PASS_THRESHOLD_BYTES", 0)
        monkeypatch.setattr(otlp_proto, "TWO_PASS_THRESHOLD_BYTES", 0)
        streamed = list(read_path(path))
        monkeypatch.undo()
        assert len(streamed) == len(held) == 12
        assert {t.id: t.final_hash for t in streamed} == {k: t.final_hash for k, t in held.items()}
        assert all(len(t.steps) == 6 for t in streamed)


def test_two_pass_flushes_before_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory is bounded by open traces: the first trace is handed over long before the file ends."""
    batches = _interleaved_runs(12, 0)
    path = tmp_path / "t.jsonl"
    write_otlp_json_lines([spans_to_request(b) for b in batches], path)
    monkeypatch.setattr(otlp_json, "TWO_PASS_THRESHOLD_BYTES", 0)
    consumed: list[int] = []
    options = ReadOptions(progress=consumed.append)
    reader = read_path(path, options=options)
    next(reader)
    assert options.report.records < len(batches) / 2
