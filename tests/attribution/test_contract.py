"""The attribution contract: determinism, credit mode, errors that name their cause, registration and
loading of resample functions, and the report and its JSON Schema."""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from otel_replay import (
    AttributionError,
    PluginLoadError,
    RegistrationError,
    Registry,
    RolloutContext,
    RolloutError,
    Step,
    StepFailed,
    StepKind,
    StepStatus,
    Trajectory,
    VerifierError,
    repair_candidates,
    resampler,
    verifier,
)
from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    Method,
    Mode,
    OnResamplerError,
    OnSuccess,
    Strategy,
    Verdict,
    attribute,
)
from otel_replay.attribution._api import planned_rollouts
from otel_replay.attribution._repair import repair_bound
from otel_replay.importers.jsonl import read_jsonl
from otel_replay.replay import Plan
from otel_replay.replay._plan import REMOVE, RESAMPLE
from otel_replay.replay._rollout import rollout
from otel_replay.report import REPORT_SCHEMA, REPORT_VERSION, build_report, dumps_report
from otel_replay.resamplers._loading import load_resamplers
from otel_replay.resamplers._registry import DEFAULT_REGISTRY
from tests.attribution.models import BUTTERFLY, CHAIN, HISTORY, LATE, SCM, Model

VALIDATOR = Draft202012Validator(REPORT_SCHEMA)


def _passing() -> Trajectory:
    (trajectory,) = read_jsonl(SCM / "chain_passing.jsonl")
    return trajectory


def _report(result: AttributionResult, config: AttributionConfig) -> dict[str, Any]:
    """The report as a reader of the file sees it, checked against the schema."""
    report: dict[str, Any] = orjson.loads(dumps_report(build_report(result, config)))
    VALIDATOR.validate(report)
    return report


def _bytes_without_wall_time(result: AttributionResult, config: AttributionConfig) -> bytes:
    report = build_report(result, config)
    report["cost"]["wall_seconds"] = 0.0
    return dumps_report(report)


# --- determinism ---------------------------------------------------------------------------------


def _wrapping(
    registry: Registry, factual: Trajectory, before: Callable[[Step, RolloutContext], None]
) -> Registry:
    """The same resample functions (same names in reports), each calling ``before`` first."""
    wrapped = Registry()
    done: set[tuple[StepKind, str | None]] = set()
    for step in factual.steps:
        registration = registry.lookup(step)
        if registration is None or (registration.kind, registration.name) in done:
            continue
        done.add((registration.kind, registration.name))
        function = registration.function

        @functools.wraps(function)
        def call(step: Step, ctx: RolloutContext, function: Any = function) -> Any:
            before(step, ctx)
            return function(step, ctx)

        wrapped.add_resampler(registration.kind, call, registration.name)
    assert registry.verifier is not None
    wrapped.set_verifier(registry.verifier)
    return wrapped


def _jitter(step: Step, ctx: RolloutContext) -> None:
    """Sleep a little at random, like a remote model: threads then finish rollouts out of order."""
    time.sleep(random.random() * 2e-4)  # not ctx.rng: must not change what is drawn


@pytest.mark.parametrize("method", list(Method), ids=lambda m: m.value)
@pytest.mark.parametrize("model", [CHAIN, BUTTERFLY], ids=lambda m: m.module)
def test_same_seed_same_report_for_1_and_4_workers(model: Model, method: Method) -> None:
    factual = model.trajectory()
    registry = model.registry()
    reports = []
    for workers, used in ((1, registry), (1, registry), (4, _wrapping(registry, factual, _jitter))):
        config = AttributionConfig(
            strategy=Strategy.FIXED,
            rollouts=30,
            permutations=12,
            seed=7,
            method=method,
            repair=True,
            workers=workers,
        )
        reports.append(_bytes_without_wall_time(attribute(factual, used, config), config))
    assert reports[0] == reports[1] == reports[2]


def test_a_different_seed_changes_the_estimates() -> None:
    factual, registry = CHAIN.trajectory(), CHAIN.registry()
    steps = []
    for seed in (7, 8):
        config = AttributionConfig(
            strategy=Strategy.FIXED, rollouts=30, permutations=12, seed=seed, method=Method.ALL
        )
        steps.append(build_report(attribute(factual, registry, config), config)["steps"])
    assert steps[0] != steps[1]


