"""A step that lowered the failure rate (issue 42, item 3), and the two intervals of every estimate
(item 5).

The model is a long run built in code (`long_runs`), with the exact failure rate of every plan: a
lucky record at step 4 (``Luck(0.2)``: the run drew the 1-in-5 luck) that makes the crash at step
10 less likely (``Crash(0.3, 0.8)``: 30 % when lucky, 80 % when not). Keeping the lucky step
lowers the failure rate by 0.8 · 0.5 = 0.4; the crash, kept, raises it by 0.7: it is the Point of
Commitment and the root cause. Before item 3 the root cause's scan ran the lucky step to
``--max-rollouts`` and called it undecided, the root cause open behind it.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from rich.console import Console

from otel_replay import Registry, Step, StepKind, Trajectory
from otel_replay.attribution import AttributionConfig, AttributionResult, attribute
from otel_replay.attribution._contrastive import Tails, judged
from otel_replay.attribution._results import Mode, Proportion
from otel_replay.attribution._stats import decisive_rollouts
from otel_replay.cli import _attribute_view as view
from otel_replay.cli._causes_view import root_cause_line
from otel_replay.report import REPORT_SCHEMA, build_report, html_report
from tests.attribution import long_runs
from tests.attribution.long_runs import Crash, LongRun, Luck, run

MARGIN = 0.1
LUCKY, CRASH = 4, 10
MODEL = run("lowered", 16, {LUCKY: Luck(0.2), CRASH: Crash(0.3, 0.8)})
#: the lucky step's name, with what a terminal or a page would read as markup
HOSTILE = "[bold red]luck[/] <script>alert(1)</script>"
#: resample-function calls of the same attribution before item 3 (commit dd3464f): the lucky step
#: ran to 640 rollouts per plan and stayed undecided, and the root cause stayed open
CALLS_BEFORE = 35_770
#: the default strategy with the root cause, its cost ceiling raised (`_ceiling`): at the default
#: ``--rollouts 100`` the fixed strategy costs 13,600 calls here, fewer than the root cause takes
CONFIG = AttributionConfig(root_cause=True, rollouts=200)


def _trajectory_and_registry(model: LongRun) -> tuple[Trajectory, Registry]:
    """The model's run and functions, the lucky step renamed `HOSTILE`."""
    names = [HOSTILE if i == LUCKY else s.name for i, s in enumerate(model.trajectory().steps)]
    recorded = model.trajectory()
    steps = [
        Step(StepKind.TOOL, names[i], s.inputs, s.output) for i, s in enumerate(recorded.steps)
    ]
    trajectory = Trajectory.build(model.name, steps, outcome=recorded.outcome)
    registry, calls = Registry(), _Calls()
    for i, rule in enumerate(model.rules):
        registry.add_resampler(StepKind.TOOL, calls.counting(long_runs._resample(rule)), names[i])
    registry.set_verifier(long_runs._verify)
    return trajectory, registry


class _Calls:
    """Counts the resample-function calls the attribution makes."""

    made = 0

    def counting(self, function: Any) -> Any:
        def counted(step: Step, ctx: Any) -> Any:
            _Calls.made += 1
            return function(step, ctx)

        return counted


@pytest.fixture(scope="module")
def lowered() -> tuple[AttributionResult, int]:
    """The default strategy with the root cause, and the resample-function calls it made."""
    trajectory, registry = _trajectory_and_registry(MODEL)
    before = _Calls.made
    result = attribute(trajectory, registry, CONFIG)
    return result, _Calls.made - before


def test_the_model_is_what_it_is_built_to_be() -> None:
    effects = MODEL.effects()
    assert effects[LUCKY] == pytest.approx(-0.4) and effects[CRASH] == pytest.approx(0.7)
    assert all(a == pytest.approx(0.0) for i, a in enumerate(effects) if i not in (LUCKY, CRASH))


def test_a_lucky_step_is_decided_as_lowered_at_a_fraction_of_the_calls(
    lowered: tuple[AttributionResult, int],
) -> None:
    result, calls = lowered
    step = result.steps[LUCKY]
    assert step.lowered and not step.no_effect and not step.significant
    assert step.no_effect_interval is not None and step.no_effect_interval[1] < -MARGIN
    assert step.kept is not None and step.kept.n < 640  # decided, not run to the cap
    assert result.point_of_commitment == CRASH
    root = result.root_cause
    assert root is not None and root.index == CRASH and root.lowered == (LUCKY,), root
    assert calls == result.step_executions
    assert calls <= 0.75 * CALLS_BEFORE, calls
    assert not any("--max-rollouts" in note for note in result.notes), result.notes
    assert "lowered the failure rate" in result.explanation


