"""The fragility map (`otel_replay.sweep`): each fault at each chosen step, the failure rate it
leaves, with exact intervals, against a planted-fault model whose rates are known exactly
(``scm/faults.py``), on the bundled incident runs, and on a run a real framework recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from otel_replay import (
    AttributionConfig,
    AttributionError,
    InterventionError,
    RegistrationError,
    Registry,
    RolloutContext,
    Step,
    StepFailed,
    StepKind,
    StepStatus,
    Store,
    Trajectory,
    UserCode,
    fault,
    read_path,
    sweep,
    sweep_stored,
)
from otel_replay.attribution._sweep import CellVerdict, sweep_cost
from otel_replay.fleet._fragility import fragility
from otel_replay.ingest import ingest
from otel_replay.report._sweep import (
    SWEEP_SCHEMA,
    SWEEP_VERSION,
    build_sweep_report,
    dumps_sweep_report,
)
from otel_replay.resamplers._loading import load_resamplers
from tests.attribution.models import SCM
from tests.conftest import ROOT, SAMPLES

FAULTS = ("error", "timeout", "empty", "truncate", "stale")
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"


def _planted() -> tuple[Trajectory, Registry]:
    (run,) = read_path(SCM / "faults.jsonl")
    registry = Registry()
    load_resamplers([str(SCM / "faults.py")], registry)
    return run, registry


def _module(registry: Registry) -> dict[str, Any]:
    """The loaded ``scm/faults.py``'s globals: its `TRUTH` and its count of calls."""
    assert registry.verifier is not None
    return registry.verifier.__globals__  # type: ignore[attr-defined,no-any-return]


def _config(**changes: Any) -> AttributionConfig:
    return AttributionConfig(**{"max_rollouts": 64, "seed": 0, **changes})


def test_each_cell_interval_covers_the_planted_rate() -> None:
    """Every cell's 95 % interval holds the rate theory gives it; a fault nothing reads reads 0
    and is decided at the second look (12 rollouts: at 0 of 8 the bound split over the 7 looks of
    64 is 0.506, not yet below one half); the faults that break the passing run are named."""
    run, registry = _planted()
    result = sweep(run, registry, FAULTS, None, _config())
    assert result.passed and [s.index for s in result.steps] == [1, 2]
    for cell in result.cells:
        truth = _module(registry)["TRUTH"][(cell.step, cell.fault)]
        assert cell.low <= truth <= cell.high, (cell, truth)
    for name in FAULTS:
        harmless = result.cell(2, name)
        assert harmless.failures == 0 and harmless.n == result.looks[1] == 12, harmless
        assert harmless.verdict is CellVerdict.PASSES
    assert {(c.step, c.fault) for c in result.flips} >= {
        (1, "error"),
        (1, "timeout"),
        (1, "empty"),
        (1, "stale"),
    }
    assert result.cell(1, "truncate").verdict is not CellVerdict.FAILS


def test_a_user_fault_is_called_on_the_recorded_step() -> None:
    """``@fault("stale")`` returns what the step returns instead, or fails it with StepFailed."""
    run, registry = _planted()
    result = sweep(run, registry, ["stale"], ["1", "audit_log"], _config(max_rollouts=8))
    assert result.cell(1, "stale").injected.startswith("observe: the recorded call kept")
    assert "stale cache" in result.cell(2, "stale").injected


def test_same_seed_same_report_on_any_number_of_workers() -> None:
    run, registry = _planted()
    reports = [
        dumps_sweep_report(build_sweep_report(sweep(run, registry, FAULTS, None, _config(**c))))
        for c in ({}, {"workers": 3}, {})
    ]
    assert reports[0] == reports[1] == reports[2]
    other = build_sweep_report(sweep(run, registry, FAULTS, None, _config(seed=7)))
    assert other["config"]["seed"] == 7


def test_the_report_meets_its_schema() -> None:
    run, registry = _planted()
    report = build_sweep_report(sweep(run, registry, FAULTS, None, _config(max_rollouts=8)), "x")
    Draft202012Validator.check_schema(SWEEP_SCHEMA)
    Draft202012Validator(SWEEP_SCHEMA).validate(report)
    assert report["format"] == "agent-replay.sweep" and report["version"] == SWEEP_VERSION == 2
    assert len(report["cells"]) == 10


