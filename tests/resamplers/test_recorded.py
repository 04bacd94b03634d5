"""``--tools recorded``: tool steps drawn from what the store recorded for the same call."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from otel_replay import RolloutContext, Step, StepFailed, StepKind, Store, Trajectory, read_path
from otel_replay.hashing import canonical_json
from otel_replay.ingest import ingest
from otel_replay.resamplers._recorded import recorded_outcomes
from tests.conftest import SAMPLES


@pytest.fixture
def incidents(store_path: Path) -> Store:
    store = Store.open(store_path)
    for name in ("incident.otlp.jsonl", "incident-genai.otlp.jsonl"):
        ingest(store, read_path(SAMPLES / name))
    return store


def _failing(store: Store) -> Trajectory:
    return store.get("ef2843ff")


def _draws(function: object, step: Step, run: Trajectory, n: int = 200) -> Counter[bytes]:
    seen: Counter[bytes] = Counter()
    for r in range(n):
        ctx = RolloutContext((7, "plan", r, step.index), (), run, None)
        try:
            seen[canonical_json(["ok", function(step, ctx)])] += 1  # type: ignore[operator]
        except StepFailed as failure:
            seen[canonical_json(["error", str(failure)])] += 1
    return seen


def test_a_tool_call_is_drawn_from_its_recorded_results(incidents: Store) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run)
    (deploys,) = [s for s in run.steps if s.name == "list_deploys"]
    recorded = {
        canonical_json(["ok" if status == "ok" else "error", output if status == "ok" else error])
        for output, status, error in incidents.results_of([deploys.op_key])[deploys.op_key]
    }
    seen = _draws(draw, deploys, run)
    assert set(seen) <= recorded  # only what the store recorded for list_deploys(checkout)
    assert len(seen) == len(recorded) >= 3  # the full list, the empty list and the failure


def test_a_call_with_nothing_else_recorded_is_held(incidents: Store) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run)
    (logs,) = [s for s in run.steps if s.name == "search_logs"]
    assert set(_draws(draw, logs, run, 20)) == {canonical_json(["ok", logs.output])}
    unknown = Step(StepKind.TOOL, "list_deploys", {"arguments": {"service": "search"}}, ["x"])
    assert set(_draws(draw, unknown, run, 20)) == {canonical_json(["ok", ["x"]])}


def test_the_description_counts_each_tools_alternatives(incidents: Store) -> None:
    draw = recorded_outcomes(incidents, _failing(incidents))
    assert draw.__qualname__ == (
        "recorded_outcomes(list_deploys: 3, query_metrics: 1, search_logs: 1)"
    )


def test_draws_follow_the_seed(incidents: Store) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run)
    (deploys,) = [s for s in run.steps if s.name == "list_deploys"]
    assert _draws(draw, deploys, run, 50) == _draws(draw, deploys, run, 50)
