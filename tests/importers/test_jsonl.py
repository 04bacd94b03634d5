"""The native JSONL reader: sniffed by its keys, exact integers, skipped lines leave nothing."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from otel_replay import ReadOptions, TraceFormatError, read_path


def test_native_jsonl_is_not_mistaken_for_otlp_by_its_values(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    record_line = {
        "trajectory_id": "t",
        "steps": [{"kind": "tool", "name": "train", "inputs": {"arguments": {"batches": 3}}}],
    }
    path.write_bytes(orjson.dumps(record_line) + b"\n")
    (run,) = read_path(path)
    assert run.steps[0].inputs == {"arguments": {"batches": 3}}


def test_native_integers_are_exact_or_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    steps = [{"kind": "tool", "name": "t", "output": 2**62}]
    path.write_bytes(orjson.dumps({"trajectory_id": "ok", "steps": steps}) + b"\n")
    assert next(iter(read_path(path))).steps[0].output == 2**62
    big = 2**70
    path.write_text(f'{{"trajectory_id": "x", "steps": [{{"kind": "tool", "output": {big}}}]}}\n')
    with pytest.raises(TraceFormatError, match="does not fit in 64 bits"):
        list(read_path(path))


def test_a_skipped_line_leaves_no_empty_trajectory(tmp_path: Path) -> None:
    path = tmp_path / "skip.jsonl"
    path.write_text(
        '{"trajectory_id": "bad", "steps": [{"kind": "nope", "name": "a"}]}\n'
        '{"trajectory_id": "good", "steps": [{"kind": "tool", "name": "a"}]}\n'
    )
    options = ReadOptions(skip_invalid=True)
    assert [r.id for r in read_path(path, options=options)] == ["good"]
    assert len(options.report.skipped) == 1