def test_ctx_history_is_the_counterfactual_prefix() -> None:
    factual = CHAIN.trajectory()
    seen: list[tuple[int, list[Step], RolloutContext]] = []

    def spy(step: Step, ctx: RolloutContext) -> None:
        seen.append((step.index, list(ctx.history), ctx))

    registry = _wrapping(CHAIN.registry(), factual, spy)
    plan = Plan.ablate_from(len(factual.steps), 1)
    steps = rollout(factual, plan, registry, seed=0, index=3).trajectory.steps
    assert [index for index, _, _ in seen] == [1, 3, 4, 5]
    for index, snapshot, ctx in seen:
        assert snapshot == list(steps[:index])  # in order, with the rollout's own outputs
        assert list(ctx.history) == snapshot  # and it stays what it was once the run went on
        assert ctx.factual is factual and ctx.plan == plan
        if index:
            assert ctx.history[-1] == steps[index - 1]
    decide_history = seen[1][1]
    assert decide_history[1].output == steps[1].output  # the resampled read, not the record
    assert decide_history[2] == factual.steps[2]  # the observed-only step, from the record


def test_ctx_history_skips_removed_steps() -> None:
    factual = CHAIN.trajectory()
    lengths: dict[int, int] = {}

    def spy(step: Step, ctx: RolloutContext) -> None:
        lengths[step.index] = len(ctx.history)

    registry = _wrapping(CHAIN.registry(), factual, spy)
    interventions = [RESAMPLE] * len(factual.steps)
    interventions[1] = REMOVE
    rollout(factual, Plan("remove:1", tuple(interventions)), registry, seed=0, index=0)
    assert lengths == {0: 0, 3: 2, 4: 3, 5: 4}


# --- passing runs --------------------------------------------------------------------------------


def test_a_passing_run_is_an_error_by_default() -> None:
    with pytest.raises(AttributionError, match="on_success='credit'") as caught:
        attribute(
            _passing(), CHAIN.registry(), AttributionConfig(strategy=Strategy.FIXED, rollouts=10)
        )
    assert "scm-chain-passing passed" in str(caught.value)


def test_credit_mode_names_the_save_point() -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=100, on_success=OnSuccess.CREDIT)
    result = attribute(_passing(), CHAIN.registry(), config)
    assert result.mode is Mode.CREDIT
    assert not result.failed and result.outcome == 1.0
    assert result.verdict is Verdict.NO_FAILURE
    assert result.point_of_commitment == 1  # the located step: here, the save point
    saved = result.steps[1]
    # rescue credit(1) = P(fail | ablated) - P(fail | kept) = 0.4 - 0 in theory
    assert saved.attribution is not None and saved.ci_low is not None
    assert saved.ci_low > 0 and abs(saved.attribution - 0.4) < 0.2
    assert "saved at step 1" in result.explanation
    report = _report(result, config)
    assert report["mode"] == "credit"
    assert report["verdict"] == "no-failure"
    assert report["save_point"] == 1
    assert report["point_of_commitment"] is None
    assert report["estimand"].startswith("rescue credit")


# --- resample functions that raise ---------------------------------------------------------------


def config_server_down(step: Step, ctx: RolloutContext) -> Any:
    raise ConnectionError("config server down")


@pytest.mark.parametrize("workers", [1, 4])
def test_a_resampler_that_raises_stops_the_run_naming_step_function_and_exception(
    workers: int,
) -> None:
    registry = CHAIN.registry(replace={"read_config": config_server_down})
    with pytest.raises(RolloutError) as caught:
        attribute(
            CHAIN.trajectory(),
            registry,
            AttributionConfig(strategy=Strategy.FIXED, rollouts=10, workers=workers),
        )
    error = caught.value
    assert error.step_index == 1
    assert error.function.endswith("config_server_down")
    message = str(error)
    assert "step 1" in message and "read_config" in message
    assert "config_server_down" in message
    assert "ConnectionError: config server down" in message
    assert isinstance(error.__cause__, ConnectionError)


