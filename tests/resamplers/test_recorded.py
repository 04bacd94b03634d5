"""``--tools recorded``: tool steps drawn from what the store recorded for the same call."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path

import pytest

from otel_replay import (
    RolloutContext,
    Step,
    StepFailed,
    StepKind,
    Store,
    StoreError,
    Trajectory,
    UnservableError,
    read_path,
)
from otel_replay.hashing import canonical_json
from otel_replay.ingest import ingest
from otel_replay.resamplers._context import unrecorded
from otel_replay.resamplers._draws import Call, drawing
from otel_replay.resamplers._faults import FAILURES
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


def _draws(
    function: object, step: Step, run: Trajectory, n: int = 200, recorded: Step | None = None
) -> Counter[bytes]:
    """What ``function`` answers ``step`` over ``n`` rollouts (``recorded``: the recorded step
    it stands in for; None: a call the run never made)."""
    seen: Counter[bytes] = Counter()
    for r in range(n):
        ctx = RolloutContext((7, "plan", r, step.index), (), run, None, recorded=recorded)
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


def test_a_call_of_the_run_with_nothing_else_recorded_is_held(incidents: Store) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run)
    (logs,) = [s for s in run.steps if s.name == "search_logs"]
    assert set(_draws(draw, logs, run, 20, recorded=logs)) == {canonical_json(["ok", logs.output])}


def test_a_call_no_run_recorded_is_unservable_naming_the_tool_and_its_arguments(
    incidents: Store,
) -> None:
    """Never the step's own ``output`` (None for a call the record does not hold)."""
    run = _failing(incidents)
    unknown = unrecorded(StepKind.TOOL, "list_deploys", {"arguments": {"service": "search"}}, 9)
    with pytest.raises(UnservableError) as caught:
        recorded_outcomes(incidents, run)(unknown, RolloutContext(1, (), run, None))
    assert caught.value.tool == "list_deploys"
    assert caught.value.arguments == '{"service":"search"}'
    assert caught.value.step_index == 9
    assert 'no stored run recorded the call list_deploys({"service":"search"})' in str(caught.value)
    assert "tools='recorded,faults'" in str(caught.value)
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.tool, again.arguments, str(again)) == (
        "list_deploys",
        '{"service":"search"}',
        str(caught.value),
    )


def test_with_the_faults_fallback_such_a_call_fails_as_an_injected_fault(
    incidents: Store,
) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run, fallback=True)
    assert draw.__qualname__.endswith("; then faults)")
    unknown = unrecorded(StepKind.TOOL, "list_deploys", {"arguments": {"service": "search"}}, 9)
    with drawing() as log:
        seen = _draws(draw, unknown, run, 40)
    assert set(seen) == {canonical_json(["error", text]) for text in FAILURES.values()}
    assert log.faults == [Call("list_deploys", '{"service":"search"}')] * 40 and log.runs == []


def test_the_store_is_read_once_per_call_the_run_never_made_and_never_for_its_own(
    incidents: Store,
) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run)
    (deploys,) = [s for s in run.steps if s.name == "list_deploys"]
    _draws(draw, deploys, run, 20, recorded=deploys)
    assert draw.lookups == 0  # the run's own calls were read with it
    other = unrecorded(StepKind.TOOL, "list_deploys", {"arguments": {"service": "search"}}, 4)
    for _ in range(5):
        with pytest.raises(UnservableError):
            draw(other, RolloutContext(1, (), run, None))
    assert draw.lookups == 1  # a key with no results is remembered too
    elsewhere = unrecorded(StepKind.TOOL, "send_email", {"arguments": {}}, 4)
    with pytest.raises(UnservableError):
        draw(elsewhere, RolloutContext(1, (), run, None))
    assert draw.lookups == 1  # not a tool this run uses: not looked up
    assert draw.tools == {"list_deploys", "query_metrics", "search_logs"}


def test_a_copy_sent_to_a_worker_reads_the_store_there_or_carries_everything(
    incidents: Store, tmp_path: Path
) -> None:
    """Pickled, the function reads the store by its path for what it has not seen; `complete`
    carries every result of the run's tools, so it never reads it (the file may be gone)."""
    run = _failing(incidents)
    (deploys,) = [s for s in run.steps if s.name == "list_deploys"]
    asked = unrecorded(StepKind.TOOL, "list_deploys", deploys.inputs, deploys.index)
    lazy = pickle.loads(pickle.dumps(recorded_outcomes(incidents, run)))
    complete = pickle.loads(pickle.dumps(recorded_outcomes(incidents, run, complete=True)))
    incidents.close()
    moved = tmp_path / "elsewhere.db"
    incidents.path.rename(moved)
    assert _draws(complete, asked, run, 60) == _draws(complete, deploys, run, 60)
    with pytest.raises(StoreError):
        lazy(unrecorded(StepKind.TOOL, "search_logs", {"arguments": {"q": "x"}}, 3),
             RolloutContext(1, (), run, None))  # fmt: skip
    moved.rename(incidents.path)
    assert _draws(lazy, deploys, run, 60) == _draws(complete, deploys, run, 60)
    assert complete.lookups == 0


def test_each_draw_names_the_run_it_came_from(incidents: Store) -> None:
    run = _failing(incidents)
    draw = recorded_outcomes(incidents, run)
    (deploys,) = [s for s in run.steps if s.name == "list_deploys"]
    with drawing() as log:
        _draws(draw, deploys, run, 50)
    results = incidents.recorded_results([deploys.op_key])[deploys.op_key]
    assert len(log.runs) == 50 and set(log.runs) <= {r.run for r in results}
    assert len(set(log.runs)) > 1  # results recorded in more than one run were drawn


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
