"""``agent-replay sweep`` on the bundled samples: the table, the JSON report and the page, the dry
run, many runs added up with ``--where``, and bad input as one line and exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from otel_replay.cli import app
from otel_replay.report._sweep import SWEEP_SCHEMA
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

CODE = ("--resamplers", str(ROOT / "examples" / "incident" / "tools.py"), "--success-if", "v841")
SMALL = ("--faults", "empty,error", "--steps", "list_deploys", "--max-rollouts", "8")


@pytest.fixture
def samples(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    return store_path


def test_the_failing_sample_run(runner: CliRunner, samples: Path) -> None:
    out = " ".join(ok(invoke(runner, samples, "sweep", "ef2843ff", *CODE, *SMALL)).stdout.split())
    assert "fragility map of ef2843ff74cff6a6b6dc0914faa30751 (the record failed)" in out
    assert "3 tool list_deploys" in out
    assert "faults that would not have mattered (it still fails)" in out


def test_the_report_and_the_page(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    report, page = tmp_path / "sweep.json", tmp_path / "sweep.html"
    args = ("sweep", "incident-pass", *CODE, *SMALL, "--out", str(report), "--out", str(page))
    ok(invoke(runner, samples, *args))
    written = json.loads(report.read_text())
    Draft202012Validator(SWEEP_SCHEMA).validate(written)
    assert written["passed"] and written["flips"] == [{"step": 3, "fault": "empty"}]
    assert written["rerun"].startswith("agent-replay sweep incident-pass --faults empty,error")
    assert '<table class="heat">' in page.read_text()
    printed = ok(invoke(runner, samples, "sweep", "incident-pass", *CODE, *SMALL, "--json"))
    assert json.loads(printed.stdout) == written  # same seed, same report


def test_report_schema_prints_the_sweep_reports(runner: CliRunner) -> None:
    out = ok(runner.invoke(app, ["report", "schema", "--sweep"])).stdout
    assert json.loads(out) == SWEEP_SCHEMA


def test_a_dry_run(runner: CliRunner, samples: Path) -> None:
    out = ok(invoke(runner, samples, "sweep", "ef2843ff", *CODE, *SMALL, "--dry-run", "--json"))
    cost = json.loads(out.stdout)
    assert cost["cells"] == 2 and cost["worst_rollouts"] == 16 and cost["least_rollouts"] == 16
    text = ok(invoke(runner, samples, "sweep", "ef2843ff", *CODE, *SMALL, "--dry-run")).stdout
    assert text.startswith("dry run of ef2843ff74cff6a6b6dc0914faa30751 (chat:")


def test_many_runs_added_up(runner: CliRunner, samples: Path) -> None:
    args = ("sweep", "--where", "steps > 3", *CODE, "--faults", "empty", "--steps", "list_deploys")
    out = ok(invoke(runner, samples, *args, "--max-rollouts", "8")).stdout
    assert "swept 8 runs (5 passing, 3 failing)" in out
    assert "list_deploys returning empty breaks 60% of passing runs (3 of 5" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("ef2843ff", "--faults", "flood"), "--faults flood: unknown fault; built-in faults"),
        (("ef2843ff", "--steps", "nothing"), "--steps nothing names no step of run ef2843ff"),
        (("nosuch",), "no trajectory id starts with 'nosuch'"),
        (
            ("ef2843ff", "--max-rollouts", "0"),
            "--max-rollouts 0: a cell needs at least one rollout",
        ),
        ((), "name one run (ID), or choose runs with --where"),
    ],
    ids=["unknown-fault", "steps-name-nothing", "no-such-run", "no-rollouts", "no-run"],
)
def test_bad_input_is_one_line(
    runner: CliRunner, samples: Path, args: tuple[str, ...], words: str
) -> None:
    line = one_line_error(invoke(runner, samples, "sweep", *args, *CODE))
    assert words in line, line