def test_fail_rollout_counts_the_rollouts_lost_to_resampler_errors() -> None:
    registry = CHAIN.registry(replace={"read_config": config_server_down})
    rollouts = 10
    config = AttributionConfig(
        strategy=Strategy.FIXED, rollouts=rollouts, on_resampler_error=OnResamplerError.FAIL_ROLLOUT
    )
    result = attribute(CHAIN.trajectory(), registry, config)
    # read_config is resampled by ablate_from(0) and ablate_from(1), and nowhere else
    assert result.resampler_errors == 2 * rollouts
    report = _report(result, config)
    assert report["cost"]["resampler_errors"] == 2 * rollouts
    assert report["config"]["on_resampler_error"] == "fail-rollout"


def test_a_resampler_returning_non_json_is_a_rollout_error() -> None:
    def returns_a_set(step: Step, ctx: RolloutContext) -> Any:
        return {1, 2}

    registry = CHAIN.registry(replace={"read_config": returns_a_set})
    with pytest.raises(RolloutError, match="returns_a_set") as caught:
        attribute(
            CHAIN.trajectory(), registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=5)
        )
    assert caught.value.step_index == 1


def read_times_out(step: Step, ctx: RolloutContext) -> Any:
    raise StepFailed("read timed out")


def test_step_failed_marks_the_step_and_the_rollout_goes_on() -> None:
    factual = CHAIN.trajectory()
    registry = CHAIN.registry(replace={"read_config": read_times_out})
    result = rollout(factual, Plan.ablate_from(len(factual.steps), 1), registry, seed=0, index=0)
    failed = result.trajectory.steps[1]
    assert failed.status is StepStatus.ERROR
    assert failed.error == "read timed out"
    assert failed.output is None
    assert result.step_executions == 4  # read_config, decide, apply_config and summarise all ran
    assert result.trajectory.steps[3].output["timeout_s"] is None  # decide saw the failed read
    attributed = attribute(
        factual, registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=10)
    )
    assert attributed.resampler_errors == 0


# --- loading resampler modules -------------------------------------------------------------------

UNLOADABLE = {
    "syntax-error": "def broken(:\n    pass\n",
    "import-error": "import no_such_package_for_agent_replay_tests\n",
    "raises-at-import": "raise RuntimeError('misconfigured')\n",
}


@pytest.mark.parametrize("case", sorted(UNLOADABLE))
def test_an_unloadable_module_is_a_plugin_load_error_naming_it(tmp_path: Path, case: str) -> None:
    module = tmp_path / f"{case.replace('-', '_')}_module.py"
    module.write_text(UNLOADABLE[case])
    with pytest.raises(PluginLoadError) as caught:
        load_resamplers([str(module)], Registry())
    assert module.name in str(caught.value)
    assert isinstance(caught.value, ImportError)


def test_a_missing_module_file_is_a_plugin_load_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing_resamplers.py"
    with pytest.raises(PluginLoadError, match=r"missing_resamplers\.py"):
        load_resamplers([str(missing)], Registry())


def test_an_unknown_module_name_is_a_plugin_load_error() -> None:
    with pytest.raises(PluginLoadError, match="no_such_module_for_agent_replay_tests"):
        load_resamplers(["no_such_module_for_agent_replay_tests.resamplers"], Registry())


def test_a_bad_registration_in_a_module_is_a_registration_error(tmp_path: Path) -> None:
    module = tmp_path / "bad_kind.py"
    module.write_text(
        "from otel_replay import resampler\n\n"
        "@resampler('database')\n"
        "def query_db(step, ctx):\n"
        "    return []\n"
    )
    with pytest.raises(RegistrationError, match="query_db"):
        load_resamplers([str(module)], Registry())


def test_modules_load_into_the_registry_given_not_the_default() -> None:
    before = len(DEFAULT_REGISTRY)
    first, second = CHAIN.registry(), CHAIN.registry()  # twice: no duplicate registration
    assert len(first) == len(second) == 5
    assert len(DEFAULT_REGISTRY) == before
    assert first.descriptions() == second.descriptions()
    assert "tool:read_config -> " in "\n".join(first.descriptions())


