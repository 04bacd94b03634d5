"""The root cause and the probabilities of causation as ``agent-replay attribute`` shows them
(issue 25): ``--root-cause``, the line under the verdict in each of its cases, the wide table's
PN / PS column, the steps the search from the start cleared together, and the verdict ``settled``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console
from typer.testing import CliRunner

from otel_replay.attribution import AttributionConfig, Mode, attribute
from otel_replay.attribution._results import Proportion, RootCause
from otel_replay.cli import app
from otel_replay.cli._causes_view import root_cause_line
from otel_replay.store import Store
from tests.attribution.long_runs import EARLY_ROOT, Break, run
from tests.attribution.models import SWAP
from tests.cli_helpers import invoke, ok

MODULE = str(Path(__file__).resolve().parent / "early_root.py")


@pytest.fixture(scope="module")
def early(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding `EARLY_ROOT`: its root cause, step 1, comes long before its Point of
    Commitment, step 12."""
    store = tmp_path_factory.mktemp("early") / "store.db"
    with Store.open(store) as db:
        db.put(EARLY_ROOT.trajectory())
    return store


@pytest.fixture(scope="module")
def sought(early: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """``attribute early-root --root-cause``: what it printed, and its report."""
    out = tmp_path_factory.mktemp("sought") / "report.json"
    result = ok(
        invoke(
            CliRunner(), early, "attribute", "early-root", "--resamplers", MODULE,
            "--root-cause", "--out", str(out),
        )
    )  # fmt: skip
    return result.stdout, orjson.loads(out.read_bytes())


def _line(output: str, start: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith(start)]
    return line


def _row(output: str, name: str) -> str:
    (row,) = [line for line in output.splitlines() if f" {name} " in line]
    return row


def test_root_cause_names_the_earliest_step_beside_the_point_of_commitment(
    sought: tuple[str, dict[str, Any]],
) -> None:
    output, report = sought
    assert report["point_of_commitment"] == 12 and report["verdict"] == "culprit"
    root = report["root_cause"]
    assert root["step"] == 1 and root["sought"] and root["calls"] > 0
    assert root["saves"]["ci_low"] <= 0.92 <= root["saves"]["ci_high"]  # what theory says
    assert "--root-cause" in report["config"]["rerun"]
    saves = root["saves"]
    said = (
        f"root cause: step 1 (tool s01_break): resampling it saves the run "
        f"{100 * saves['value']:.0f} % [{100 * saves['ci_low']:.0f}, "
        f"{100 * saves['ci_high']:.0f}] of the time"
    )
    line = _line(output, "root cause:")
    assert line.startswith(said), line
    # the step before it was tested alone (no prefix is cleared together since issue 42)
    assert root["cleared_before"] is None and "together" not in line
    assert "no effect [" in _row(output, "s00_noise")
    assert line.endswith(f"(root-cause search: {root['calls']:,} calls)")
    # the line comes right under the verdict
    lines = output.splitlines()
    verdict = next(i for i, text in enumerate(lines) if text.startswith("culprit: "))
    assert lines.index(line) > verdict


def test_the_wide_table_shows_necessity_and_sufficiency(
    sought: tuple[str, dict[str, Any]],
) -> None:
    output, report = sought
    assert "PN / PS" in output
    for index, name in ((1, "s01_break"), (12, "s12_miss")):
        step = report["steps"][index]
        cell = f"{step['necessity']['value']:.2f}/{step['sufficiency']['value']:.2f}"
        assert cell in _row(output, name), _row(output, name)
    # the steps no test read alone have no cell
    assert _row(output, "s05_noise").rstrip().endswith("not estimated")


def test_a_narrow_terminal_leaves_the_column_out(early: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["attribute", "early-root", "--resamplers", MODULE, "--store", str(early)],
        env={"COLUMNS": "90"},
    )
    assert result.exit_code == 0, result.output
    assert "failure attribution of early-root" in result.stdout
    assert "PN / PS" not in result.stdout


def test_without_root_cause_the_adaptive_default_says_it_did_not_look(early: Path) -> None:
    output = ok(invoke(CliRunner(), early, "attribute", "early-root", "--resamplers", MODULE))
    assert _line(output.stdout, "root cause:") == "root cause: not sought (--root-cause)"


def test_the_sweep_says_where_the_root_cause_stayed_open_and_why(
    early: Path, tmp_path: Path
) -> None:
    out = tmp_path / "sweep.json"
    output = ok(
        invoke(
            CliRunner(), early, "attribute", "early-root", "--resamplers", MODULE,
            "--rollouts", "40", "--out", str(out),
        )
    ).stdout  # fmt: skip
    report = orjson.loads(out.read_bytes())
    root = report["root_cause"]
    assert root["sought"] and root["step"] is None  # step 0 is open at 40 rollouts
    low, high = root["bracket"]
    assert _line(output, "root cause:") == (
        f"root cause: open between steps {low} and {high}: {root['why']}"
    )
    # a step whose sufficiency is undefined (every rollout that resampled it failed) shows a dash
    assert report["steps"][15]["sufficiency"] is None
    necessity = report["steps"][15]["necessity"]["value"]
    assert _row(output, "s15_noise").rstrip().endswith(f"{necessity:.2f}/—")


def test_a_settled_run_has_its_verdict_and_no_root_cause(runner: CliRunner, tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    ok(invoke(runner, store, "import", str(SWAP.jsonl)))
    output = ok(
        invoke(runner, store, "attribute", "scm-swap", "--resamplers", str(SWAP.resamplers),
               "--seed", "5")
    ).stdout  # fmt: skip
    assert "settled: No resamplable step changes the failure rate" in output
    assert "root cause" not in output


def _shown(markup: str) -> str:
    console = Console(width=400, record=True, color_system=None)
    console.print(markup, highlight=False)
    return console.export_text().rstrip("\n")


def test_a_root_cause_that_is_the_point_of_commitment_is_said_to_be() -> None:
    model = run("late", 6, {4: Break(0.0)})  # nothing before step 4 matters
    result = attribute(model.trajectory(), model.registry(), AttributionConfig(root_cause=True))
    assert result.point_of_commitment == 4
    assert result.root_cause is not None and result.root_cause.index == 4
    line = root_cause_line(result)
    assert line is not None and not line[1]
    assert _shown(line[0]).startswith(
        "root cause: step 4 (tool s04_break), the point of commitment itself: every earlier "
        "resamplable step was shown to have no effect; resampling it saves the run 100 % ["
    )
    assert f"(root-cause search: {result.root_cause.calls:,} calls)" in line[0]


def test_names_from_a_trace_are_text_and_credit_turns_the_words_around() -> None:
    model = run("late", 6, {4: Break(0.0)})
    result = attribute(model.trajectory(), model.registry(), AttributionConfig(root_cause=True))
    evil = "[bold red]boom[/] [link=http://x]y[/link]"
    steps = tuple(dataclasses.replace(s, name=evil) if s.index == 2 else s for s in result.steps)
    saves = Proportion(3, 10, 0.1, 0.6)
    root = RootCause(2, True, saves=saves, calls=0)
    hostile = dataclasses.replace(result, steps=steps, root_cause=root, mode=Mode.CREDIT)
    line = root_cause_line(hostile)
    assert line is not None
    assert _shown(line[0]) == (
        f"root cause: step 2 (tool {evil}): resampling it loses the run 30 % [10, 60] of the time"
    )
    # open, with a hostile reason: the reason is text too
    why = RootCause(None, True, bracket=(0, 2), why=evil, calls=1234)
    line = root_cause_line(dataclasses.replace(result, root_cause=why))
    assert line is not None
    assert _shown(line[0]) == (
        f"root cause: open between steps 0 and 2: {evil} (root-cause search: 1,234 calls)"
    )
    # the swap question asks about another model: no root-cause line
    assert root_cause_line(dataclasses.replace(result, swap_model="large")) is None


def test_a_joint_clearing_shows_the_interval_of_the_question_that_cleared_it() -> None:
    """The search screens from the end with one batch per question, then asks full questions; a
    screen's batch from the same step is no evidence, and the table reads the full question."""
    from otel_replay.attribution._results import Comparison, StepAttribution, SuffixTest
    from otel_replay.cli._attribute_view import _decision

    record = Proportion(1, 1, 1.0, 1.0, exact=True)

    def asked(n: int, interval: tuple[float, float], *, screen: bool) -> SuffixTest:
        c = Comparison(
            record, Proportion(n, n, 0.6, 1.0), 0.0, -0.4, 0.4, interval[0], interval,
            1e-4, False, interval[1] <= 0.1, 1e-4,
        )  # fmt: skip
        return SuffixTest(30, c, screen=screen)

    search = (asked(8, (0.0, 0.72), screen=True), asked(97, (0.0, 0.0999), screen=False))
    assert [t.decision for t in search] == ["passed over", "no effect"]
    step = StepAttribution(40, "tool", "search", resamplable=True, cleared_by=30)
    assert _decision(step, True, search) == "no effect, with all from #30 [+0.00, +0.10]"
    assert _decision(step, False, search) == "no effect ≥#30"
