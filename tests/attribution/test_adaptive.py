"""The sequential strategies (issue 10) on short runs, where the adaptive strategy is the scan back
from the last step, each step in growing batches, stopping at the Point of Commitment: the same
verdicts as the sweep for far fewer calls, the same stated error bound, deterministic for any number
of workers, and a budget it keeps. The search over suffixes, for long runs, is `test_search.py`."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay import AttributionError
from otel_replay.attribution import AttributionConfig, Strategy, Verdict, attribute
from otel_replay.attribution._cost import planned_cost
from otel_replay.attribution._sequential import schedule
from otel_replay.attribution._stats import decisive_rollouts
from otel_replay.report import build_report
from tests.attribution.models import CHAIN, MODELS, Model
from tests.cli_helpers import invoke, ok

ADAPTIVE = AttributionConfig(strategy=Strategy.ADAPTIVE)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_it_names_what_theory_names_for_a_fraction_of_the_calls(model: Model) -> None:
    adaptive = attribute(model.trajectory(), model.registry(), ADAPTIVE)
    sweep = attribute(
        model.trajectory(),
        model.registry(),
        AttributionConfig(strategy=Strategy.FIXED, rollouts=100),
    )
    assert adaptive.point_of_commitment == model.point_of_commitment
    assert adaptive.verdict is Verdict.CULPRIT
    # on runs of a few steps every later step is tested alone between two estimated plans, whose
    # exact bounds need more rollouts than a test against the record (the search's, on long runs)
    assert adaptive.step_executions <= 0.6 * sweep.step_executions
    # the steps before the culprit were never estimated, and the report says so
    before = [s for s in adaptive.steps if s.resamplable and s.index < model.point_of_commitment]
    assert all(s.attribution is None for s in before)
    if before:
        assert any("not estimated" in note for note in adaptive.notes)


def test_batches_grow_from_a_few_rollouts_and_stop_at_the_decisive_budgets() -> None:
    plan = schedule(ADAPTIVE, 5)
    assert plan.looks[0] == 8 and plan.looks[-1] == ADAPTIVE.max_rollouts
    assert all(a < b <= max(a + 1, 1.5 * a) + 1 for a, b in itertools.pairwise(plan.looks))
    # a look at each budget where "no effect" first becomes possible, since most questions end there
    floors = [
        decisive_rollouts(ADAPTIVE.margin, plan.tails.no_effect, known=known)
        for known in (False, True)
    ]
    assert all(floor in plan.looks for floor in floors)
    # each family's share of the bound is split over the looks at which its test can pass: every
    # look for "matters", the looks from the first floor on for "no effect"; the bound still holds
    share = 0.05 / (2 * 5)
    assert plan.tails.matters * len(plan.looks) <= share + 1e-12
    possible = [n for n in plan.looks if n >= min(floors)]
    assert plan.tails.no_effect * len(possible) <= share + 1e-12
    assert plan.tails.no_effect > plan.tails.matters  # the looks below the floor spend none of it
    assert plan.tails.looks == len(plan.looks)


def _report_bytes(workers: int) -> bytes:
    config = dataclasses.replace(ADAPTIVE, workers=workers)
    result = attribute(CHAIN.trajectory(), CHAIN.registry(), config)
    report = build_report(result, config)
    report["cost"].pop("wall_seconds")
    report["config"]["rerun"] = ""
    return orjson.dumps(report, option=orjson.OPT_SORT_KEYS)


def test_the_same_seed_gives_the_same_report_for_any_workers() -> None:
    assert _report_bytes(1) == _report_bytes(4) == _report_bytes(1)


def test_a_budget_is_kept_and_the_verdict_says_what_it_could() -> None:
    config = dataclasses.replace(ADAPTIVE, budget=150)
    result = attribute(CHAIN.trajectory(), CHAIN.registry(), config)
    assert result.step_executions <= 150
    assert result.verdict is Verdict.INCONCLUSIVE and result.bracket is not None
    assert any("budget of 150 calls" in note for note in result.notes)
    assert "after the adaptive walk" in result.explanation


def test_a_budget_needs_the_adaptive_strategy() -> None:
    with pytest.raises(AttributionError, match="needs the adaptive or the scan strategy"):
        AttributionConfig(strategy=Strategy.FIXED, budget=100)


def test_the_dry_run_bounds_what_it_spends() -> None:
    cost = planned_cost(CHAIN.trajectory(), CHAIN.registry(), ADAPTIVE)
    result = attribute(CHAIN.trajectory(), CHAIN.registry(), ADAPTIVE)
    assert cost.adaptive and cost.calls == 0
    assert result.step_executions <= cost.worst_calls


def test_the_cli_runs_it_and_the_report_says_so(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(CHAIN.jsonl)))
    args = ["attribute", CHAIN.trajectory_id, "--resamplers", str(CHAIN.resamplers)]
    report = orjson.loads(ok(invoke(runner, store_path, *args, "--json")).stdout)  # the default
    assert report["point_of_commitment"] == CHAIN.point_of_commitment
    assert report["config"]["strategy"] == "adaptive"
    assert "--strategy adaptive" in report["config"]["rerun"]
    text = ok(invoke(runner, store_path, *args)).stdout
    assert "adaptive, " in text and "not estimated" in text
    line = invoke(runner, store_path, *args, "--budget", "100", "--strategy", "fixed")
    assert line.exit_code == 1 and "needs the adaptive or the scan" in line.stderr


def test_rollouts_on_the_command_line_mean_the_sweep(runner: CliRunner, store_path: Path) -> None:
    ok(invoke(runner, store_path, "import", str(CHAIN.jsonl)))
    args = ["attribute", CHAIN.trajectory_id, "--resamplers", str(CHAIN.resamplers), "--json"]
    swept = orjson.loads(ok(invoke(runner, store_path, *args, "--rollouts", "50")).stdout)
    assert swept["config"]["strategy"] == "fixed" and swept["config"]["rollouts"] == 50
    both = orjson.loads(
        ok(invoke(runner, store_path, *args, "--rollouts", "50", "--strategy", "adaptive")).stdout
    )
    assert both["config"]["strategy"] == "adaptive"