# --- registration --------------------------------------------------------------------------------


def _unknown_kind() -> None:
    @resampler("database")
    def query_db(step: Step, ctx: RolloutContext) -> Any:
        return []


def _not_callable() -> None:
    resampler("tool", name="fetch")("fetch_tool")  # type: ignore[type-var]


def _duplicate() -> None:
    @resampler("tool", name="fetch")
    def fetch_once(step: Step, ctx: RolloutContext) -> Any:
        return 1

    @resampler("tool", name="fetch")
    def fetch_twice(step: Step, ctx: RolloutContext) -> Any:
        return 2


def _too_few_parameters() -> None:
    @resampler("tool", name="fetch")
    def fetch_without_ctx(step: Step) -> Any:
        return 1


def _too_many_parameters() -> None:
    @resampler("llm")
    def chat_with_extra(step: Step, ctx: RolloutContext, temperature: float) -> Any:
        return 1


def _name_not_a_string() -> None:
    @resampler("tool", name=7)  # type: ignore[arg-type]
    def fetch_numbered(step: Step, ctx: RolloutContext) -> Any:
        return 1


def _verifier_signature() -> None:
    @verifier
    def judge_nothing() -> float:
        return 1.0


def _two_verifiers() -> None:
    @verifier
    def judge_one(trajectory: Trajectory) -> float:
        return 1.0

    @verifier
    def judge_two(trajectory: Trajectory) -> float:
        return 0.0


def _repair_signature() -> None:
    @repair_candidates
    def offer_without_factual(step: Step) -> list[Any]:
        return []


REGISTRATION_ERRORS: dict[str, tuple[Callable[[], None], tuple[str, ...]]] = {
    "unknown-kind": (_unknown_kind, ("query_db", "'database'", "llm, tool")),
    "not-callable": (_not_callable, ("fetch_tool", "not callable")),
    "duplicate": (_duplicate, ("fetch_twice", "fetch_once")),
    "too-few-parameters": (_too_few_parameters, ("fetch_without_ctx", "(step, ctx)")),
    "too-many-parameters": (_too_many_parameters, ("chat_with_extra", "(step, ctx)")),
    "name-not-a-string": (_name_not_a_string, ("fetch_numbered", "7")),
    "verifier-signature": (_verifier_signature, ("judge_nothing", "(trajectory)")),
    "two-verifiers": (_two_verifiers, ("judge_two", "judge_one")),
    "repair-signature": (_repair_signature, ("offer_without_factual", "(step, factual)")),
}


@pytest.mark.parametrize("case", list(REGISTRATION_ERRORS))
def test_registration_errors_name_the_function_at_decoration_time(case: str) -> None:
    decorate, expected = REGISTRATION_ERRORS[case]
    registry = Registry()
    with registry.collecting(), pytest.raises(RegistrationError) as caught:
        decorate()
    message = str(caught.value)
    for fragment in expected:
        assert fragment in message, (fragment, message)
    assert isinstance(caught.value, TypeError)


def test_lookup_prefers_kind_and_name_over_the_kind_wildcard() -> None:
    def specific(step: Step, ctx: RolloutContext) -> Any:
        return "specific"

    def wildcard(step: Step, ctx: RolloutContext) -> Any:
        return "wildcard"

    fetch = Step(StepKind.TOOL, "fetch", {})
    search = Step(StepKind.TOOL, "search", {})
    chat = Step(StepKind.LLM, "gpt", {})
    for specific_first in (True, False):
        registry = Registry()
        registrations = [("fetch", specific), (None, wildcard)]
        for name, function in registrations if specific_first else registrations[::-1]:
            registry.add_resampler("tool", function, name)
        found = registry.lookup(fetch)
        assert found is not None and found.function is specific
        found = registry.lookup(search)
        assert found is not None and found.function is wildcard
        assert registry.lookup(chat) is None
        assert [d.split(" -> ")[0] for d in registry.descriptions()] == ["tool:*", "tool:fetch"]


