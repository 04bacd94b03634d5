"""The swap question (issue 15, part 4): ``attribute --swap-model MODEL`` names the latest step from
which MODEL would have saved a failed run, with the credit of starting the swap at each step, and
Shapley, the repair search and the adaptive engine take the swapped plans unchanged.

The model (`examples/docs/swap.py`) has theory: re-run with the recorded model nothing
matters; with ``large``, swapping from step 2 or earlier saves the run 90 % of the time, and from
step 3 on the recorded decision is already applied."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from otel_replay.attribution import (
    AttributionConfig,
    Method,
    Strategy,
    Verdict,
    attribute,
)
from otel_replay.errors import AttributionError
from otel_replay.replay import Intervention, Plan
from otel_replay.replay._rollout import rollout
from otel_replay.report import REPORT_SCHEMA, build_report
from otel_replay.resamplers import ChatModelOptions, UserCode
from otel_replay.store import Store
from tests.attribution.models import CHAIN, SWAP
from tests.cli_helpers import invoke, ok, one_line_error

LARGE = "large"


def _swap(**config: object) -> AttributionConfig:
    return AttributionConfig(swap_model=LARGE, seed=5, **config)  # type: ignore[arg-type]


def test_the_recorded_model_cannot_save_the_run() -> None:
    """The baseline the swap is read against: re-run as recorded, no step matters."""
    result = attribute(SWAP.trajectory(), SWAP.registry(), AttributionConfig(seed=5))
    assert result.verdict is Verdict.SETTLED and result.point_of_commitment is None
    assert "the failure was settled before the first resamplable step" in result.explanation


@pytest.mark.parametrize("strategy", [Strategy.ADAPTIVE, Strategy.SCAN, Strategy.FIXED])
def test_the_swap_names_the_latest_step_from_which_the_model_saves_the_run(
    strategy: Strategy,
) -> None:
    result = attribute(SWAP.trajectory(), SWAP.registry(), _swap(strategy=strategy))
    assert result.question == "swap-model" and result.swap_model == LARGE
    assert result.verdict is Verdict.SAVED and result.point_of_commitment == 2
    step = result.steps[2]
    assert step.attribution is not None and step.ci_low is not None and step.ci_high is not None
    assert step.ci_low <= SWAP.attribution[2] <= step.ci_high  # the swap's credit at step 2: 0.9
    assert step.kept is not None and step.kept.value == 1.0  # large from step 3 on: still fails
    assert result.explanation.startswith("large would have saved this run from step 2 (llm decide)")
    for later in result.steps[3:]:  # from step 3 on the swap is too late: no effect
        assert later.no_effect or later.cleared


def test_only_the_turns_a_plan_runs_again_are_asked_of_the_swapped_model() -> None:
    run, registry = SWAP.trajectory(), SWAP.registry()
    made = rollout(run, Plan.ablate_from(5, 2).under_model(LARGE), registry, 0, 0).trajectory
    assert [s.inputs.get("model") for s in made.steps if s.kind.value == "llm"] == [
        "small",  # step 0, held: served as recorded, with the recorded model
        LARGE,
        LARGE,
    ]
    everything_held = rollout(run, Plan.factual(5).under_model(LARGE), registry, 0, 0).trajectory
    assert [s.output for s in everything_held.steps] == [s.output for s in run.steps]


def test_shapley_and_the_repair_take_the_swapped_plans_unchanged() -> None:
    result = attribute(
        SWAP.trajectory(),
        SWAP.registry(),
        _swap(method=Method.ALL, permutations=64, repair=True, rollouts=60),
    )
    assert result.shapley is not None
    assert result.shapley.v_all.value == SWAP.v_all  # every step held: the record
    assert abs(result.shapley.v_none.value - SWAP.v_none) < 0.1
    for index, phi in SWAP.shapley.items():  # an OR over steps 2 and 3
        value, se = result.steps[index].shapley, result.steps[index].shapley_se
        assert value is not None and se is not None and abs(value - phi) <= 4 * se + 0.02, index
    repair = result.repair
    assert repair is not None and repair.step_index == 2 and repair.move == "do"
    assert repair.output["timeout_s"] >= 10
    assert "model turns run again: asked of large" in repair.plan


def test_the_report_is_its_own_mode_and_validates() -> None:
    config = _swap(repair=True, rollouts=40)
    result = attribute(SWAP.trajectory(), SWAP.registry(), config)
    report = orjson.loads(orjson.dumps(build_report(result, config, UserCode())))
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert report["mode"] == "swap-model" and report["verdict"] == "saved"
    assert report["point_of_commitment"] is None and report["save_point"] is None
    assert report["swap"] == {
        "model": LARGE,
        "from_step": 2,
        "plan": "steps 0-1: hold; steps 2-4: resample; model turns run again: asked of large",
    }
    assert report["config"]["swap_model"] == LARGE
    assert "--swap-model large" in report["config"]["rerun"]
    assert report["estimand"].startswith("swap credit(i) = P(fail | large from the next step)")
    assert all("asked of large" in q["plan"] for q in report["search"])
    assert report["repair"]["move"] == "do"


def test_a_passing_run_or_a_run_with_no_model_to_ask_is_a_clear_error() -> None:
    passing = SWAP.registry()
    passing.replace_verifier(lambda trajectory: 1.0)  # the same run, scored a success
    with pytest.raises(AttributionError, match="would have saved a failed run"):
        attribute(SWAP.trajectory(), passing, _swap())
    no_model = CHAIN.registry(replace={"plan": None, "decide": None, "summarise": None})
    with pytest.raises(AttributionError, match="none is registered"):
        attribute(CHAIN.trajectory(), no_model, _swap())
    with pytest.raises(AttributionError, match="names no model"):
        AttributionConfig(swap_model=" ")


def test_attribute_swap_model_on_the_command_line(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SWAP.jsonl)))
    code = ("--resamplers", str(SWAP.resamplers))
    out = tmp_path / "swap.json"
    shown = ok(
        invoke(runner, store_path, "attribute", "scm-swap", *code, "--swap-model", LARGE,
               "--seed", "5", "--out", str(out))
    )  # fmt: skip
    assert "credit of a swap to large, per step, of scm-swap" in shown.stdout
    assert "saved: large would have saved this run from step 2" in " ".join(shown.stdout.split())
    report = orjson.loads(out.read_bytes())
    assert report["mode"] == "swap-model" and report["swap"]["from_step"] == 2
    with Store.open(store_path, read_only=True) as db:
        (kept,) = db.reports("scm-swap")
        assert kept["verdict"] == "saved"
        assert db.blame_sums() == []  # a swap question blames no step
    both = invoke(
        runner, store_path, "attribute", "scm-swap", *code, "--swap-model", LARGE,
        "--llm", "openai", "--llm-model", "gpt-other", "--llm-base-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert "give one of them" in one_line_error(both)  # said before any model is asked


def test_the_swap_question_is_a_question_of_its_own_in_the_store() -> None:
    """Its config digest differs from the same attribution without the swap."""
    from otel_replay.attribution._config import config_digest

    code = UserCode(resamplers=("m.py",), llm=ChatModelOptions())
    assert config_digest(_swap(), code) != config_digest(AttributionConfig(seed=5), code)


def test_plans_name_their_moves() -> None:
    patch = [{"op": "remove", "path": "/messages/1"}]
    assert Intervention.edit(patch).describe() == (
        "edit: run again on its inputs patched (remove /messages/1)"
    )
    assert Intervention.observe(error="503").describe() == (
        "observe: the recorded call kept, it fails with '503'"
    )
    assert Intervention.do({"content": "x"}).name == "do"
    assert Plan.swapped(5, 2, LARGE, turns=[0, 2, 4], then=Intervention.force(1)).describe() == (
        "steps 0-1: hold; step 2: resample; step 3: force; step 4: resample; "
        "model turns run again from step 2 on: asked of large"
    )


def test_the_swap_can_start_at_a_later_step() -> None:
    """--from K: the swapped-in model answers the re-run turns from step K on; earlier ones are
    asked of the recorded model. With K past the decision, nothing saves the run any more."""
    run, registry = SWAP.trajectory(), SWAP.registry()
    made = rollout(run, Plan.ablate_from(5, 0).under_model(LARGE, 3), registry, 0, 0).trajectory
    assert [s.inputs.get("model") for s in made.steps if s.kind.value == "llm"] == [
        "small",  # step 0, re-run before K: the recorded model
        "small",
        LARGE,
    ]
    late = attribute(run, registry, _swap(swap_from=3))
    assert late.verdict is Verdict.INCONCLUSIVE and late.point_of_commitment is None
    assert late.explanation.startswith("large would not have saved this run from any step")
    config = _swap(swap_from=2)
    report = build_report(attribute(run, registry, config), config, UserCode())
    assert report["swap"]["from_step"] == 2 and report["config"]["swap_from"] == 2
    assert report["swap"]["plan"].endswith("model turns run again from step 2 on: asked of large")
    assert "--from 2" in report["config"]["rerun"]
    with pytest.raises(AttributionError, match="give the model too"):
        AttributionConfig(swap_from=2)
    with pytest.raises(AttributionError, match="no model turn from step 5 on"):
        attribute(run, registry, _swap(swap_from=5))
