"""The root cause beside the Point of Commitment, each step's necessity and sufficiency, the search's
fallback over the bracket a fall leaves open, and the verdict of a failure no step made (issue 25).

The models are long runs built in code (`long_runs`), with the exact failure rate of every plan:
a tool that broke (``Break``: a 503) and a later model turn that could have mended it and did not
(``Miss``: it gave up). The Point of Commitment is the give-up turn, the latest step that matters;
the root cause is the broken call, the earliest.
"""

from __future__ import annotations

import dataclasses

import pytest

from otel_replay.attribution import AttributionConfig, Strategy, Verdict, attribute
from otel_replay.attribution._results import Comparison, Proportion
from otel_replay.report import build_report
from tests.attribution.long_runs import Break, Crash, LongRun, Luck, Miss, run

SUPPORT = run("support", 4, {1: Break(0.4), 2: Miss(0.6)})
#: the broken call is rarer here: before it, every plan fails 4 % of the time, where exact bounds
#: show "no effect" within the default --max-rollouts (at 16 %, two estimated plans need more)
SUPPORT_LONG = run("support-long", 24, {6: Break(0.1), 15: Miss(0.6)})


#: the questions a search asked, by the step it resampled from, and what each showed
ASKED = [
    (47, "no effect"),
    (32, "no effect"),
    (24, "no effect"),
    (16, "no effect"),
    (22, "matters"),
]


def _comparison(decision: str) -> Comparison:
    kept, ablated = Proportion(1, 1, 1.0, 1.0, exact=True), Proportion(0, 8, 0.0, 0.3)
    return Comparison(
        kept, ablated, 1.0, 0.5, 1.0, 0.5 if decision == "matters" else -0.5, (-0.05, 0.05),
        1e-4, decision == "matters", decision == "no effect",
    )  # fmt: skip


def _truth(model: LongRun, index: int) -> tuple[float, float]:
    """(P(fail | the step kept, later resampled), P(fail | resampled from it on))."""
    resamplable = range(len(model.rules))
    later = next((i for i in resamplable if i > index), len(model.rules))
    return model.failure_rate(later), model.failure_rate(index)


def test_the_sweep_names_the_root_cause_beside_the_commitment() -> None:
    result = attribute(
        SUPPORT.trajectory(),
        SUPPORT.registry(),
        AttributionConfig(strategy=Strategy.FIXED, rollouts=600),
    )
    assert result.verdict is Verdict.CULPRIT and result.point_of_commitment == 2
    root = result.root_cause
    assert root is not None and root.index == 1 and root.sought
    # resampling from the broken call on saves the run 1 - 0.4 * 0.4 = 84 % of the time
    assert root.saves is not None and root.saves.low <= 0.84 <= root.saves.high
    assert (
        "Its root cause is step 1 (tool s01_break), the earliest step that matters: resampling it saves the run 84% ["
        in result.explanation
    )
    report = build_report(result, AttributionConfig(strategy=Strategy.FIXED, rollouts=600))
    assert report["root_cause"]["step"] == 1


def test_necessity_and_sufficiency_hold_their_true_values() -> None:
    """PN = 1 − P(fail | resampled)/P(fail | kept), PS = 1 − P(pass | kept)/P(pass | resampled):
    for the give-up turn 0.6 and 1.0, for the broken call 0.6 and 2/7."""
    result = attribute(
        SUPPORT.trajectory(),
        SUPPORT.registry(),
        AttributionConfig(strategy=Strategy.FIXED, rollouts=600),
    )
    for index in (1, 2):
        kept, ablated = _truth(SUPPORT, index)
        pn, ps = 1 - ablated / kept, 1 - (1 - kept) / (1 - ablated)
        step = result.steps[index]
        assert step.necessity is not None and step.sufficiency is not None
        assert step.necessity.low <= pn <= step.necessity.high, (index, pn, step.necessity)
        assert step.sufficiency.low <= ps <= step.sufficiency.high, (index, ps, step.sufficiency)
        assert step.necessity.lower <= step.necessity.value <= step.necessity.upper


def test_the_adaptive_strategy_seeks_it_when_asked_and_counts_its_cost() -> None:
    plain = attribute(SUPPORT_LONG.trajectory(), SUPPORT_LONG.registry(), AttributionConfig())
    assert plain.point_of_commitment == 15
    assert plain.root_cause is not None and not plain.root_cause.sought
    config = AttributionConfig(root_cause=True)
    result = attribute(SUPPORT_LONG.trajectory(), SUPPORT_LONG.registry(), config)
    assert result.point_of_commitment == 15
    root = result.root_cause
    assert root is not None and root.sought and root.index == 6, root
    assert 0 < root.calls < result.step_executions
    assert "--root-cause" in " ".join(config.flags())


def test_a_lucky_step_before_the_crash_leaves_no_clearing_that_spans_it() -> None:
    """Luck at 20 makes the crash at 23 impossible, 30 % of the time: resampling from 16 fails
    70 % of the time, from 22 never, from 24 always. The band clears the steps from 24 on (each
    position and the next in it); the crash's position is out of it, so the crash is tested
    alone and named, at less than the scan's cost."""
    model = run("lucky-then-crash", 48, {20: Luck(0.3), 23: Crash(0.0, 1.0)})
    result = attribute(model.trajectory(), model.registry(), AttributionConfig())
    assert result.point_of_commitment == 23
    assert all(s.band == 34 and s.attribution is None for s in result.steps[24:])
    assert result.steps[23].significant
    scanned = attribute(
        model.trajectory(),
        model.registry(),
        dataclasses.replace(AttributionConfig(), strategy=Strategy.SCAN),
    )
    assert scanned.point_of_commitment == 23
    assert result.step_executions < scanned.step_executions


@pytest.mark.parametrize("strategy", [Strategy.ADAPTIVE, Strategy.SCAN, Strategy.FIXED])
def test_a_failure_no_step_made_is_settled_not_inconclusive(strategy: Strategy) -> None:
    """The first step breaks the run whatever it draws, and nothing later can mend it: a
    conclusive answer, with its own verdict, not an open bracket."""
    model = run("settled", 6, {0: Break(1.0)})
    config = AttributionConfig(strategy=strategy, rollouts=200)
    result = attribute(model.trajectory(), model.registry(), config)
    assert result.verdict is Verdict.SETTLED, result.explanation
    assert result.explanation.startswith("No resamplable step changes the failure rate")


def test_the_root_cause_is_sought_step_by_step_from_the_start() -> None:
    """No prefix is cleared together: a prefix that does nothing together can hide a step that
    matters alone, undone by a lucky one after it, so each step before the root cause is shown to
    have no effect alone."""
    result = attribute(
        SUPPORT_LONG.trajectory(), SUPPORT_LONG.registry(), AttributionConfig(root_cause=True)
    )
    assert result.root_cause is not None and result.root_cause.index == 6
    assert result.root_cause.cleared_to is None
    assert all(s.shown_not_to_matter for s in result.steps[:6])
    assert not any("steps 0" in n and "not estimated" in n for n in result.notes), result.notes