def test_the_named_resampler_runs_in_rollouts_not_the_wildcard() -> None:
    """The late model registers ``answer`` by name and every other llm step by the wildcard."""
    trajectory = LATE.trajectory()
    result = rollout(trajectory, Plan.ablate_from(len(trajectory.steps), 0), LATE.registry(), 0, 0)
    assert "billing database is in" in result.trajectory.steps[4].output["content"]
    assert result.trajectory.steps[3].output["content"] in ("Hmm.", "Let me see.", "Noted.")


# --- the verifier --------------------------------------------------------------------------------


def test_no_verifier_says_what_to_add() -> None:
    registry = Registry()
    registry.add_resampler("tool", config_server_down, "read_config")
    with pytest.raises(VerifierError, match="@verifier"):
        attribute(
            CHAIN.trajectory(), registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=5)
        )


@pytest.mark.parametrize(
    "value",
    ["1.0", math.nan, math.inf, True, None, [0.0]],
    ids=["string", "nan", "inf", "bool", "none", "list"],
)
@pytest.mark.parametrize("where", ["factual", "counterfactual"])
def test_a_verifier_returning_a_non_number_is_a_verifier_error(value: Any, where: str) -> None:
    factual = CHAIN.trajectory()

    def fickle_judge(trajectory: Trajectory) -> Any:
        counterfactual = trajectory is not factual
        return value if counterfactual or where == "factual" else 0.0

    registry = CHAIN.registry()
    registry.replace_verifier(fickle_judge)
    with pytest.raises(VerifierError) as caught:
        attribute(factual, registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=5))
    message = str(caught.value)
    assert "fickle_judge" in message and repr(value) in message
    assert "must return a number" in message


def test_an_outcome_at_the_threshold_is_a_pass() -> None:
    """``fail = outcome < fail_threshold``: a run scored exactly at the threshold passed."""
    registry = CHAIN.registry()
    registry.replace_verifier(lambda trajectory: 0.5)
    with pytest.raises(AttributionError, match="passed"):
        attribute(CHAIN.trajectory(), registry, AttributionConfig(fail_threshold=0.5))
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=5, fail_threshold=0.6)
    result = attribute(CHAIN.trajectory(), registry, config)
    assert result.failed and result.outcome == 0.5


def test_a_verifier_that_raises_is_a_verifier_error() -> None:
    def broken_judge(trajectory: Trajectory) -> float:
        raise KeyError("final_answer")

    registry = CHAIN.registry()
    registry.replace_verifier(broken_judge)
    with pytest.raises(VerifierError, match=r"broken_judge raised KeyError: 'final_answer'"):
        attribute(
            CHAIN.trajectory(), registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=5)
        )


# --- repair --------------------------------------------------------------------------------------


def test_repair_on_the_chain() -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=100, repair=True)
    result = attribute(CHAIN.trajectory(), CHAIN.registry(), config)
    repair = result.repair
    assert repair is not None
    assert repair.step_index == result.point_of_commitment == 1
    assert repair.output == {"timeout_s": 30}  # the only saving output rollouts ever produce
    assert repair.source == "rollout"
    assert repair.similarity == pytest.approx(1 - 2 / 16)  # '{"timeout_s":1}' -> ...30}
    assert repair.n == 100 and repair.success_rate == 1.0
    kept = result.steps[1].kept
    assert kept is not None
    factual_success_rate = 1 - kept.value
    assert repair.success_low > factual_success_rate  # its interval excludes the factual rate
    report = _report(result, config)
    assert 0.0 <= report["repair"]["minimality"] <= 1.0
    assert report["repair"]["candidates_tried"] == repair.tried >= 1


def test_a_repair_candidates_function_is_tried(tmp_path: Path) -> None:
    extra = tmp_path / "nearby_timeouts.py"
    extra.write_text(
        "from otel_replay import repair_candidates\n\n\n"
        "@repair_candidates\n"
        "def nearby_timeouts(step, factual):\n"
        "    if step.name != 'read_config':\n"
        "        return []\n"
        "    return [{'timeout_s': 2}, {'timeout_s': 100}]\n"
    )
    registry = Registry()
    load_resamplers([str(CHAIN.resamplers), str(extra)], registry)
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=60, repair=True)
    repair = attribute(CHAIN.trajectory(), registry, config).repair
    assert repair is not None
    # most similar first: {"timeout_s": 2} (fails), then {"timeout_s": 100}, before the rollouts' 30
    assert repair.output == {"timeout_s": 100}
    assert repair.source.endswith("nearby_timeouts")
    assert repair.tried == 2
    assert repair.similarity == pytest.approx(1 - 2 / 17)


