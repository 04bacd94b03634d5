"""Cost in what users pay (issue 25): model calls and their tokens, tool calls and the free draws
of ``--tools recorded`` counted apart, in the dry run and in the report; a budget in model calls or
in tokens.

The run is the OpenAI Agents support run whose ``lookup_order`` failed and whose model then gave
up (``tests/fixtures/frameworks/openai-agents.otlp.jsonl``, not the bundled incident example): its
two model calls record their token usage on their spans (OpenInference's ``llm.token_count.*``).
LlamaIndex's streaming calls record none, which is the run for "unknown"."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from otel_replay import Step, Store, UserCode
from otel_replay.attribution import AttributionConfig, Driver, Strategy, attribute_stored
from otel_replay.attribution._config import BudgetUnit, parse_budget
from otel_replay.attribution._engine import Spent
from otel_replay.attribution._run import planned_cost_stored
from otel_replay.attribution._spend import Spend, recorded_tokens
from otel_replay.errors import AttributionError
from otel_replay.importers import read_path
from otel_replay.model import StepKind, Trajectory
from otel_replay.report import REPORT_SCHEMA
from otel_replay.resamplers._openai import ChatModelOptions
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT

FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks"
MODEL = str(ROOT / "tests" / "attribution" / "cost_resamplers.py")
PAID_TOOL = str(ROOT / "tests" / "attribution" / "cost_tools.py")
SUCCESS = "2026-12-04"


def _store(store_path: Path, framework: str = "openai-agents") -> Trajectory:
    """The framework's runs in a store; the one whose tool failed."""
    runs = list(read_path(FRAMEWORKS / f"{framework}.otlp.jsonl"))
    with Store.open(store_path) as store:
        store.put_all(runs)
    (failed,) = [r for r in runs if r.metadata["root_span"] == "support run tool-error"]
    return failed


def _code(*resamplers: str, tools: str | None = "recorded") -> UserCode:
    return UserCode(resamplers=resamplers or (MODEL,), success_if=SUCCESS, tools=tools)


def _config(**settings: Any) -> AttributionConfig:
    return AttributionConfig(**{"driver": Driver.TRACE, **settings})


def test_the_model_calls_record_their_tokens_on_import(store_path: Path) -> None:
    run = _store(store_path)
    model_steps = [s for s in run.steps if s.kind is StepKind.LLM]
    assert [recorded_tokens(s, run) for s in model_steps] == [52, 92]  # prompt + completion
    with Store.open(store_path, create=False, read_only=True) as store:
        assert store.get(run.id).metadata["token_usage"] == run.metadata["token_usage"]
    assert run.metadata["token_usage"][model_steps[0].span_id] == {
        "input_tokens": 40,
        "output_tokens": 12,
        "total_tokens": 52,
    }


def test_the_dry_run_split_is_what_the_trace_walk_spends(store_path: Path) -> None:
    run = _store(store_path)
    rollouts = 20
    config = _config(strategy=Strategy.FIXED, rollouts=rollouts)
    with Store.open(store_path, create=False, read_only=True) as store:
        cost, how = planned_cost_stored(store, run.id, config, _code())
        result = attribute_stored(store, run.id, config, _code())
    assert how.startswith("trace") and cost.exact
    # ablate_from(2) resamples the last turn; from 1 the lookup too; from 0 every step
    first, last = 52, 92
    expected = Spend(
        model=rollouts * 4,
        tool=0,
        free=rollouts * 2,
        tokens=rollouts * (3 * last + first),
        estimated=rollouts * 4,
    )
    assert cost.spend == expected == result.spend
    assert result.step_executions == cost.calls == expected.calls
    # a tool function of the user's own is a paid call, not a draw
    with Store.open(store_path, create=False, read_only=True) as store:
        code = _code(MODEL, PAID_TOOL)
        cost, _ = planned_cost_stored(store, run.id, config, code)
        paid = attribute_stored(store, run.id, config, code)
    assert cost.spend == dataclasses.replace(expected, tool=rollouts * 2, free=0) == paid.spend


