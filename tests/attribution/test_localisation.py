"""The Point of Commitment on the synthetic models: named when the evidence establishes it, else
``inconclusive`` with a bracket that holds the true step, never a wrong step."""

from __future__ import annotations

import math
from functools import cache

import pytest

from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    Method,
    Strategy,
    Verdict,
    attribute,
)
from otel_replay.attribution._results import StepAttribution
from otel_replay.replay import Plan
from otel_replay.replay._rollout import rollout
from tests.attribution.models import (
    BUTTERFLY,
    CHAIN,
    HISTORY,
    HISTORY_FROM_THE_RECORD,
    LATE,
    MODELS,
    Model,
)

#: A budget at which every model's commitment is established (100 rollouts per plan, the default).
ROLLOUTS = 200
BY_MODULE = {m.module: m for m in (*MODELS, HISTORY_FROM_THE_RECORD)}


@cache
def _attributed(module: str, rollouts: int, seed: int = 0) -> AttributionResult:
    model = BY_MODULE[module]
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=rollouts, seed=seed)
    return attribute(model.trajectory(), model.registry(), config)


def _tolerance(step: StepAttribution) -> float:
    """Four standard errors of the difference of the two proportions, plus rounding room."""
    assert step.kept is not None and step.ablated is not None
    k, a = step.kept, step.ablated
    variance = k.value * (1 - k.value) / k.n + a.value * (1 - a.value) / a.n
    return 4 * math.sqrt(variance) + 0.02


def _ids(model: Model) -> str:
    return model.module


@pytest.mark.parametrize("model", MODELS, ids=_ids)
def test_names_the_point_of_commitment(model: Model) -> None:
    result = _attributed(model.module, ROLLOUTS)
    assert result.verdict is Verdict.CULPRIT, result.explanation
    assert result.point_of_commitment == model.point_of_commitment
    assert result.bracket is None
    assert f"step {model.point_of_commitment} " in result.explanation
    culprit = result.steps[model.point_of_commitment]
    assert culprit.ci_low is not None and culprit.ci_low > 0
    config = AttributionConfig()
    for later in result.steps[model.point_of_commitment + 1 :]:
        if later.resamplable:  # every later step is shown to have no effect
            assert later.ci_low is not None and later.ci_high is not None
            assert -config.margin <= later.ci_low <= later.ci_high <= config.margin, later


@pytest.mark.parametrize("model", MODELS, ids=_ids)
def test_attributions_match_theory(model: Model) -> None:
    result = _attributed(model.module, ROLLOUTS)
    assert {s.index for s in result.steps if s.resamplable} == set(model.attribution)
    for index, expected in model.attribution.items():
        step = result.steps[index]
        assert step.attribution is not None
        assert abs(step.attribution - expected) <= _tolerance(step), (index, step)
        assert step.kept is not None and step.ablated is not None
        assert step.ablated.n == ROLLOUTS
        # the plan holding every step is the record itself in the trace walk: run once, exact
        holds_all = index == max(model.attribution)
        assert (step.kept.n, step.kept.exact) == ((1, True) if holds_all else (ROLLOUTS, False))
        assert step.attribution == pytest.approx(step.kept.value - step.ablated.value)
        assert step.ci_low is not None and step.ci_high is not None
        assert step.ci_low <= step.attribution <= step.ci_high
        assert step.kept.low <= step.kept.value <= step.kept.high


def test_butterfly_larger_early_effect_is_not_the_commitment() -> None:
    result = _attributed(BUTTERFLY.module, ROLLOUTS)
    early, committed = result.steps[1], result.steps[3]
    assert early.attribution is not None and committed.attribution is not None
    # the early coin flip has the larger raw effect, and a significant one ...
    assert early.attribution > committed.attribution
    assert early.ci_low is not None and early.ci_low > 0
    assert max(result.steps, key=lambda s: s.attribution or 0.0).index == 1
    # ... but once step 3 is as recorded the run fails whatever step 1 did
    assert result.point_of_commitment == 3


@pytest.mark.parametrize("rollouts", [3, 4, 5])
@pytest.mark.parametrize("model", [BUTTERFLY, LATE], ids=_ids)
def test_small_budget_is_inconclusive_with_a_bracket_holding_the_truth(
    model: Model, rollouts: int
) -> None:
    result = _attributed(model.module, rollouts)
    if model is LATE and result.point_of_commitment == model.point_of_commitment:
        # the last resamplable step is tested against the record itself, whose failure rate is known to be 1:
        # one rollout that passes without it proves it matters, and no later step needs clearing
        assert not any(s.resamplable for s in result.steps[model.point_of_commitment + 1 :])
        return
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.point_of_commitment is None
    assert result.bracket is not None
    low, high = result.bracket
    assert low <= model.point_of_commitment <= high
    assert result.steps[low].resamplable and result.steps[high].resamplable
    assert "Inconclusive" in result.explanation and "between" in result.explanation


#: Budgets and seeds the sweeps below try (results are cached: each runs once).
SWEEP_ROLLOUTS = (3, 4, 5, 10, 20, 30, 50)
SWEEP_SEEDS = (0, 1, 2)
#: More rollouts per plan than anyone would run: an estimate beyond it is not a usable budget.
USABLE_BUDGET = 10**7


