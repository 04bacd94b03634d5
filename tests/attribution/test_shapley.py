"""Monte-Carlo Shapley values against the exact values of the synthetic models.

Tolerances are four reported standard errors (and the standard errors are asserted small enough that
the check can fail); efficiency is checked against ``v(all) - v(none)`` estimated independently.
"""

from __future__ import annotations

import math
from functools import cache

import pytest

from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    Method,
    OnSuccess,
    Strategy,
    attribute,
)
from otel_replay.importers.jsonl import read_jsonl
from tests.attribution.models import AND_GATE, CHAIN, MODELS, OR_GATE, SCM, Model

pytestmark = pytest.mark.statistical

#: 1000 permutations (500 antithetic pairs) put a step's standard error near 0.02; 1000 rollouts
#: for each end of the efficiency check keep the whole gap's standard deviation under 0.03.
PERMUTATIONS = 1000
ROLLOUTS = 1000
SE_CEILING = 0.03
EFFICIENCY = 0.1


@cache
def _shapley(module: str, permutations: int = PERMUTATIONS) -> AttributionResult:
    model = next(m for m in MODELS if m.module == module)
    config = AttributionConfig(
        strategy=Strategy.FIXED,
        rollouts=ROLLOUTS,
        permutations=permutations,
        seed=0,
        method=Method.SHAPLEY,
    )
    return attribute(model.trajectory(), model.registry(), config)


def _phi(result: AttributionResult, index: int) -> tuple[float, float]:
    step = result.steps[index]
    assert step.shapley is not None and step.shapley_se is not None
    return step.shapley, step.shapley_se


@pytest.mark.parametrize("model", [AND_GATE, OR_GATE], ids=lambda m: m.module)
def test_two_player_games_split_credit_equally(model: Model) -> None:
    result = _shapley(model.module)
    (phi_1, se_1), (phi_3, se_3) = _phi(result, 1), _phi(result, 3)
    assert 0 < se_1 <= SE_CEILING and 0 < se_3 <= SE_CEILING
    expected = model.shapley[1]
    assert expected == model.shapley[3]  # symmetric players
    assert abs(phi_1 - expected) <= 4 * se_1, (phi_1, se_1, expected)
    assert abs(phi_3 - expected) <= 4 * se_3, (phi_3, se_3, expected)
    assert abs(phi_1 - phi_3) <= 4 * math.hypot(se_1, se_3)
    for index in (0, 2, 4):  # null players
        phi, se = _phi(result, index)
        assert abs(phi) <= 4 * se + 0.01, (index, phi, se)


def test_and_and_or_differ_as_theory_says() -> None:
    """AND credits each check (1 - q^2)/2 = 0.48, OR each operation (1 - q)^2/2 = 0.32."""
    and_phi, and_se = _phi(_shapley(AND_GATE.module), 1)
    or_phi, or_se = _phi(_shapley(OR_GATE.module), 1)
    assert and_phi - or_phi >= 0.16 - 4 * math.hypot(and_se, or_se)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.module)
def test_efficiency(model: Model) -> None:
    result = _shapley(model.module)
    summary = result.shapley
    assert summary is not None
    assert summary.permutations == PERMUTATIONS
    total = sum(s.shapley for s in result.steps if s.shapley is not None)
    assert summary.total == pytest.approx(total)
    assert summary.v_all.n == summary.v_none.n == ROLLOUTS
    assert abs(summary.total - (summary.v_all.value - summary.v_none.value)) <= EFFICIENCY
    assert abs(summary.efficiency_gap) <= EFFICIENCY
    # both ends, estimated independently, agree with theory
    assert summary.v_all.low <= model.v_all <= summary.v_all.high
    assert summary.v_none.low <= model.v_none <= summary.v_none.high


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.module)
def test_every_model_matches_its_exact_shapley_values(model: Model) -> None:
    result = _shapley(model.module)
    assert {s.index for s in result.steps if s.shapley is not None} == set(model.shapley)
    for index, expected in model.shapley.items():
        phi, se = _phi(result, index)
        assert se <= SE_CEILING
        assert abs(phi - expected) <= 4 * se + 0.01, (index, phi, se, expected)


def test_standard_error_shrinks_with_permutations() -> None:
    few = _phi(_shapley(AND_GATE.module, 40), 3)[1]
    many = _phi(_shapley(AND_GATE.module), 3)[1]
    assert many < few / 3  # 25 times the permutations: about a fifth of the error


def test_credit_mode_efficiency() -> None:
    """On a passing run Shapley values are rescue credit, ``v(none) - v(all)`` in total; the
    efficiency gap must compare like with like."""
    (trajectory,) = read_jsonl(SCM / "chain_passing.jsonl")
    config = AttributionConfig(
        strategy=Strategy.FIXED,
        rollouts=ROLLOUTS,
        permutations=PERMUTATIONS,
        method=Method.SHAPLEY,
        on_success=OnSuccess.CREDIT,
    )
    result = attribute(trajectory, CHAIN.registry(), config)
    summary = result.shapley
    assert summary is not None
    # theory: credit 0.4 / 3 to each of read_config, decide, apply_config; v(all) = 0, v(none) = 0.4
    assert abs(summary.total - 0.4) <= EFFICIENCY
    assert abs(summary.efficiency_gap) <= EFFICIENCY, (
        f"efficiency_gap={summary.efficiency_gap:+.3f} with sum={summary.total:+.3f}, "
        f"v(all)={summary.v_all.value:.3f}, v(none)={summary.v_none.value:.3f}"
    )