def test_the_adaptive_dry_run_bounds_and_guides_the_split(
    runner: CliRunner, store_path: Path
) -> None:
    run = _store(store_path)
    args = ["attribute", run.id, "--resamplers", MODEL, "--success-if", SUCCESS]
    args += ["--tools", "recorded", "--driver", "trace"]
    planned = orjson.loads(ok(invoke(runner, store_path, *args, "--dry-run", "--json")).stdout)
    report = orjson.loads(ok(invoke(runner, store_path, *args, "--json")).stdout)
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    cost, most = report["cost"], planned["worst_spend"]
    for count in ("model_calls", "tool_calls", "free_draws"):
        assert cost[count] <= most[count]
    assert cost["tokens"]["total"] <= most["tokens"]["total"]
    assert cost["model_calls"] + cost["tool_calls"] + cost["free_draws"] == cost["step_executions"]
    typical = planned["typical_spend"]
    assert typical["model_calls"] + typical["free_draws"] == planned["typical_calls"] > 0
    text = ok(invoke(runner, store_path, *args, "--dry-run")).stdout
    assert (
        f"about {typical['model_calls']:,} model calls (≈{typical['tokens']['total']:,} tokens, "
        in text
    )
    assert f"{most['model_calls']:,} model calls (≈{most['tokens']['total']:,} tokens" in text
    table = ok(invoke(runner, store_path, *args)).stdout
    assert (
        f"{cost['model_calls']:,} model calls (≈{cost['tokens']['total']:,} tokens, estimated "
        f"from the recorded usage), 0 tool calls, {cost['free_draws']:,} free draws from the "
        "store"
    ) in table


def test_draws_from_the_store_are_free(store_path: Path) -> None:
    run = _store(store_path)
    with Store.open(store_path, create=False, read_only=True) as store:
        result = attribute_stored(store, run.id, _config(), _code())
    drawn = sum(n for _, n in result.evidence.draws)
    assert result.spend.free == drawn > 0  # every lookup was drawn: the store holds three answers
    assert result.spend.tool == 0
    assert result.spend.calls == result.step_executions


@pytest.mark.parametrize(
    ("budget", "unit"), [(20, BudgetUnit.MODEL_CALLS), (1_500, BudgetUnit.TOKENS)]
)
def test_a_budget_in_model_calls_or_tokens_stops_before_the_batch_that_would_pass_it(
    store_path: Path, budget: int, unit: BudgetUnit
) -> None:
    run = _store(store_path)
    seen: list[Spent] = []
    config = _config(budget=budget, budget_unit=unit)
    with Store.open(store_path, create=False, read_only=True) as store:
        free = attribute_stored(store, run.id, _config(), _code())
        capped = attribute_stored(store, run.id, config, _code(), spending=seen.append)
    spent = capped.spend.model if unit is BudgetUnit.MODEL_CALLS else capped.spend.tokens
    whole = free.spend.model if unit is BudgetUnit.MODEL_CALLS else free.spend.tokens
    assert spent <= budget < whole  # the budget stopped it
    assert seen and all(s.unit is unit and s.budget == budget for s in seen)
    assert seen[-1].amount == spent
    # each batch was announced before it ran, and none that ran would have passed the budget
    assert all(s.amount + s.batch <= budget for s in seen)
    assert f"the budget of {budget:,} {unit.words} was reached" in " ".join(capped.notes)
    assert capped.verdict.value == "inconclusive"


def test_a_budget_in_tokens_needs_recorded_usage(runner: CliRunner, store_path: Path) -> None:
    run = _store(store_path, "llamaindex")
    assert all(recorded_tokens(s, run) is None for s in run.steps if s.kind is StepKind.LLM)
    args = ["attribute", run.id, "--resamplers", MODEL, "--success-if", SUCCESS]
    args += ["--tools", "recorded", "--driver", "trace"]
    line = one_line_error(invoke(runner, store_path, *args, "--budget", "1000:tokens"))
    assert "records no token usage on its model steps" in line
    # in model calls it runs, and counts the calls' tokens as unknown, never as 0
    report = orjson.loads(
        ok(invoke(runner, store_path, *args, "--budget", "40:model-calls", "--json")).stdout
    )
    tokens = report["cost"]["tokens"]
    assert report["cost"]["model_calls"] > 0
    assert tokens == {
        "total": 0,
        "measured": 0,
        "estimated": 0,
        "unknown": report["cost"]["model_calls"],
    }
    assert report["config"]["budget"] == 40 and report["config"]["budget_unit"] == "model-calls"
    assert "--budget 40:model-calls" in report["config"]["rerun"]
    table = ok(invoke(runner, store_path, *args)).stdout
    assert "model calls (tokens unknown: no recorded usage)" in table


