"""What ``--tools recorded`` draws from the whole store, and rollouts that are no evidence: a call no
run recorded (unservable, or failed by the faults fallback) and an agent that crashed.

The runs are a refund desk of its own (`tests.attribution.refunds`), not the bundled incident
example: the failing run's lookup met a 503 and never reached ``get_refund_policy``, which only a
passing run called. Its model refuses a ``null`` tool result: a test here that passes was never
handed one."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from otel_replay import (
    AttributionConfig,
    Registry,
    RolloutContext,
    Step,
    StepFailed,
    Store,
    Strategy,
    ToolSource,
    UserCode,
    Verdict,
    answer_verifier,
    attribute,
    attribute_stored,
    build_report,
)
from otel_replay.attribution._run import attribute_job, job_of
from otel_replay.executors import Processes
from otel_replay.replay._chat import chat_driver
from otel_replay.report import REPORT_SCHEMA
from otel_replay.resamplers._recorded import recorded_outcomes
from tests.attribution.refunds import SUCCESS, careless, model, refund_store, unguarded
from tests.cli_helpers import invoke, ok
from tests.conftest import ROOT

MODEL = str(ROOT / "tests" / "attribution" / "refunds_model.py")
AGENTS = ROOT / "tests" / "attribution" / "refunds.py"
POLICY = {"tool": "get_refund_policy", "arguments": {"order_id": "A-7"}}


def _attribute(
    runner: CliRunner, store: Path, run: str, out: Path, *args: str
) -> tuple[Any, dict[str, Any]]:
    result = invoke(
        runner, store, "attribute", run, "--resamplers", MODEL, "--success-if", SUCCESS,
        "--out", str(out), *args,
    )  # fmt: skip
    report: dict[str, Any] = orjson.loads(out.read_bytes())
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    return result, report


def _draws(report: dict[str, Any]) -> dict[str, int]:
    return {row["run"]: row["draws"] for row in report["evidence"]["draws"]["runs"]}


def test_a_call_the_failing_run_never_made_is_drawn_from_the_run_that_made_it(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    failing, (passing,) = refund_store(store_path, passing=1)
    result, report = _attribute(
        runner, store_path, failing, tmp_path / "r.json", "--tools", "recorded"
    )
    ok(result)  # the model raises on a null result: none was handed one
    assert report["verdict"] == "culprit" and report["point_of_commitment"] == 1
    draws = _draws(report)
    assert set(draws) == {failing, passing}  # the 503 is the failing run's own result
    assert draws[passing] > 0 and report["evidence"]["draws"]["total"] == sum(draws.values())
    assert report["evidence"]["left_out"] == 0 and report["evidence"]["missing"] is False
    assert f"tool results drawn from the store: {sum(draws.values())}" in result.stdout


def test_the_python_api_draws_from_the_passing_run_and_never_serves_null(
    store_path: Path,
) -> None:
    """The library, with a spy between the chat loop and the recorded outcomes: the policy call
    the failing run never made is served the passing run's answer."""
    failing_id, (passing,) = refund_store(store_path, passing=1)
    with Store.open(store_path) as store:
        failing = store.get(failing_id)
        recorded = recorded_outcomes(store, failing)
    served: list[tuple[str, Any, bool]] = []

    def tools(step: Step, ctx: RolloutContext) -> Any:
        try:
            output = recorded(step, ctx)
        except StepFailed as failure:
            served.append((step.name, str(failure), ctx.recorded is None))
            raise
        served.append((step.name, output, ctx.recorded is None))
        return output

    registry = Registry()
    registry.add_resampler("llm", model)
    registry.add_resampler("tool", tools)
    registry.set_verifier(answer_verifier(SUCCESS))
    made = chat_driver(failing, registry, seed=0)
    assert made is not None
    drive, marked = made
    result = attribute(marked, registry, AttributionConfig(seed=0), driver=drive)
    assert result.verdict is Verdict.CULPRIT and result.point_of_commitment == 1
    policy = [(output, fresh) for name, output, fresh in served if name == "get_refund_policy"]
    assert policy and all(o == {"refundable": True, "days": 30} and fresh for o, fresh in policy)
    assert None not in [output for _, output, _ in served]
    assert dict(result.evidence.draws)[passing] >= len(policy)
    # the same through attribute_stored, as the command line does it
    with Store.open(store_path) as store:
        code = UserCode(resamplers=(MODEL,), success_if=SUCCESS, tools="recorded")
        stored = attribute_stored(store, failing_id, AttributionConfig(seed=0), code)
    assert code.tools is ToolSource.RECORDED
    assert stored.point_of_commitment == 1 and passing in dict(stored.evidence.draws)


