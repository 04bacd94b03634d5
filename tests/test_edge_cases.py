"""Edge cases found in review: each once broke something a user would notice."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_replay import ReadOptions, Registry, StepFailed, Store, TraceFormatError, read_path
from otel_replay.attribution._stats import levenshtein
from otel_replay.errors import RolloutError
from otel_replay.ingest import ingest
from otel_replay.replay import AgentContext, Intervention, fork, record, replay
from tests.conftest import SAMPLES


def _span(span_id: str, name: str, parent: str = "") -> dict[str, Any]:
    return {
        "traceId": "0123456789abcdef0123456789abcdef",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [
            {"key": "openinference.span.kind", "value": {"stringValue": "TOOL"}},
            {"key": "tool.name", "value": {"stringValue": name}},
        ],
    }


def _line(*spans: dict[str, Any]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}) + b"\n"


def test_a_span_delivered_twice_is_one_step(tmp_path: Path) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_bytes(_line(_span("aaaaaaaaaaaaaaaa", "lookup")) * 2)
    options = ReadOptions()
    (run,) = read_path(path, options=options)
    assert [s.name for s in run.steps] == ["lookup"]
    assert any("more than once" in w for w in options.report.warnings)


@pytest.mark.parametrize("prefix", [b"\n", b"\r\n\r\n", b"   \n"], ids=["blank", "crlf", "spaces"])
def test_blank_lines_before_the_first_record(tmp_path: Path, prefix: bytes) -> None:
    for name in ("incident.otlp.jsonl", "incident.steps.jsonl"):
        path = tmp_path / name
        path.write_bytes(prefix + (SAMPLES / name).read_bytes())
        assert len(list(read_path(path))) == 3


def test_native_jsonl_is_not_mistaken_for_otlp_by_its_values(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    record_line = {
        "trajectory_id": "t",
        "steps": [{"kind": "tool", "name": "train", "inputs": {"arguments": {"batches": 3}}}],
    }
    path.write_bytes(orjson.dumps(record_line) + b"\n")
    (run,) = read_path(path)
    assert run.steps[0].inputs == {"arguments": {"batches": 3}}


def test_timestamps_beyond_int64_are_a_located_error(tmp_path: Path) -> None:
    span = _span("aaaaaaaaaaaaaaaa", "lookup")
    span["startTimeUnixNano"] = "18446744073709551615"
    path = tmp_path / "late.jsonl"
    path.write_bytes(_line(span))
    with pytest.raises(TraceFormatError, match=r"late\.jsonl:1: timestamp .* out of range"):
        list(read_path(path))


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


def test_levenshtein_agrees_with_the_textbook_recurrence() -> None:
    def textbook(x: str, y: str) -> int:
        previous = list(range(len(y) + 1))
        for i, cx in enumerate(x, start=1):
            current = [i]
            for j, cy in enumerate(y, start=1):
                current.append(
                    min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != cy))
                )
            previous = current
        return previous[-1]

    rng = random.Random(7)
    for _ in range(500):
        x = "".join(rng.choice("abc") for _ in range(rng.randint(0, 70)))
        y = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 70)))
        assert levenshtein(x, y) == textbook(x, y), (x, y)


def _answering(env: dict[str, Any]) -> Any:
    def agent(ctx: AgentContext) -> str:
        value = ctx.tool("fetch", produce=lambda: 1)
        if env.get("crash"):
            raise RuntimeError("after the last step")
        return f"answer {value + env.get('delta', 0)}"

    return agent


def test_replay_notices_a_different_ending() -> None:
    env: dict[str, Any] = {}
    original = record(_answering(env)).trajectory
    assert replay(original, _answering(env)).identical
    env["delta"] = 5
    changed = replay(original, _answering(env))
    assert not changed.identical and changed.diff.identical
    assert changed.ending is not None and "answer differs" in changed.ending
    env.update(delta=0, crash=True)
    crashed = replay(original, _answering(env))
    assert crashed.ending is not None and "raised RuntimeError" in crashed.ending


def test_fork_ids_are_their_own_and_differ_by_driver() -> None:
    original = record(_answering({})).trajectory
    registry = Registry()
    registry.add_resampler("tool", lambda step, ctx: 2, name="fetch")
    by_agent = fork(original, 0, Intervention.force(3), agent=_answering({}))
    by_resamplers = fork(original, 0, Intervention.force(3), registry=registry)
    assert by_agent.id != by_resamplers.id
    assert not by_agent.id.startswith(original.id[:8])
    assert by_agent.id == fork(original, 0, Intervention.force(3), agent=_answering({})).id


def test_a_resample_function_bug_stops_a_live_run() -> None:
    def agent(ctx: AgentContext) -> str:
        try:
            return str(ctx.tool("t", n=1))  # no produce=: the resample function runs
        except Exception as exc:  # the agent's own defensive habit must not hide the bug
            return f"handled {exc}"

    registry = Registry()
    registry.add_resampler("tool", lambda step, ctx: {}["missing"], name="t")
    with pytest.raises(RolloutError, match=r"step 0 \(tool 't'\).*KeyError"):
        record(agent, registry=registry)
    failing = Registry()

    def flaky(step: Any, ctx: Any) -> Any:
        raise StepFailed("timed out")

    failing.add_resampler("tool", flaky, name="t")
    assert record(agent, registry=failing).answer == "handled timed out"


def test_a_recording_imported_again_keeps_its_replay_facts(tmp_path: Path) -> None:
    from otel_replay.otlp_encode import write_otlp_json_lines

    recording = record(_answering({}), seed=3)
    path = tmp_path / "run.jsonl"
    write_otlp_json_lines([recording.spans.request], path)
    with Store.open(tmp_path / "s.db") as store:
        store.put_all([recording.trajectory])
        ingest(store, read_path(path))  # same steps and outcome: the recording is kept
        kept = store.get(recording.trajectory.id)
    assert kept.metadata["seed"] == 3 and kept.metadata["format"] == "agent"
    (imported,) = read_path(path)
    assert imported.metadata["seed"] == 3
    assert replay(imported, _answering({})).identical