def test_rollouts_needed_is_a_usable_budget_beyond_the_one_spent() -> None:
    """An inconclusive run reports the budget that might decide it: more than it already spent,
    and a number someone could run (else None: it cannot be estimated)."""
    offenders = []
    for model in MODELS:
        for rollouts in SWEEP_ROLLOUTS:
            for seed in SWEEP_SEEDS:
                result = _attributed(model.module, rollouts, seed)
                needed = result.rollouts_needed
                if result.verdict is not Verdict.INCONCLUSIVE or needed is None:
                    continue
                if not rollouts < needed <= USABLE_BUDGET:
                    offenders.append(f"{model.module}, seed {seed}: {result.explanation}")
    assert not offenders, "\n".join(offenders)


@pytest.mark.statistical
@pytest.mark.parametrize("model", MODELS, ids=_ids)
def test_never_a_wrong_step_at_any_budget(model: Model) -> None:
    for rollouts in SWEEP_ROLLOUTS:
        for seed in SWEEP_SEEDS:
            result = _attributed(model.module, rollouts, seed)
            where = f"{rollouts} rollouts, seed {seed}: {result.explanation}"
            if result.verdict is Verdict.CULPRIT:
                assert result.point_of_commitment == model.point_of_commitment, where
            else:
                assert result.verdict is Verdict.INCONCLUSIVE, where
                assert result.bracket is not None, where
                assert result.bracket[0] <= model.point_of_commitment <= result.bracket[1], where


def test_history_resampler_must_read_the_counterfactual_history() -> None:
    right = _attributed(HISTORY.module, ROLLOUTS)
    assert (right.verdict, right.point_of_commitment) == (Verdict.CULPRIT, 1)
    # the same model whose reply reads the recorded lookup names a different, wrong step
    wrong = _attributed(HISTORY_FROM_THE_RECORD.module, ROLLOUTS)
    assert wrong.point_of_commitment == HISTORY_FROM_THE_RECORD.point_of_commitment == 0
    assert wrong.point_of_commitment != HISTORY.point_of_commitment
    lookup = wrong.steps[1]
    assert lookup.attribution is not None and abs(lookup.attribution) <= _tolerance(lookup)


@pytest.mark.parametrize(
    ("model", "consistent"),
    [(HISTORY, True), (HISTORY_FROM_THE_RECORD, False)],
    ids=["reads-history", "reads-record"],
)
def test_reply_follows_the_counterfactual_lookup(model: Model, consistent: bool) -> None:
    """Rollouts resampling the lookup: the reply states what THIS rollout's lookup returned."""
    factual = model.trajectory()
    registry = model.registry()
    plan = Plan.ablate_from(len(factual.steps), 1)
    agree = []
    for index in range(40):
        steps = {s.name: s for s in rollout(factual, plan, registry, 0, index).trajectory.steps}
        status = steps["lookup_order"].output["status"]
        agree.append(f"is {status}." in steps["reply"].output["content"])
    assert all(agree) is consistent
    assert any(agree)


@pytest.mark.parametrize("model", [m for m in MODELS if m.observed_only], ids=_ids)
def test_observed_only_steps_are_listed_and_never_named(model: Model) -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=ROLLOUTS, method=Method.ALL)
    result = attribute(model.trajectory(), model.registry(), config)
    assert result.point_of_commitment == model.point_of_commitment
    for index in model.observed_only:
        step = result.steps[index]
        assert not step.resamplable
        assert step.attribution is None and step.ci_low is None and step.ci_high is None
        assert step.kept is None and step.ablated is None
        assert step.shapley is None and step.shapley_se is None
    assert {s.index for s in result.steps if not s.resamplable} == set(model.observed_only)


@pytest.mark.parametrize("model", [m for m in MODELS if m.observed_only], ids=_ids)
def test_observed_only_steps_are_served_from_the_record(model: Model) -> None:
    factual = model.trajectory()
    registry = model.registry()
    plan = Plan.ablate_from(len(factual.steps), 0)  # resample everything that can be
    for index in range(10):
        result = rollout(factual, plan, registry, seed=0, index=index)
        assert result.step_executions == len(factual.steps) - len(model.observed_only)
        for i in model.observed_only:
            assert result.trajectory.steps[i].output == factual.steps[i].output


def test_an_observed_only_culprit_is_never_named() -> None:
    """The chain's decisive read cannot be resampled: no resamplable step can undo the failure, and
    the verdict says so instead of blaming a step that merely copies it."""
    factual = CHAIN.trajectory()
    registry = CHAIN.registry(replace={"read_config": None})
    result = attribute(
        factual, registry, AttributionConfig(strategy=Strategy.FIXED, rollouts=ROLLOUTS)
    )
    assert result.verdict is Verdict.SETTLED  # conclusive, not an open bracket
    assert result.point_of_commitment is None
    assert not result.steps[1].resamplable and result.steps[1].attribution is None
    # every resamplable step is shown to have no effect: no bracket, and the verdict says why
    assert result.bracket is None and result.rollouts_needed is None
    assert all(s.no_effect for s in result.steps if s.resamplable)
    assert result.explanation.startswith("No resamplable step changes the failure rate")