def test_the_same_seed_gives_the_same_report(lowered: tuple[AttributionResult, int]) -> None:
    trajectory, registry = _trajectory_and_registry(MODEL)
    again = attribute(trajectory, registry, CONFIG)
    config = CONFIG
    first = build_report(lowered[0], config)
    second = build_report(again, config)
    for report in (first, second):
        report.pop("wall_seconds", None)
        report.get("cost", {}).pop("wall_seconds", None)
    assert first == second


def test_the_report_gives_the_state_and_both_intervals(
    lowered: tuple[AttributionResult, int],
) -> None:
    result = lowered[0]
    report = build_report(result, CONFIG)
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    step = report["steps"][LUCKY]
    assert step["lowered"] is True and step["no_effect"] is False
    stated, simultaneous = step["intervals"]["stated"], step["intervals"]["simultaneous"]
    assert stated["confidence"] == 0.95 and stated["interval"] == [step["ci_low"], step["ci_high"]]
    assert simultaneous["interval"] == step["tests"]["no_effect"]["interval"]
    assert simultaneous["confidence"] > 0.99
    # the simultaneous interval holds the stated-level one
    assert simultaneous["interval"][0] <= stated["interval"][0]
    assert stated["interval"][1] <= simultaneous["interval"][1]
    assert report["root_cause"]["lowered"] == [LUCKY]
    # the root cause's scan tested the steps before it alone (no prefix is cleared together)
    assert report["steps"][0]["estimated"] and report["steps"][0]["lowered"] is False


def test_the_page_says_lowered_and_which_interval_is_which(
    lowered: tuple[AttributionResult, int],
) -> None:
    result = lowered[0]
    page = html_report(build_report(result, CONFIG))
    assert "<b>lowered</b> the rate" in page
    assert "a lucky record, decided, and no culprit." in page
    assert "95 % interval on −1 … 0 … +1" in page
    assert "The decision column gives the simultaneous interval the tests read" in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_table_and_the_root_cause_line_say_so(
    lowered: tuple[AttributionResult, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = lowered[0]
    line = root_cause_line(result)
    assert line is not None
    text, dim = line
    assert not dim and "lowered the failure rate beyond the margin (a lucky record" in text
    # the trace's string is escaped for rich, shown as it is
    assert "\\[bold red]luck\\[/]" in text
    console = Console(width=200, record=True, color_system=None)
    monkeypatch.setattr(view, "console", console)
    view._render(result, CONFIG)
    out = console.export_text()
    (row,) = [r for r in out.splitlines() if r.lstrip().startswith(f"{LUCKY} ")]
    assert "[bold red]luck[/]" in row and "lowered [" in row
    flat = " ".join(out.split())  # the caption and the lines under the table wrap
    assert "estimates with 95% intervals, for reading" in flat
    assert "test, the simultaneous bounds decisions read" in flat
    assert "'lowered' when it lies below −0.1" in flat
    assert "lowered the failure rate beyond the margin" in flat


def test_lowered_needs_the_interval_below_the_margin_at_a_look_no_effect_could_pass() -> None:
    """Two estimated plans, the kept one never failing and the other always: at 40 rollouts each
    the interval lies far below −margin, but the sequential strategy's "lowered" waits for the
    looks at which "no effect" could pass (the "no effect" family's share is split over those
    alone); the fixed strategy has one look, and decides at once."""
    tails = Tails(matters=1e-4, no_effect=1e-4, looks=6)
    floor = decisive_rollouts(MARGIN, tails.no_effect, known=True)

    def compared(n: int, tails: Tails) -> Any:
        kept, ablated = Proportion(0, n, 0.0, 1.0), Proportion(n, n, 0.0, 1.0)
        return judged(kept, ablated, mode=Mode.FAILURE, margin=MARGIN, tails=tails)

    early = compared(40, tails)
    assert floor > 40 and early.no_effect_interval[1] < -MARGIN and not early.lowered
    assert compared(floor, tails).lowered
    assert compared(40, Tails(1e-4, 1e-4)).lowered
    assert not compared(40, Tails(1e-4, 1e-4)).no_effect
