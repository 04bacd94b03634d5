"""The cost is what was paid (issue 38): every request a rollout made is counted, those of the
rollouts left out of the estimates too, and the report's model calls are what a counting model
server answered, with rollouts on four threads or in a process pool.

The run is the OpenAI Agents support run whose ``lookup_order`` failed
(``tests/fixtures/frameworks/openai-agents.otlp.jsonl``), re-driven as its loop and asked again of
the fake model server of ``examples/fake_model_server.py`` (the built-in model), its tool calls
drawn from the store (``--tools recorded``). Some rollouts ask for a call no stored run made, after
model calls were paid for: they end unservable, which is where the calls went missing. The fake
server's policy is deterministic and a rollout is a pure function of the seed, the plan and its
number, so the tally is exact whatever order the workers run in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from otel_replay import Store, UserCode
from otel_replay.attribution import AttributionConfig, Driver, Strategy, attribute_stored
from otel_replay.attribution._config import OnResamplerError
from otel_replay.attribution._engine import Ended, rolled_out
from otel_replay.attribution._run import RolloutWork, job_of
from otel_replay.attribution._sweep_stored import sweep_stored
from otel_replay.executors import Processes
from otel_replay.importers import read_path
from otel_replay.replay import Plan
from otel_replay.report import REPORT_SCHEMA, html_report
from otel_replay.report._sweep import SWEEP_SCHEMA, build_sweep_report
from otel_replay.resamplers._openai import ChatModelOptions
from tests.cli_helpers import invoke
from tests.conftest import ROOT

RUNS = ROOT / "tests" / "fixtures" / "frameworks" / "openai-agents.otlp.jsonl"
FLAKY = str(ROOT / "tests" / "attribution" / "flaky_lookup.py")
SUCCESS = "2026-12-04"


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    """The fake model server; ``served["model"]`` counts the model calls it answered (chat
    completions, and the Responses API a run recorded through it is asked again in)."""
    with FakeModelServer() as serving:
        yield serving


def _failed(store_path: Path, name: str = "support run tool-error") -> str:
    """The framework's runs in a store; the one whose lookup failed (or the one named)."""
    runs = list(read_path(RUNS))
    with Store.open(store_path) as store:
        store.put_all(runs)
    (run,) = [r.id for r in runs if r.metadata["root_span"] == name]
    return run


@pytest.mark.parametrize("executor", ["threads", "process"])
def test_the_model_calls_are_what_the_server_answered(
    store_path: Path, server: FakeModelServer, executor: str
) -> None:
    run = _failed(store_path)
    code = UserCode(
        success_if=SUCCESS, tools="recorded", llm=ChatModelOptions(base_url=server.base_url)
    )
    pool = Processes(4) if executor == "process" else None
    try:
        with Store.open(store_path, create=False, read_only=True) as store:
            result = attribute_stored(store, run, AttributionConfig(workers=4), code, executor=pool)
    finally:
        if pool is not None:
            pool.close()
    assert result.spend.model == server.served["model"]
    assert result.driver.startswith("chat")
    left_out = result.evidence
    # the case the count missed: rollouts that paid for model calls, then met a call nothing
    # recorded, and were left out of the estimates
    assert left_out.unservable_rollouts > 0 and left_out.spent.model > 0
    assert result.spend.measured == result.spend.model  # each call's tokens, as the server said
    # the call nothing answered is not counted (nothing was called for it), and no tool was paid
    assert left_out.spent.tool == 0
    assert result.step_executions == result.spend.calls


def test_the_report_and_the_cost_line_count_the_rollouts_left_out(
    runner: CliRunner, store_path: Path, server: FakeModelServer
) -> None:
    run = _failed(store_path)
    args = ["attribute", run, "--tools", "recorded", "--llm", "openai"]
    args += ["--llm-base-url", server.base_url, "--success-if", SUCCESS, "--workers", "4"]
    done = invoke(runner, store_path, *args, "--json")
    assert done.exit_code == 1  # no-evidence: too many rollouts of a plan were left out
    report = orjson.loads(done.stdout)
    assert report["verdict"] == "no-evidence"
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    cost, evidence = report["cost"], report["evidence"]
    assert cost["model_calls"] == server.served["model"]
    part = cost["left_out"]
    assert part["rollouts"] == evidence["left_out"] > 0
    assert 0 < part["model_calls"] < cost["model_calls"]
    assert part["tokens"]["total"] < cost["tokens"]["total"]
    page = " ".join(html_report(report).split())
    assert (
        f"of which {part['model_calls']} model calls, {part['free_draws']} free draws in the "
        f"{part['rollouts']} rollouts left out" in page
    )
    answered = server.served["model"]
    text = invoke(runner, store_path, *args).stdout
    assert server.served["model"] == 2 * answered  # the same attribution asks the same calls again
    assert (
        f"{cost['model_calls']:,} model calls (" in text
        and f"of which {part['model_calls']} model calls, {part['free_draws']} free draws in the "
        f"{part['rollouts']} rollouts left out (unservable or crashed)"
        in " ".join(text.split())
    )