def test_no_repair_without_a_point_of_commitment() -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=3, repair=True)
    result = attribute(BUTTERFLY.trajectory(), BUTTERFLY.registry(), config)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.repair is None and result.repair_note
    assert _report(result, config)["repair"] is None


# --- the report ----------------------------------------------------------------------------------


def test_the_schema_is_a_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(REPORT_SCHEMA)
    assert REPORT_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"


REPORT_RUNS: dict[str, tuple[Model, AttributionConfig, bool]] = {
    "contrastive": (CHAIN, AttributionConfig(strategy=Strategy.FIXED, rollouts=30), False),
    "shapley": (
        HISTORY,
        AttributionConfig(strategy=Strategy.FIXED, rollouts=30, method=Method.SHAPLEY),
        False,
    ),
    "all": (
        BUTTERFLY,
        AttributionConfig(strategy=Strategy.FIXED, rollouts=30, method=Method.ALL),
        False,
    ),
    "repair": (
        CHAIN,
        AttributionConfig(strategy=Strategy.FIXED, rollouts=60, method=Method.ALL, repair=True),
        False,
    ),
    "credit": (
        CHAIN,
        AttributionConfig(strategy=Strategy.FIXED, rollouts=30, on_success=OnSuccess.CREDIT),
        True,
    ),
    "inconclusive": (
        BUTTERFLY,
        AttributionConfig(strategy=Strategy.FIXED, rollouts=3, repair=True),
        False,
    ),
}


@pytest.mark.parametrize("case", list(REPORT_RUNS))
def test_the_report_validates_against_its_schema(case: str) -> None:
    model, config, passing = REPORT_RUNS[case]
    trajectory = _passing() if passing else model.trajectory()
    result = attribute(trajectory, model.registry(), config)
    report = _report(result, config)
    assert report["version"] == REPORT_VERSION
    assert report["trajectory_id"] == trajectory.id
    assert report["config"]["method"] == config.method.value
    assert report["config"]["rollouts"] == config.rollouts
    assert report["config"]["seed"] == config.seed
    assert report["config"]["interval_methods"]["proportion"].startswith("clopper-pearson")
    assert report["config"]["resamplers"] == list(result.resamplers)
    assert [s["index"] for s in report["steps"]] == list(range(len(trajectory.steps)))
    assert (report["shapley"] is None) is (config.method is Method.CONTRASTIVE)
    assert (report["repair"] is not None) is (case == "repair")


def test_a_report_that_breaks_the_contract_is_rejected() -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=10)
    report = _report(attribute(CHAIN.trajectory(), CHAIN.registry(), config), config)
    report["verdict"] = "probably step 1"
    assert not VALIDATOR.is_valid(report)


def test_cost_counts_every_rollout_and_resample_call() -> None:
    factual, registry = CHAIN.trajectory(), CHAIN.registry()
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=20)
    result = attribute(factual, registry, config)
    # five resampling plans at 20 rollouts, and the plan holding every step (the record) once
    assert result.rollouts == planned_rollouts(factual, registry, config) == 5 * 20 + 1
    # ablate_from(i) resamples every resamplable step from i on: 5 + 4 + 3 + 2 + 1 per rollout
    assert result.step_executions == 15 * 20
    cost = _report(result, config)["cost"]
    assert (cost["rollouts"], cost["step_executions"]) == (101, 300)
    assert cost["wall_seconds"] >= 0