def test_a_call_no_run_recorded_leaves_its_rollouts_unservable_and_the_attribution_without_evidence(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """Runs whose model answered without the policy: a lookup drawn a success leads to a policy
    call nothing recorded. Those rollouts are held as unservable, and as most of a plan is, the
    attribution says the evidence is missing and exits 1 (the report is still written and kept)."""
    failing, _ = refund_store(store_path, passing=0, hasty_runs=3)
    result, report = _attribute(
        runner, store_path, failing, tmp_path / "r.json", "--tools", "recorded"
    )
    assert result.exit_code == 1, result.output
    evidence = report["evidence"]
    (call,) = evidence["unservable"]["calls"]
    assert call == {**POLICY, "rollouts": evidence["unservable"]["rollouts"]}
    assert call["rollouts"] > 0 and evidence["left_out"] == call["rollouts"]
    assert evidence["missing"] is True and evidence["crashed"]["rollouts"] == 0
    assert report["verdict"] == "no-evidence" and report["point_of_commitment"] is None
    assert report["explanation"].startswith("No evidence: ")
    assert "could not be served" in report["explanation"]
    assert "does not depend" not in report["explanation"]
    assert "left out as unservable" in result.stdout and "get_refund_policy" in result.stdout
    with Store.open(store_path, read_only=True) as db:
        assert db.report_counts() == {failing: 1}


def test_recorded_then_faults_fails_the_calls_nothing_recorded_and_says_so(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    failing, _ = refund_store(store_path, passing=0, hasty_runs=3)
    result, report = _attribute(
        runner, store_path, failing, tmp_path / "r.json", "--tools", "recorded,faults"
    )
    ok(result)
    evidence = report["evidence"]
    assert evidence["unservable"]["rollouts"] == 0 and evidence["left_out"] == 0
    (fault,) = evidence["draws"]["faults"]
    assert fault["tool"] == POLICY["tool"] and fault["arguments"] == POLICY["arguments"]
    assert fault["draws"] > 0
    assert (
        f"{fault['draws']} calls that no stored run recorded failed as injected faults"
        in (report["explanation"])
    )
    assert "--tools recorded,faults" in report["config"]["rerun"]
    assert "failed as injected faults" in result.stdout


def test_a_rollout_whose_agent_crashed_is_left_out_not_counted_as_a_failure(
    store_path: Path,
) -> None:
    """``careless`` raises on every order it finds: where a lookup draws the passing run's
    answer, the rollout crashed. It is neither a success nor a failure: the plan's rate is of the
    rest, and the crash is counted and named."""
    failing, _ = refund_store(store_path, passing=1, failing=3, agent=careless)
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=24, seed=0)
    code = UserCode(
        resamplers=(MODEL,), success_if=SUCCESS, tools="recorded", agent=f"{AGENTS}:careless"
    )
    with Store.open(store_path) as store:
        result = attribute_stored(store, failing, config, code)
    evidence = result.evidence
    assert evidence.crashed > 0 and evidence.first_crash == "KeyError: 'shipped_on'"
    assert not evidence.missing and evidence.unservable == ()
    lookup = result.steps[1]
    assert lookup.ablated is not None and lookup.ablated.left_out > 0
    assert lookup.ablated.n + lookup.ablated.left_out == 24
    assert lookup.ablated.failures == lookup.ablated.n  # every rollout left counted failed
    left = sum(p.left_out for s in result.steps for p in (s.ablated,) if p is not None)
    assert left == evidence.crashed
    assert f"{evidence.crashed} crashed (the agent raised KeyError" in result.explanation
    report = build_report(result, config, code)
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert report["evidence"]["crashed"] == {
        "rollouts": evidence.crashed,
        "first": "KeyError: 'shipped_on'",
    }


def test_most_rollouts_crashing_is_no_evidence_and_exits_1(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    failing, _ = refund_store(store_path, passing=3, agent=careless)
    result, report = _attribute(
        runner, store_path, failing, tmp_path / "r.json", "--tools", "recorded",
        "--agent", f"{AGENTS}:careless",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert report["verdict"] == "no-evidence"
    assert report["evidence"]["crashed"]["first"] == "KeyError: 'shipped_on'"
    assert "crashed (the agent raised KeyError" in report["explanation"]
    assert "left out as crashed" in result.stdout


def test_an_agent_that_did_not_handle_a_failing_step_failed_the_task(store_path: Path) -> None:
    """``unguarded`` lets the 503's `StepError` end its run: the world failed it, so the rollout
    is scored (a failure), not left out as a crash, and the lookup is the culprit."""
    failing, _ = refund_store(store_path, passing=1, agent=unguarded)
    code = UserCode(
        resamplers=(MODEL,), success_if=SUCCESS, tools="recorded", agent=f"{AGENTS}:unguarded"
    )
    with Store.open(store_path) as store:
        assert store.get(failing).metadata["agent_error"].startswith("StepError: ")
        result = attribute_stored(store, failing, AttributionConfig(seed=0), code)
    assert result.evidence.crashed == 0 and result.evidence.left_out == 0
    assert result.verdict is Verdict.CULPRIT and result.point_of_commitment == 1


def test_workers_in_other_processes_draw_the_same_lazily_and_sent_everything(
    store_path: Path,
) -> None:
    """A process pool's workers open the store for the calls they meet; a job sent where the
    store cannot be read carries every result of the run's tools. Both give the threads' report."""
    failing, _ = refund_store(store_path, passing=1)
    config = AttributionConfig(seed=0)
    code = UserCode(resamplers=(MODEL,), success_if=SUCCESS, tools=ToolSource.RECORDED)

    def report(result: Any) -> dict[str, Any]:
        built = build_report(result, config, code)
        built["cost"]["wall_seconds"] = 0
        return built

    with Store.open(store_path) as store:
        here = attribute_stored(store, failing, config, code)
        sent = job_of(store, failing, config, code, elsewhere=True)
    pool = Processes(2)
    try:
        with Store.open(store_path) as store:
            lazily = attribute_stored(store, failing, config, code, executor=pool)
        complete = attribute_job(sent, executor=pool)
    finally:
        pool.close()
    assert report(lazily) == report(here) == report(complete)
    assert here.evidence.draws and here.point_of_commitment == 1


@pytest.mark.parametrize("tools", ["recorded", "recorded,faults"])
def test_the_tools_choice_is_part_of_the_question(tools: str) -> None:
    from otel_replay.attribution._config import config_digest

    code = UserCode(tools=tools)
    assert code.canonical()["tools"] == tools and code.flags()[-2:] == ["--tools", tools]
    other = dataclasses.replace(
        code, tools="recorded" if tools != "recorded" else "recorded,faults"
    )
    assert config_digest(AttributionConfig(), code) != config_digest(AttributionConfig(), other)
