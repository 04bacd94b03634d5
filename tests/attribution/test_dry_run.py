"""``--dry-run`` (issue 10): the rollouts and resample-function calls an attribution will take,
before anything runs. In the trace walk the count is exact: it must equal what the run then does."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.attribution import AttributionConfig, Method, Strategy, attribute
from otel_replay.attribution._cost import planned_cost
from tests.attribution.models import BUTTERFLY, CHAIN, Model
from tests.cli_helpers import invoke, ok


@pytest.mark.parametrize("method", list(Method), ids=[m.value for m in Method])
@pytest.mark.parametrize("model", [CHAIN, BUTTERFLY], ids=lambda m: m.name)
def test_the_planned_calls_are_the_calls_made(model: Model, method: Method) -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=40, permutations=6, method=method)
    cost = planned_cost(model.trajectory(), model.registry(), config)
    result = attribute(model.trajectory(), model.registry(), config)
    assert cost.exact
    assert (cost.rollouts, cost.calls) == (result.rollouts, result.step_executions)
    assert cost.spend == result.spend and cost.spend.calls == cost.calls  # split the same way
    assert cost.worst_calls == cost.calls  # nothing can be added without repair or a target
    kinds = {s.kind.value for s in model.trajectory().steps if s.index in _resamplable(model)}
    assert set(cost.calls_by_kind) == kinds


def _resamplable(model: Model) -> set[int]:
    return {s.index for s in model.trajectory().steps if model.registry().lookup(s) is not None}


def test_a_repair_search_stays_within_the_worst_case() -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=60, repair=True)
    cost = planned_cost(CHAIN.trajectory(), CHAIN.registry(), config)
    result = attribute(CHAIN.trajectory(), CHAIN.registry(), config)
    assert cost.calls < result.step_executions <= cost.worst_calls
    assert cost.rollouts < result.rollouts <= cost.worst_rollouts


def test_the_cli_dry_run_runs_nothing_and_says_what_would(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(CHAIN.jsonl)))
    args = ["attribute", CHAIN.trajectory_id, "--resamplers", str(CHAIN.resamplers)]
    args += ["--strategy", "fixed"]
    out = tmp_path / "report.json"
    planned = orjson.loads(
        ok(invoke(runner, store_path, *args, "--dry-run", "--json", "--out", str(out))).stdout
    )
    assert not out.exists()  # nothing ran, nothing was written
    report = orjson.loads(ok(invoke(runner, store_path, *args, "--json")).stdout)
    assert planned["rollouts"] == report["cost"]["rollouts"]
    assert planned["calls"] == report["cost"]["step_executions"]
    assert planned["calls_exact"] is True and planned["driver"].startswith("trace")
    text = ok(invoke(runner, store_path, *args, "--dry-run")).stdout
    assert f"{planned['calls']:,} resample-function calls" in text


def test_the_adaptive_default_dry_run_gives_its_most(runner: CliRunner, store_path: Path) -> None:
    ok(invoke(runner, store_path, "import", str(CHAIN.jsonl)))
    args = ["attribute", CHAIN.trajectory_id, "--resamplers", str(CHAIN.resamplers)]
    planned = orjson.loads(ok(invoke(runner, store_path, *args, "--dry-run", "--json")).stdout)
    report = orjson.loads(ok(invoke(runner, store_path, *args, "--json")).stdout)
    assert planned["adaptive"] is True
    assert report["cost"]["step_executions"] <= planned["worst_calls"]
    text = ok(invoke(runner, store_path, *args, "--dry-run")).stdout
    assert "the adaptive strategy stops as soon as its tests decide: typically about" in text
    assert planned["typical_calls"] > 0


@pytest.mark.parametrize("model", [CHAIN, BUTTERFLY], ids=lambda m: m.name)
def test_the_adaptive_worst_case_is_at_most_the_sweep(model: Model) -> None:
    """The cost ceiling (`_ceiling`): a sequential question never spends more than the fixed
    strategy at ``--rollouts`` would, so its worst case is that (before: every plan at
    ``--max-rollouts``, 6.4 times as much)."""
    trajectory, registry = model.trajectory(), model.registry()
    sweep = planned_cost(trajectory, registry, AttributionConfig(strategy=Strategy.FIXED))
    for strategy in (Strategy.ADAPTIVE, Strategy.SCAN):
        cost = planned_cost(trajectory, registry, AttributionConfig(strategy=strategy))
        assert cost.worst_calls == sweep.calls and cost.worst_spend == sweep.spend
        assert cost.worst_rollouts == sweep.rollouts
        result = attribute(trajectory, registry, AttributionConfig(strategy=strategy))
        assert result.step_executions <= cost.worst_calls
    budget = sweep.calls // 4  # a budget caps it further
    capped = planned_cost(trajectory, registry, AttributionConfig(budget=budget))
    assert capped.worst_calls < sweep.calls