@pytest.mark.parametrize(
    ("method", "expected"),
    [(Method.SHAPLEY, 10 * 6 + 2 * 20), (Method.ALL, 5 * 20 + 1 + 10 * 6 + 2 * 20)],
    ids=["shapley", "all"],
)
def test_shapley_spends_a_fresh_rollout_on_every_coalition(method: Method, expected: int) -> None:
    """10 permutations of 5 players walk 6 coalitions each, none cached; plus both ends of the
    efficiency check at ``rollouts`` each."""
    factual, registry = CHAIN.trajectory(), CHAIN.registry()
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=20, permutations=10, method=method)
    result = attribute(factual, registry, config)
    assert result.rollouts == planned_rollouts(factual, registry, config) == expected


@pytest.mark.parametrize("repair", [False, True], ids=["no-repair", "repair"])
@pytest.mark.parametrize("permutations", [1, 2, 5])
@pytest.mark.parametrize("method", list(Method), ids=[m.value for m in Method])
def test_progress_totals_are_the_rollouts_that_run(
    method: Method, permutations: int, repair: bool
) -> None:
    """The total ``progress`` is given is what runs: exact before a repair search, grown by what the
    search may try once it knows its candidates, and shrunk by what an early success leaves."""
    factual, registry = CHAIN.trajectory(), CHAIN.registry()
    config = AttributionConfig(
        strategy=Strategy.FIXED,
        rollouts=10,
        permutations=permutations,
        method=method,
        repair=repair,
    )
    calls: list[tuple[int, int]] = []
    result = attribute(factual, registry, config, lambda done, total: calls.append((done, total)))
    planned = planned_rollouts(factual, registry, config)
    assert calls[0] == (0, planned)
    assert all(done <= total <= planned + repair_bound(config) for done, total in calls)
    assert calls[-1] == (result.rollouts, result.rollouts)
    searched = repair and result.point_of_commitment is not None
    assert (result.rollouts > planned) is searched


def test_every_inconclusive_report_serialises() -> None:
    """Whatever estimate an inconclusive run makes, its report can be written."""
    factual, registry = BUTTERFLY.trajectory(), BUTTERFLY.registry()
    failures = []
    for rollouts in (10, 20, 30):
        for seed in range(5):
            config = AttributionConfig(strategy=Strategy.FIXED, rollouts=rollouts, seed=seed)
            result = attribute(factual, registry, config)
            try:
                dumps_report(build_report(result, config))
            except TypeError as exc:
                failures.append(
                    f"{rollouts} rollouts, seed {seed}: {exc} "
                    f"(rollouts_needed={result.rollouts_needed})"
                )
    assert not failures, "\n".join(failures)


def test_a_stored_reports_key_is_the_canonical_question_not_a_command_line() -> None:
    """The key the store keeps a report under is the configuration and the code as data: the same
    whichever way they were given, blind to what only changes speed, and changed by anything that
    can change a result."""
    from otel_replay.attribution._config import config_digest
    from otel_replay.resamplers import ToolSource, UserCode

    code = UserCode(resamplers=("tools.py",), success_if="v841")
    config = AttributionConfig(seed=3, margin=0.1)
    key = config_digest(config, code)
    assert key == config_digest(AttributionConfig(margin=0.10, seed=3), code)
    assert key == config_digest(AttributionConfig(seed=3, workers=8, concurrency=4), code)
    assert len({key, config_digest(AttributionConfig(seed=4), code)}) == 2
    assert key != config_digest(config, UserCode(resamplers=("tools.py",), success_if="v84"))
    assert key != config_digest(
        config, UserCode(resamplers=("tools.py",), success_if="v841", tools=ToolSource.RECORDED)
    )
    canonical = config.canonical()
    assert "workers" not in canonical and canonical["strategy"] == "adaptive"
    assert orjson.loads(orjson.dumps(canonical)) == canonical  # plain JSON


def test_user_code_and_selection_take_keywords() -> None:
    from otel_replay.fleet import Selection
    from otel_replay.resamplers import UserCode

    with pytest.raises(TypeError):
        UserCode(("tools.py",))  # type: ignore[misc]
    with pytest.raises(TypeError):
        Selection(("ef2843ff",))  # type: ignore[misc]
    assert UserCode(resamplers=("tools.py",)).resamplers == ("tools.py",)
    assert Selection(ids=("ef28",)).ids == ("ef28",)