def test_a_rollout_a_resample_function_ended_counts_the_calls_it_made(
    store_path: Path, server: FakeModelServer
) -> None:
    """The trace walk: a rollout a user's function ended by raising (counted as a failure) had
    asked the model first; those calls are paid, and counted."""
    run = _failed(store_path)
    code = UserCode(
        resamplers=(FLAKY,), success_if=SUCCESS, llm=ChatModelOptions(base_url=server.base_url)
    )
    config = AttributionConfig(
        driver=Driver.TRACE,
        strategy=Strategy.FIXED,
        rollouts=12,
        workers=4,
        on_resampler_error=OnResamplerError.FAIL_ROLLOUT,
    )
    with Store.open(store_path, create=False, read_only=True) as store:
        result = attribute_stored(store, run, config, code)
    assert result.resampler_errors > 0
    assert result.spend.model == server.served["model"]
    # resampling from step 0 asks the first turn, the tool, the last turn; from 1 the tool, the
    # last turn; from 2 the last turn: 4 model calls in 3 rollouts, unless the tool ended one
    # (after the first turn, which was paid, and is counted)
    assert result.spend.model < 12 * 4
    assert result.evidence.spent.calls == 0  # a failure is evidence: none was left out


def test_the_sweep_counts_the_calls_of_the_rollouts_an_error_ended(
    store_path: Path, server: FakeModelServer
) -> None:
    """The fragility map rolls out through the same engine: the passing run with its lookup
    failed, the rest resampled in the trace walk; a rollout the shipment tracker's error ended
    had paid for the model turn before it."""
    run = _failed(store_path, "support run pass")
    code = UserCode(
        resamplers=(FLAKY,), success_if=SUCCESS, llm=ChatModelOptions(base_url=server.base_url)
    )
    config = AttributionConfig(
        driver=Driver.TRACE, workers=4, on_resampler_error=OnResamplerError.FAIL_ROLLOUT
    )
    with Store.open(store_path, create=False, read_only=True) as store:
        result = sweep_stored(store, run, ("error",), ("lookup_order",), config, code)
    assert result.spend.model == server.served["model"] > 0
    assert result.left_out == 0 and result.left_out_spend.calls == 0  # failures are evidence
    report = build_sweep_report(result)
    Draft202012Validator(SWEEP_SCHEMA).validate(report)
    assert report["cost"]["spend"]["model_calls"] == server.served["model"]


@pytest.mark.parametrize("driver", [Driver.CHAT, Driver.TRACE])
def test_the_calls_noted_as_made_are_the_calls_a_rollout_counts(
    store_path: Path, server: FakeModelServer, driver: Driver
) -> None:
    """What a rollout an error ended is charged comes from the calls noted as they were made; for
    the rollouts that ended, those notes agree with what the rollout itself counts."""
    run = _failed(store_path)
    code = UserCode(
        success_if=SUCCESS, tools="recorded", llm=ChatModelOptions(base_url=server.base_url)
    )
    with Store.open(store_path, create=False, read_only=True) as store:
        job = job_of(store, run, AttributionConfig(driver=driver), code)
    drive = RolloutWork(job).prepare()
    steps = len(job.trajectory.steps)
    ended = finished = 0
    for start in range(steps):
        for number in range(6):
            made = rolled_out(drive, Plan.ablate_from(steps, start), number)
            if isinstance(made, Ended):
                ended += 1
                assert made.draws.calls >= len(made.draws.model_steps)
                continue
            finished += 1
            assert made.draws.calls == made.step_executions
            assert made.draws.model_steps == made.model_steps
    assert finished > 0 and (ended > 0 or driver is Driver.TRACE)