def test_a_dry_run_calls_nothing_and_bounds_what_the_sweep_calls() -> None:
    """The dry run prices every cell from the record without calling one resample function; in
    the trace walk the calls it gives per rollout are exact, so the sweep's calls lie between its
    least (every cell decided at the first look) and its most."""
    run, registry = _planted()
    calls = _module(registry)["CALLS"]
    cost = sweep_cost(run, registry, FAULTS, None, _config())
    assert calls == []
    # list_deploys' cells resample audit_log and answer, audit_log's cells the answer alone
    assert cost.most.calls == 5 * 64 * 2 + 5 * 64 * 1
    assert cost.least.calls == 5 * 8 * 2 + 5 * 8 * 1
    assert cost.cells == 10 and cost.exact
    result = sweep(run, registry, FAULTS, None, _config())
    assert len(calls) == result.calls
    assert cost.least.calls <= result.calls <= cost.most.calls
    per_rollout = {1: 2, 2: 1}
    assert result.calls == sum(c.n * per_rollout[c.step] for c in result.cells)


def test_a_budget_stops_before_a_look_it_cannot_afford() -> None:
    run, registry = _planted()
    # the first look costs 5 * 8 * 2 + 5 * 8 = 120 calls; topping up one open list_deploys cell
    # to the second look's 12 rollouts, 8 more
    result = sweep(run, registry, FAULTS, None, _config(budget=125))
    assert result.out_of_budget and result.calls == 120
    assert result.notes and "budget" in result.notes[0]
    assert all(c.n == 8 for c in result.cells)  # the first look only: the second costs more


@pytest.mark.parametrize(
    ("faults", "steps", "error", "words"),
    [
        (["flood"], None, InterventionError, "unknown fault; built-in faults: empty, error"),
        (["error"], ["nothing"], AttributionError, "names no step of run scm-faults"),
        (["error"], ["9"], InterventionError, "run scm-faults has steps 0..3"),
        ([" "], None, InterventionError, "name at least one fault"),
    ],
    ids=["unknown-fault", "steps-name-nothing", "step-out-of-range", "no-fault"],
)
def test_bad_input_is_one_error_naming_it(
    faults: list[str], steps: list[str] | None, error: type[Exception], words: str
) -> None:
    run, registry = _planted()
    with pytest.raises(error, match=words):
        sweep(run, registry, faults, steps, _config())
    assert _module(registry)["CALLS"] == []


def test_a_fault_is_checked_when_registered() -> None:
    registry = Registry()
    with pytest.raises(RegistrationError, match="'error' is a built-in fault"):
        registry.add_fault("error", lambda step: None)
    with pytest.raises(RegistrationError, match=r"must accept \(step\)"):
        registry.add_fault("slow", lambda step, ctx, extra: None)  # type: ignore[arg-type]
    registry.add_fault("slow", lambda step: None)
    with pytest.raises(RegistrationError, match="a fault named 'slow' is already registered"):
        registry.add_fault("slow", lambda step: None)
    with pytest.raises(RegistrationError, match="without commas"):
        registry.add_fault("a,b", lambda step: None)
    with registry.collecting(), pytest.raises(RegistrationError, match="needs the fault's name"):

        @fault  # type: ignore[arg-type]
        def bare(step: Step) -> Any:
            return None

    with registry.collecting():

        @fault("cold")
        def cold(step: Step) -> Any:
            return None

    assert sorted(registry.faults) == ["cold", "slow"] and registry.faults["cold"] is cold


def _stored(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "store.db")
    for path in (SAMPLES / "incident.otlp.jsonl", SAMPLES / "incident.steps.jsonl"):
        ingest(store, read_path(path))
    return store


def test_the_bundled_runs(tmp_path: Path) -> None:
    """The failing sample run (its deploy list came back empty): an empty list again would not
    have mattered, it still fails; the passing one is broken by exactly that fault."""
    code = UserCode(resamplers=(TOOLS,), success_if="v841", entry_points=False)
    with _stored(tmp_path) as store:
        failing = sweep_stored(store, "ef2843ff", ["empty", "error"], ["list_deploys"],
                               _config(max_rollouts=16), code)  # fmt: skip
        passing = sweep_stored(store, "incident-pass", ["empty"], ["list_deploys"],
                               _config(max_rollouts=16), code)  # fmt: skip
    assert not failing.passed and failing.driver.startswith("chat")
    assert failing.cell(3, "empty").verdict is CellVerdict.FAILS
    assert failing.cell(3, "empty").failures == failing.cell(3, "empty").n
    assert passing.passed and [(c.step, c.fault) for c in passing.flips] == [(3, "empty")]
    rows = fragility([failing, passing])
    broken = next(r for r in rows if r.passed and r.name == "list_deploys" and r.fault == "empty")
    assert (broken.runs, broken.flipped) == (1, 1)
    assert broken.sentence().startswith("list_deploys returning empty breaks 100% of passing runs")


