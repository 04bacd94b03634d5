"""A step the record marks ``"resamplable": false`` is observed-only in every driver.

The run (native JSONL, a tool-calling chat)::

    0 llm   gpt-test       asks lookup_status for order A1
    1 tool  lookup_status  {"status": "shipped"}              no resample function: observed-only
    2 llm   gpt-test       "Your order is still processing."  marked "resamplable": false

The module registers one kind-wide ``@resampler("llm")``: asked after a tool result it answers
right ("shipped"), otherwise it asks for the status of A1 or A2. The verifier: success iff the final
answer says "shipped". Step 2 is what a resampler would fix: resampled, it always passes, so it
looks like the culprit. Marked not resamplable, it must be served from the record in every rollout
of both drivers: never resampled (every rollout fails), reported ``resamplable: false`` with no
estimate, and never named (nor part of a bracket).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    Driver,
    Method,
    Strategy,
    attribute,
    attribute_stored,
)
from otel_replay.importers.jsonl import read_jsonl
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import Plan
from otel_replay.replay._chat import chat_driver
from otel_replay.report import REPORT_SCHEMA, build_report
from otel_replay.resamplers import Registry, RolloutContext, UserCode
from otel_replay.resamplers._loading import load_resamplers
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok

RUN_ID = "observed-only-chat"
MARKED = 2  # the final model turn, marked "resamplable": false

_TOOLS = [{"type": "function", "function": {"name": "lookup_status", "parameters": {}}}]
_USER = {"role": "user", "content": "Where is my order A1?"}
_ASK = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "call_1", "name": "lookup_status", "arguments": {"order": "A1"}}],
}
_RESULT = {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'}

RECORDS: list[dict[str, Any]] = [
    {"trajectory_id": RUN_ID, "outcome": 0.0},
    {
        "trajectory_id": RUN_ID,
        "kind": "llm",
        "name": "gpt-test",
        "inputs": {"model": "gpt-test", "messages": [_USER], "tools": _TOOLS},
        "output": _ASK,
    },
    {
        "trajectory_id": RUN_ID,
        "kind": "tool",
        "name": "lookup_status",
        "inputs": {"arguments": {"order": "A1"}, "tool_call_id": "call_1"},
        "output": {"status": "shipped"},
    },
    {
        "trajectory_id": RUN_ID,
        "kind": "llm",
        "name": "gpt-test",
        "inputs": {"model": "gpt-test", "messages": [_USER, _ASK, _RESULT], "tools": _TOOLS},
        "output": {"role": "assistant", "content": "Your order is still processing."},
        "resamplable": False,
    },
]

MODULE = '''
"""One kind-wide model resampler and a verifier on the final answer."""

from otel_replay import resampler, verifier


@resampler("llm")
def model(step, ctx):
    messages = step.inputs["messages"]
    if messages and messages[-1].get("role") == "tool":
        return {"role": "assistant", "content": "Your order has shipped."}
    order = ctx.rng.choice(["A1", "A2"])
    call = {"id": "call_1", "name": "lookup_status", "arguments": {"order": order}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


@verifier
def shipped(trajectory):
    return 1.0 if "shipped" in (trajectory.final_answer or "") else 0.0
'''


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """The run's JSONL and the resampler module, written where the CLI can read them."""
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in RECORDS))
    module = tmp_path / "model_resampler.py"
    module.write_text(MODULE)
    return jsonl, module


def _trajectory(jsonl: Path) -> Trajectory:
    (trajectory,) = read_jsonl(jsonl)
    assert trajectory.steps[MARKED].resamplable is False  # the importer keeps the mark
    return trajectory


def _registry(module: Path) -> Registry:
    registry = Registry()
    load_resamplers([str(module)], registry)
    return registry


def _check_report(report: dict[str, Any]) -> None:
    """Step 2 observed-only, nothing estimated for it, never named, never resampled."""
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    step = report["steps"][MARKED]
    assert step["resamplable"] is False
    for field in ("attribution", "ci_low", "p_fail_kept", "shapley", "shapley_se", "tests"):
        assert step[field] is None, (field, step[field])
    assert report["point_of_commitment"] != MARKED
    assert MARKED not in (report["bracket"] or [])
    assert f"step {MARKED}" not in report["explanation"]
    # resampled even once, step 2 answers "shipped" and the rollout passes: every one failed
    for s in report["steps"]:
        for estimate in (s["p_fail_kept"], s["p_fail_ablated"]):
            assert estimate is None or estimate["failures"] == estimate["n"], (s["index"], s)
    shapley = report["shapley"]
    assert shapley["v_none"]["failures"] == shapley["v_none"]["n"]
    assert all(s["shapley"] in (None, 0.0) for s in report["steps"])


