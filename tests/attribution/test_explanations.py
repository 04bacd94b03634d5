"""The verdict's sentence agrees with the numbers (issue 10, item 5).

Before: "the commitment lies between step 0 and step 11" when every resamplable step had been shown
to have no effect; "between step 1 and step 1"; "about 2 rollouts per plan might decide it" at
``--rollouts 1``, a budget at which no "no effect" test can ever pass.
"""

from __future__ import annotations

import pytest

from otel_replay.attribution import AttributionConfig, Strategy, Verdict, attribute
from otel_replay.attribution._stats import decisive_rollouts
from tests.attribution.models import CHAIN

ONLY_DECIDE = {"plan": None, "read_config": None, "apply_config": None, "summarise": None}


def test_one_undecided_step_is_named_as_one() -> None:
    result = attribute(
        CHAIN.trajectory(),
        CHAIN.registry(replace=ONLY_DECIDE),
        AttributionConfig(strategy=Strategy.FIXED, rollouts=3),
    )
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.bracket == (3, 3)
    assert "between" not in result.explanation
    assert "step 3 (llm decide) is the only step that might be the commitment" in result.explanation


def test_a_budget_that_cannot_decide_is_never_told_it_nearly_did() -> None:
    result = attribute(
        CHAIN.trajectory(), CHAIN.registry(), AttributionConfig(strategy=Strategy.FIXED, rollouts=1)
    )
    assert result.verdict is Verdict.INCONCLUSIVE
    floor = decisive_rollouts(0.1, 0.05 / (2 * 5))
    assert floor >= 30
    assert result.rollouts_needed is not None and result.rollouts_needed >= floor
    assert f"about {result.rollouts_needed} rollouts per plan" in result.explanation


@pytest.mark.parametrize(("step", "known"), [(4, False), (5, True)])
def test_the_smallest_decisive_budget_can_decide(step: int, known: bool) -> None:
    """At `decisive_rollouts`, two plans that never differ are shown to have no effect: two
    estimated plans (apply_config), or a plan against the record itself (summarise, the last step,
    whose kept plan resamples nothing), where the bound is the exact binomial one."""
    floor = decisive_rollouts(0.1, 0.05 / (2 * 5), known=known)

    def no_effect(rollouts: int) -> bool | None:
        config = AttributionConfig(strategy=Strategy.FIXED, rollouts=rollouts)
        return attribute(CHAIN.trajectory(), CHAIN.registry(), config).steps[step].no_effect

    assert no_effect(floor)  # both plans fail every time
    assert not no_effect(floor - 1)
    if known:
        assert 0.9**floor <= 0.005 < 0.9 ** (floor - 1)