@pytest.mark.parametrize(
    "value", ["abc", "5:bogus", "0", "0:tokens", "1.5", "-3", "10:", "2e3.5:tokens"]
)
def test_a_bad_budget_is_one_line_showing_it(
    runner: CliRunner, store_path: Path, value: str
) -> None:
    run = _store(store_path)
    args = ["attribute", run.id, "--resamplers", MODEL, "--success-if", SUCCESS]
    line = one_line_error(invoke(runner, store_path, *args, f"--budget={value}"))
    assert f"--budget {value!r}" in line


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("2000", (2000, BudgetUnit.CALLS)),
        ("2000:calls", (2000, BudgetUnit.CALLS)),
        ("500:model-calls", (500, BudgetUnit.MODEL_CALLS)),
        ("1e6:tokens", (1_000_000, BudgetUnit.TOKENS)),
        ("1_000_000:Tokens", (1_000_000, BudgetUnit.TOKENS)),
    ],
)
def test_budgets_read_and_round_trip(text: str, budget: tuple[int, BudgetUnit]) -> None:
    assert parse_budget(text) == budget
    config = AttributionConfig(budget=budget[0], budget_unit=budget[1])
    flags = config.flags()
    assert parse_budget(flags[flags.index("--budget") + 1]) == budget


def test_the_python_configuration_checks_its_budget() -> None:
    assert AttributionConfig(budget=10, budget_unit="tokens").budget_unit is BudgetUnit.TOKENS  # type: ignore[arg-type]
    with pytest.raises(AttributionError, match="'dollars' is not a unit of budget"):
        AttributionConfig(budget=10, budget_unit="dollars")  # type: ignore[arg-type]
    with pytest.raises(
        AttributionError, match=r"budget=0 must be a whole number, at least 1 \(tokens\)"
    ):
        AttributionConfig(budget=0, budget_unit=BudgetUnit.TOKENS)
    with pytest.raises(AttributionError, match="must be a whole number"):
        AttributionConfig(budget=2.5)  # type: ignore[arg-type]
    # a budget in calls asks the question it always asked: its digest stays
    assert "budget_unit" not in AttributionConfig(budget=10).canonical()
    assert (
        AttributionConfig(budget=10, budget_unit=BudgetUnit.TOKENS).canonical()["budget_unit"]
        == "tokens"
    )


def test_the_built_in_model_counts_the_tokens_its_server_reports(store_path: Path) -> None:
    with FakeModelServer() as server:
        run = _store(store_path)
        code = UserCode(
            success_if=SUCCESS, tools="recorded", llm=ChatModelOptions(base_url=server.base_url)
        )
        config = _config(strategy=Strategy.FIXED, rollouts=4)
        with Store.open(store_path, create=False, read_only=True) as store:
            planned, _ = planned_cost_stored(store, run.id, config, code)
            result = attribute_stored(store, run.id, config, code)
    spend = result.spend
    assert spend.model == planned.spend.model == 16 and spend.free == 8
    # every model call priced as the server counted it, none estimated from the record (the run
    # was recorded from this server's Responses API, which it is asked again in, so the figures
    # the record holds are what it counts again)
    assert spend.measured == spend.model and spend.estimated == spend.unpriced == 0
    assert planned.spend.estimated == 16 and spend.tokens > 0 and spend.tokens % 4 == 0
    assert (
        "16 model calls (" in spend.words()
        and "tokens, as the model counted them)" in spend.words()
    )


@pytest.mark.parametrize(
    ("output", "tokens"),
    [
        ({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 5}}, 35),  # OpenAI
        ({"content": [], "usage": {"input_tokens": 30, "output_tokens": 5}}, 35),  # Anthropic
        ({"usage": {"total_tokens": 35}}, 35),
        ({"usage": {"prompt_tokens": 30}}, None),  # half a figure is no figure
        ({"role": "assistant", "content": "hi"}, None),
    ],
)
def test_a_recorded_response_gives_its_usage(output: dict[str, Any], tokens: int | None) -> None:
    step = Step(StepKind.LLM, "gpt", {"messages": []}, output)
    assert recorded_tokens(step, Trajectory.build("r", [step])) == tokens