def test_the_trace_walk_never_resamples_a_step_marked_not_resamplable(
    files: tuple[Path, Path],
) -> None:
    jsonl, module = files
    trajectory, registry = _trajectory(jsonl), _registry(module)
    resampled: list[int] = []
    (model,) = [r for r in [registry.lookup(trajectory.steps[0])] if r is not None]

    def spy(step: Step, ctx: RolloutContext) -> Any:
        resampled.append(step.index)
        return model.function(step, ctx)

    spied = Registry()
    spied.add_resampler(StepKind.LLM, spy)
    assert registry.verifier is not None
    spied.set_verifier(registry.verifier)
    config = AttributionConfig(
        strategy=Strategy.FIXED,
        rollouts=30,
        permutations=8,
        seed=3,
        method=Method.ALL,
        driver=Driver.TRACE,
    )
    result = attribute(trajectory, spied, config)
    assert resampled and MARKED not in resampled
    _check_result(result)
    _check_report(build_report(result, config))


def _check_result(result: AttributionResult) -> None:
    step = result.steps[MARKED]
    assert not step.resamplable and step.attribution is None and step.shapley is None
    assert result.point_of_commitment != MARKED


def test_the_chat_loop_serves_the_marked_turn_even_after_the_conversation_changed(
    files: tuple[Path, Path],
) -> None:
    """Resampled, turn 0 asks for A1 or A2; asked for A2 the tool (observed-only) and then the
    marked turn are asked anew, off the record: both are served the recorded step, and only turn 0
    counts as run."""
    jsonl, module = files
    trajectory = _trajectory(jsonl)
    chat = chat_driver(trajectory, _registry(module), seed=0)
    assert chat is not None
    drive, seen = chat
    assert [s.resamplable for s in seen.steps] == [True, False, False]
    plan = Plan.ablate_from(len(trajectory.steps), 0)
    orders = set()
    for index in range(20):
        result = drive(plan, index)
        steps = result.trajectory.steps
        orders.add(steps[0].output["tool_calls"][0]["arguments"]["order"])
        assert result.step_executions == 1
        assert steps[-1].output == trajectory.steps[MARKED].output
    assert orders == {"A1", "A2"}  # both the recorded call and a changed one were tried


@pytest.mark.parametrize("driver", [Driver.TRACE, Driver.CHAT], ids=lambda d: d.value)
def test_attribute_stored_keeps_the_step_observed_only_in_both_drivers(
    files: tuple[Path, Path], tmp_path: Path, driver: Driver
) -> None:
    jsonl, module = files
    config = AttributionConfig(
        strategy=Strategy.FIXED,
        rollouts=30,
        permutations=8,
        seed=3,
        method=Method.ALL,
        driver=driver,
    )
    code = UserCode(resamplers=(str(module),), entry_points=False)
    with Store.open(tmp_path / "store.db") as store:
        store.put_all(read_jsonl(jsonl))
        result = attribute_stored(store, RUN_ID, config, code)
    assert result.driver.startswith(driver.value)
    _check_result(result)
    _check_report(build_report(result, config, code))


@pytest.mark.parametrize("driver", [Driver.TRACE, Driver.CHAT], ids=lambda d: d.value)
def test_the_cli_report_shows_the_step_observed_only(
    files: tuple[Path, Path], tmp_path: Path, runner: CliRunner, store_path: Path, driver: Driver
) -> None:
    jsonl, module = files
    out = tmp_path / "report.json"
    ok(invoke(runner, store_path, "import", str(jsonl)))
    result = ok(
        invoke(
            runner, store_path, "attribute", RUN_ID, "--resamplers", str(module),
            "--no-entry-points", "--method", "all", "--rollouts", "30", "--permutations", "8",
            "--seed", "3", "--driver", driver.value, "--out", str(out),
        )
    )  # fmt: skip
    (row,) = [line for line in result.stdout.splitlines() if line.strip().startswith(f"{MARKED} ")]
    assert "observed-only" in row
    assert "◀" not in row
    report: dict[str, Any] = orjson.loads(out.read_bytes())
    assert report["config"]["driver"].startswith(driver.value)
    _check_report(report)
