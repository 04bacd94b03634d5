"""The cost ceiling (issue 42, item 2): no sequential question spends more than the fixed strategy
(``--strategy fixed`` at ``--rollouts``, "the sweep") would. Before it, a failure that built up over
32 steps cost 1.57 times the sweep with the old search, and ``--root-cause`` with the root mid-run
1.32 times; the walk is cheaper on both, but with the root cause sought they still reach the sweep,
and stop there and say so, the one switching to the fixed strategy's plan, reusing what ran. The
models are long runs built in code (`long_runs`), with exact failure rates."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
from jsonschema import Draft202012Validator

from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    Strategy,
    Verdict,
    attribute,
)
from otel_replay.attribution._ceiling import Ceiling
from otel_replay.attribution._cost import planned_cost
from otel_replay.report import REPORT_SCHEMA, build_report
from tests.attribution.long_runs import Break, LongRun, Miss, Risk, Wear, run

#: every step wears the run, which fails worn past 20 units: no step decisive alone
GRADUAL = LongRun("gradual", tuple([Wear(0.7)] * 32))
#: the root cause mid-run (a tool that broke, 15 % of the time resampled), a missed mend at 24,
#: every other step a 4 % risk
ROOT_MID = run("root-mid", 32, {16: Break(0.15), 24: Miss(0.6)}, Risk(0.04))
#: a culprit the search finds well below the sweep
CHEAP = run("cheap", 32, {16: Break(0.75), 24: Miss(0.5)})
CEILING = "passed the fixed strategy's"


def _sweep(model: LongRun) -> int:
    config = AttributionConfig(strategy=Strategy.FIXED)
    return planned_cost(model.trajectory(), model.registry(), config).calls


def _attributed(model: LongRun, config: AttributionConfig) -> AttributionResult:
    return attribute(model.trajectory(), model.registry(), config)


def _report(result: AttributionResult, config: AttributionConfig) -> dict[str, Any]:
    report = build_report(result, config)
    report["cost"]["wall_seconds"] = 0.0
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    return report


def _agrees_with_fixed(result: AttributionResult, fixed: AttributionResult) -> None:
    """Every step both decide is decided the same way, and a step the switched run names is the
    fixed strategy's."""
    for ours, theirs in zip(result.steps, fixed.steps, strict=True):
        if ours.decided and theirs.decided:
            said = (ours.significant, ours.no_effect, ours.lowered)
            assert said == (theirs.significant, theirs.no_effect, theirs.lowered), ours.index
    if result.point_of_commitment is not None:
        assert result.point_of_commitment == fixed.point_of_commitment
    if fixed.verdict is Verdict.CULPRIT and result.verdict is Verdict.CULPRIT:
        assert result.point_of_commitment == fixed.point_of_commitment


def test_a_failure_that_built_up_switches_to_the_fixed_plan_within_its_cost() -> None:
    config = AttributionConfig(root_cause=True)
    result = _attributed(GRADUAL, config)
    sweep = _sweep(GRADUAL)
    assert result.step_executions <= sweep  # 1.57 times the sweep before the ceiling
    switched = result.switched_to_fixed
    assert switched is not None and 0 < switched.at_calls <= result.step_executions
    note = next(n for n in result.notes if CEILING in n)
    assert f"the fixed strategy's {sweep:,}; switched to its plan" in note
    assert f"reusing {switched.reused_rollouts:,} rollouts already run" in note
    report = _report(result, config)
    assert report["cost"]["switched_to_fixed"] == {
        "at_calls": switched.at_calls,
        "reused_rollouts": switched.reused_rollouts,
    }
    fixed = _attributed(GRADUAL, dataclasses.replace(config, strategy=Strategy.FIXED))
    _agrees_with_fixed(result, fixed)


def test_the_root_cause_mid_run_stops_at_the_sweep_with_the_commitment_named() -> None:
    config = AttributionConfig(root_cause=True)
    result = _attributed(ROOT_MID, config)
    assert result.step_executions <= _sweep(ROOT_MID)  # 1.32 times the sweep before
    fixed = _attributed(ROOT_MID, dataclasses.replace(config, strategy=Strategy.FIXED))
    assert fixed.point_of_commitment == 24
    assert result.point_of_commitment == 24 and result.verdict is Verdict.CULPRIT
    _agrees_with_fixed(result, fixed)
    note = next(n for n in result.notes if CEILING in n)
    # the steps before the commitment are the dearest to resample: too little is left to read
    # them all, so it stops there and says so, and the root cause stays open
    assert result.switched_to_fixed is None and "stopped there" in note
    assert any("the fixed strategy's cost was reached" in n for n in result.notes)
    root, fixed_root = result.root_cause, fixed.root_cause
    assert root is not None and fixed_root is not None
    assert root.index in (None, fixed_root.index)
    assert "switched_to_fixed" not in _report(result, config)["cost"]


def test_a_budget_below_the_sweep_still_wins() -> None:
    budget = _sweep(GRADUAL) // 3
    config = AttributionConfig(budget=budget)
    result = _attributed(GRADUAL, config)
    assert result.step_executions <= budget
    assert result.switched_to_fixed is None
    assert not any(CEILING in n for n in result.notes)
    assert any(f"the budget of {budget:,}" in n for n in result.notes)


def test_a_run_that_never_nears_the_ceiling_is_the_same_without_it(monkeypatch: Any) -> None:
    config = AttributionConfig(root_cause=True)
    result = _attributed(CHEAP, config)
    assert result.step_executions < 0.8 * _sweep(CHEAP)
    assert result.switched_to_fixed is None and not any(CEILING in n for n in result.notes)
    monkeypatch.setattr(Ceiling, "passes", lambda self, spend: False)
    unbound = _attributed(CHEAP, config)
    assert _report(result, config) == _report(unbound, config)
    assert result.notes == unbound.notes


def test_a_switched_run_is_the_same_for_any_workers() -> None:
    one = AttributionConfig(root_cause=True)
    reports = [
        orjson.dumps(_report(_attributed(GRADUAL, c), c), option=orjson.OPT_SORT_KEYS)
        for c in (one, dataclasses.replace(one, workers=4))
    ]
    assert reports[0] == reports[1]
    assert b"switched_to_fixed" in reports[0]
