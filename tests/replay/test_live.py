"""Record, replay and fork of live agents: endings, fork ids, resample-function bugs, re-imports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_replay import Registry, StepFailed, Store, read_path
from otel_replay.errors import RolloutError
from otel_replay.ingest import ingest
from otel_replay.replay import AgentContext, Intervention, fork, record, replay


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