def _framework_registry() -> Registry:
    """A model that asks for the recorded next tool while every tool answered, and gives up when
    one failed or came back empty; tools that answer as recorded. Success: it did not give up."""
    registry = Registry()

    def model(step: Step, ctx: RolloutContext) -> Any:
        tools = [s for s in ctx.history if s.kind is StepKind.TOOL]
        if any(s.status is StepStatus.ERROR or s.output in ([], {}, "", None) for s in tools):
            return {"role": "assistant", "content": "I could not find out."}
        if ctx.recorded is not None:
            return ctx.recorded.output
        return {"role": "assistant", "content": "Done."}

    def tool(step: Step, ctx: RolloutContext) -> Any:
        if ctx.recorded is None:
            raise StepFailed("no such call recorded")
        return ctx.recorded.output

    registry.add_resampler("llm", model)
    registry.add_resampler("tool", tool)

    def answered(run: Trajectory) -> float:
        last = [s for s in run.steps if s.kind is StepKind.LLM][-1]
        return 0.0 if "could not" in str(last.output) else 1.0

    registry.set_verifier(answered)
    return registry


def test_a_run_a_framework_recorded() -> None:
    """LangGraph's run from the corpus, re-driven as its loop: a tool that fails or answers
    nothing makes the model give up every time; the record passes."""
    from otel_replay.replay._chat import chat_driver

    (run,) = [r for r in read_path(FRAMEWORKS / "langgraph.otlp.jsonl") if r.id.startswith("2579")]
    registry = _framework_registry()
    found = chat_driver(run, registry, 0)
    assert found is not None
    drive, run = found
    result = sweep(run, registry, ["error", "empty"], ["tool"], _config(max_rollouts=16),
                   driver=drive, how="chat")  # fmt: skip
    assert result.passed and result.steps
    for cell in result.cells:
        assert cell.failures == cell.n == 8 and cell.verdict is CellVerdict.FAILS, cell


@pytest.mark.statistical
def test_the_intervals_cover_the_planted_rates_over_seeds() -> None:
    """Over 20 seeds, each cell's interval misses its true rate no more often than its stated
    5 % (Clopper–Pearson split over the looks is conservative: far fewer misses are expected)."""
    run, registry = _planted()
    truth = _module(registry)["TRUTH"]
    misses = cells = 0
    for seed in range(20):
        for cell in sweep(run, registry, FAULTS, None, _config(seed=seed)).cells:
            cells += 1
            misses += not cell.low <= truth[(cell.step, cell.fault)] <= cell.high
    assert cells == 200 and misses <= 10, misses


def test_same_report_on_a_process_pool(tmp_path: Path) -> None:
    """The stored planted run swept on threads and on two processes: the same report, byte for
    byte (a rollout is a pure function of the seed, the cell's plan and its number)."""
    from otel_replay import Processes, Threads

    code = UserCode(resamplers=(str(SCM / "faults.py"),), entry_points=False)
    reports = []
    with Store.open(tmp_path / "store.db") as store:
        ingest(store, read_path(SCM / "faults.jsonl"))
        for executor in (Threads(2), Processes(2)):
            try:
                made = sweep_stored(store, "scm-faults", FAULTS, None, _config(max_rollouts=16),
                                    code, executor=executor)  # fmt: skip
            finally:
                executor.close()
            reports.append(dumps_sweep_report(build_sweep_report(made)))
    assert reports[0] == reports[1]


def test_a_user_fault_that_returns_no_json_value_is_refused_before_any_rollout() -> None:
    run, registry = _planted()
    registry.add_fault("odd", lambda step: {1, 2})
    with pytest.raises(
        InterventionError, match=r"fault 'odd' .* returned a value that is not JSON"
    ):
        sweep(run, registry, ["odd"], None, _config())
    assert _module(registry)["CALLS"] == []
