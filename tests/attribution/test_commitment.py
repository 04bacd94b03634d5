"""The Point of Commitment's rule, written once (`otel_replay.attribution._commitment`), and the
verdict every strategy reaches being that rule's (issue 41, item 4); `Verdict` has one meaning."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import otel_replay
from otel_replay.attribution import AttributionConfig, Strategy, Verdict, attribute
from otel_replay.attribution._commitment import Commitment, commitment
from otel_replay.attribution._results import StepAttribution
from tests.attribution.long_runs import Break, Miss, run

#: a run whose sweep at 60 rollouts leaves a bracket open, and whose scan names step 15
SUPPORT_LONG = run("support-long", 24, {6: Break(0.1), 15: Miss(0.6)})


def _step(
    index: int,
    *,
    matters: bool = False,
    none: bool = False,
    cleared: int | None = None,
    estimated: bool = True,
) -> StepAttribution:
    if not estimated:
        return StepAttribution(index, "tool", f"t{index}", True, cleared_by=cleared)
    return StepAttribution(
        index, "tool", f"t{index}", True, attribution=0.5 if matters else 0.0,
        significant=matters, no_effect=none, cleared_by=cleared,
    )  # fmt: skip


def test_the_latest_step_shown_to_matter_is_named_when_every_later_one_is_shown_not_to() -> None:
    steps = [_step(0, matters=True), _step(1, matters=True), _step(2, none=True)]
    assert commitment(steps, [0, 1, 2]) == Commitment(1, None, latest_matters=1)


def test_a_later_open_step_leaves_a_bracket_from_the_step_shown_to_matter() -> None:
    steps = [_step(0, matters=True), _step(1), _step(2, none=True), _step(3)]
    found = commitment(steps, [0, 1, 2, 3])
    assert found == Commitment(None, (0, 3), latest_matters=0, open_steps=(1, 3))
    assert not found.located


def test_with_nothing_shown_to_matter_the_bracket_spans_the_open_steps() -> None:
    steps = [_step(0, none=True), _step(1), _step(2, none=True), _step(3), _step(4, none=True)]
    assert commitment(steps, range(5)) == Commitment(None, (1, 3), open_steps=(1, 3))


def test_every_step_shown_to_have_no_effect_names_none_and_leaves_no_bracket() -> None:
    steps = [_step(0, none=True), _step(1, none=True)]
    assert commitment(steps, [0, 1]) == Commitment(None)
    assert commitment([], []) == Commitment(None)


def test_a_step_cleared_jointly_counts_as_shown_to_have_no_effect() -> None:
    steps = [_step(0, matters=True), _step(1, estimated=False, cleared=1)]
    steps.append(_step(2, estimated=False, cleared=1))
    assert commitment(steps, [0, 1, 2]).step == 0


def test_a_step_never_estimated_is_open() -> None:
    steps = [_step(0, estimated=False), _step(1, matters=True), _step(2, estimated=False)]
    assert commitment(steps, [0, 1, 2]) == Commitment(None, (1, 2), 1, (2,))


def test_a_step_shown_to_matter_within_the_margin_is_still_shown_to_matter() -> None:
    """Significant and inside ±margin at once (a small, sure effect): it matters, and is named."""
    steps = [_step(0, matters=True, none=True), _step(1, none=True)]
    assert commitment(steps, [0, 1]).step == 0


def test_only_resamplable_steps_count() -> None:
    steps = [_step(0, matters=True), _step(1), _step(2, none=True)]
    assert commitment(steps, [0, 2]).step == 0  # step 1 is observed only


@pytest.mark.parametrize(
    ("strategy", "config"),
    [
        (Strategy.FIXED, {"rollouts": 60}),
        (Strategy.SCAN, {}),
        (Strategy.ADAPTIVE, {}),
        (Strategy.ADAPTIVE, {"max_rollouts": 20}),
    ],
)
def test_every_strategy_names_what_the_rule_names(
    strategy: Strategy, config: dict[str, int]
) -> None:
    result = attribute(
        SUPPORT_LONG.trajectory(),
        SUPPORT_LONG.registry(),
        AttributionConfig(strategy=strategy, seed=3, **config),  # type: ignore[arg-type]
    )
    resamplable = [s.index for s in result.steps if s.resamplable]
    found = commitment(result.steps, resamplable)
    assert (result.point_of_commitment, result.bracket) == (found.step, found.bracket)
    assert result.verdict is (Verdict.CULPRIT if found.located else Verdict.INCONCLUSIVE)


def test_verdict_is_one_name_in_the_package() -> None:
    """`otel_replay.Verdict` is the attribution's verdict; no module binds the name to anything
    else (the adaptive strategy once named a tuple of its own so)."""
    root = Path(otel_replay.__file__).parent
    bound = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == "Verdict":
                bound.append(f"{path.relative_to(root)}:{node.lineno}")
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == "Verdict" for t in targets):
                bound.append(f"{path.relative_to(root)}:{node.lineno}")
    assert [b.split(":")[0] for b in bound] == ["attribution/_results.py"], bound
